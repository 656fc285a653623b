package protocol

import (
	"bytes"
	"testing"
)

func TestBinaryRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	payload := bytes.Repeat([]byte{0, 1, 2, 255}, 1000)
	if err := WriteBinary(&buf, []byte(`{"op":"write","id":7}`), payload); err != nil {
		t.Fatal(err)
	}
	h, p, err := SplitBinary(buf.Bytes())
	if err != nil || string(h) != `{"op":"write","id":7}` || !bytes.Equal(p, payload) {
		t.Fatalf("SplitBinary = %q, %d bytes, %v", h, len(p), err)
	}
}

func TestSplitBinaryRefusesMalformed(t *testing.T) {
	for _, msg := range [][]byte{nil, {0, 0}, {0, 0, 0, 9, '{', '}'}, {0xff, 0xff, 0xff, 0xff, 1}} {
		if _, _, err := SplitBinary(msg); err == nil {
			t.Errorf("SplitBinary(%v) = nil error, want one", msg)
		}
	}
}
