package protocol

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Binary frames carry file bytes without JSON and base64: a write request,
// an exec.stdin chunk and a read result whose data is large would otherwise
// spend most of their time encoding. A binary WebSocket message is
//
//	uint32 big-endian length of the header | header (JSON) | payload
//
// where the header is the frame as it would be sent in a text message
// without its data, and the payload is that data (a request's "data", a read
// result's "data"). Either side may send any frame as text; a frame with
// data is sent binary.

// MaxHeader bounds a binary frame's JSON header.
const MaxHeader = 1 << 20

// WriteBinary writes a binary frame to w: header is marshalled JSON.
func WriteBinary(w io.Writer, header, payload []byte) error {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(header)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(header); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// SplitBinary splits a binary frame into its JSON header and payload. The
// payload aliases msg.
func SplitBinary(msg []byte) (header, payload []byte, err error) {
	if len(msg) < 4 {
		return nil, nil, fmt.Errorf("binary frame of %d bytes: shorter than its length prefix", len(msg))
	}
	n := binary.BigEndian.Uint32(msg)
	if n > MaxHeader || int(n) > len(msg)-4 {
		return nil, nil, fmt.Errorf("binary frame: header length %d does not fit in %d bytes", n, len(msg)-4)
	}
	return msg[4 : 4+n], msg[4+n:], nil
}

// PayloadSetter is a result that takes a binary frame's payload as its data.
type PayloadSetter interface {
	SetPayload([]byte)
}

// SetPayload implements PayloadSetter.
func (r *ReadResult) SetPayload(b []byte) { r.Data = b }

// SetPayload implements PayloadSetter.
func (r *ReadRangeResult) SetPayload(b []byte) { r.Data = b }
