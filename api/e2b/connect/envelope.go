package connect

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Envelope flags of the streaming protocol.
const (
	flagCompressed byte = 0x01 // the message is compressed with Connect-Content-Encoding
	flagEndStream  byte = 0x02 // the last message of a response: {"error"?, "metadata"?}
)

// maxMessageBytes bounds one enveloped request message; a request names a
// path or carries a chunk of stdin, so 16 MiB is far above what the SDKs send.
const maxMessageBytes = 16 << 20

// writeEnvelope writes one envelope: a flags byte, the payload's length as
// four big-endian bytes, then the payload.
func writeEnvelope(w io.Writer, flags byte, payload []byte) error {
	var head [5]byte
	head[0] = flags
	binary.BigEndian.PutUint32(head[1:], uint32(len(payload)))
	if _, err := w.Write(head[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// readEnvelope reads one envelope. It returns io.EOF when r ends before the
// first byte, and an invalid_argument *Error for a truncated envelope or one
// over limit bytes.
func readEnvelope(r io.Reader, limit int) (flags byte, payload []byte, err error) {
	var head [5]byte
	n, err := io.ReadFull(r, head[:])
	if n == 0 && err == io.EOF {
		return 0, nil, io.EOF
	}
	if err != nil {
		return 0, nil, NewError(InvalidArgument, "truncated envelope: fewer than 5 header bytes")
	}
	size := binary.BigEndian.Uint32(head[1:])
	if uint64(size) > uint64(limit) {
		return 0, nil, NewError(ResourceExhausted, fmt.Sprintf("message of %d bytes is over the limit of %d", size, limit))
	}
	payload = make([]byte, size)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, NewError(InvalidArgument, fmt.Sprintf("truncated envelope: the header announces %d bytes", size))
	}
	return head[0], payload, nil
}
