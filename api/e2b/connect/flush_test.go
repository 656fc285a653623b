package connect

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// flushCounter is a ResponseWriter that counts what is flushed, and what
// had been written at each flush.
type flushCounter struct {
	*httptest.ResponseRecorder
	at []int // body length at each flush
}

func (f *flushCounter) Flush() { f.at = append(f.at, f.Body.Len()) }

// TestStreamWrites: a server stream's headers leave with its first message,
// each Send is flushed at once, and the message sent with SendLast leaves
// with the end-stream message, unflushed until the handler returns (net/http
// then writes them and the response's end together).
func TestStreamWrites(t *testing.T) {
	mux := NewMux(Options{})
	mux.Handle("test.Svc/Run", ServerStream(func(_ context.Context, _ http.Header, _ *msg, s *Sender[msg]) error {
		if err := s.Send(&msg{Text: "start"}); err != nil {
			return err
		}
		if err := s.Send(&msg{Text: "data"}); err != nil {
			return err
		}
		return s.SendLast(&msg{Text: "end"})
	}, nil))
	body := string(envelope(0, `{}`))
	req := httptest.NewRequest("POST", "/test.Svc/Run", strings.NewReader(body))
	req.Header.Set("Content-Type", contentTypeStream)
	w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	mux.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	first := len(envelope(0, `{"text":"start"}`))
	second := first + len(envelope(0, `{"text":"data"}`))
	if len(w.at) != 2 || w.at[0] != first || w.at[1] != second {
		t.Fatalf("flushed at body lengths %v, want [%d %d]: the headers with the start, one flush per Send, none for the last and the end", w.at, first, second)
	}
	if out := w.Body.String(); !strings.Contains(out, `{"text":"end"}`) || !strings.HasSuffix(out, "{}") {
		t.Fatalf("body %q: want the last message, then the end-stream message", out)
	}
}
