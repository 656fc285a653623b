package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/wire"
)

// newFakePortForwardAPI plays the port-forward WebSocket of port 8000 as
// an echo server that half-closes after the caller's eof; every other
// port answers 502 as the API does when nothing listens.
func newFakePortForwardAPI(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/workspaces/{id}/port-forward/{port}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("port") != "8000" || r.PathValue("id") != "ws-1" {
			apiErr(w, http.StatusBadGateway, "bad_gateway", "workspace ws-1: port "+r.PathValue("port")+": nothing is listening", "")
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageText && string(b) == wire.PortForwardEOF {
				_ = c.Write(ctx, websocket.MessageText, b)
				_ = c.Close(websocket.StatusNormalClosure, "")
				return
			}
			if c.Write(ctx, websocket.MessageBinary, b) != nil {
				return
			}
		}
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// TestPortForward: primectl workspace port-forward listens locally and
// carries 100 connections at once, each its own bytes with half-close
// passed on; a connection the API refuses is closed with the reason on
// stderr while the others go on; interrupting it stops it cleanly.
func TestPortForward(t *testing.T) {
	api := newFakePortForwardAPI(t)
	for _, tc := range []struct {
		remote string
		works  bool
	}{{"0:8000", true}, {"0:9", false}} {
		t.Run(tc.remote, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out, outW := io.Pipe()
			var errb syncBuf
			code := make(chan int, 1)
			go func() {
				code <- Run(ctx, []string{"--url", api.URL, "workspace", "port-forward", "ws-1", tc.remote}, strings.NewReader(""), outW, &errb)
			}()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = io.Copy(io.Discard, out) }()
			// "Forwarding from 127.0.0.1:NNNN -> 8000"
			f := strings.Fields(line)
			if len(f) != 5 || f[0] != "Forwarding" {
				t.Fatalf("first line %q", line)
			}
			addr := f[2]
			n := 100
			if !tc.works {
				n = 1
			}
			var wg sync.WaitGroup
			errc := make(chan error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					nc, err := net.Dial("tcp", addr)
					if err != nil {
						errc <- err
						return
					}
					defer nc.Close()
					data := bytes.Repeat([]byte{byte(i)}, 40<<10+i)
					go func() {
						_, _ = nc.Write(data)
						_ = nc.(*net.TCPConn).CloseWrite()
					}()
					got, err := io.ReadAll(nc)
					switch {
					case tc.works && (err != nil || !bytes.Equal(got, data)):
						errc <- fmt.Errorf("connection %d: read back %d bytes (%v), want %d", i, len(got), err, len(data))
					case !tc.works && len(got) != 0:
						errc <- fmt.Errorf("a refused connection read %d bytes", len(got))
					}
				}()
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Error(err)
			}
			cancel()
			if c := <-code; c != 0 {
				t.Errorf("port-forward exited %d after the interrupt; stderr %s", c, errb.String())
			}
			if !tc.works && !strings.Contains(errb.String(), "nothing is listening") {
				t.Errorf("stderr %q does not say why the connection was refused", errb.String())
			}
		})
	}
	if r := (&fakeShellAPI{Server: api}).run("", "ws", "port-forward", "ws-1", "x:8000"); r.code != ExitUsage {
		t.Errorf("port-forward x:8000 = %d, want a usage error", r.code)
	}
}

// syncBuf is a bytes.Buffer safe for the forwarder's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
