package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/wire"
)

// fakeShellAPI plays a workspace's terminal: it starts process 42, and its
// attach stream echoes every input back as pty output until an input holds
// ^D, then exits 3.
type fakeShellAPI struct {
	*httptest.Server
	mu     sync.Mutex
	starts []wire.ProcessSpec
	replay bool
}

func newFakeShellAPI(t *testing.T) *fakeShellAPI {
	f := &fakeShellAPI{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/workspaces/{id}/processes", func(w http.ResponseWriter, r *http.Request) {
		var spec wire.ProcessSpec
		_ = json.NewDecoder(r.Body).Decode(&spec)
		f.mu.Lock()
		f.starts = append(f.starts, spec)
		f.mu.Unlock()
		jsonOut(w, http.StatusCreated, wire.Process{PID: 42, Command: spec.Command, Running: true, PTY: spec.PTY})
	})
	mux.HandleFunc("GET /v1/workspaces/{id}/processes/42/attach", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.replay = r.URL.Query().Get("replay") == "true"
		f.mu.Unlock()
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		send := func(m wire.AttachMessage) {
			b, _ := json.Marshal(m)
			_ = c.Write(ctx, websocket.MessageText, b)
		}
		send(wire.AttachMessage{Type: wire.AttachOutput, Stream: "pty", Data: []byte("$ ")})
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			var m wire.AttachMessage
			_ = json.Unmarshal(data, &m)
			if m.Type != wire.AttachInput {
				continue
			}
			if i := bytes.IndexByte(m.Data, 4); i >= 0 {
				send(wire.AttachMessage{Type: wire.AttachOutput, Stream: "pty", Data: m.Data[:i]})
				send(wire.AttachMessage{Type: wire.AttachExit, Exit: &wire.ExecExit{ExitCode: 3}})
				_ = c.Close(websocket.StatusNormalClosure, "")
				return
			}
			send(wire.AttachMessage{Type: wire.AttachOutput, Stream: "pty", Data: m.Data})
		}
	})
	mux.HandleFunc("POST /v1/workspaces/{id}/exec", func(w http.ResponseWriter, r *http.Request) {
		t.Error("exec --background must not run exec")
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeShellAPI) run(stdin string, args ...string) result {
	var out, errb bytes.Buffer
	code := Run(context.Background(), append([]string{"--url", f.URL}, args...), strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// Piped into `workspace shell`, input reaches the terminal, its output
// comes back (the prompt printed before the attach too, by replay), the end
// of the input is a ^D, and primectl exits with the shell's code.
func TestShellPiped(t *testing.T) {
	f := newFakeShellAPI(t)
	r := f.run("echo hi\n", "workspace", "shell", "ws-1", "--cwd", "src")
	if r.code != 3 || !strings.HasPrefix(r.stdout, "$ ") || !strings.Contains(r.stdout, "echo hi\n") {
		t.Fatalf("shell = %d %q %q", r.code, r.stdout, r.stderr)
	}
	spec := f.starts[0]
	if spec.PTY == nil || spec.PTY.Cols != 80 || spec.PTY.Rows != 24 || spec.Cwd != "src" || spec.Command[0] != "sh" || !f.replay {
		t.Fatalf("start = %+v, replay %v", spec, f.replay)
	}
	if r := f.run("", "workspace", "shell", "ws-1", "extra"); r.code != ExitUsage {
		t.Fatalf("shell with two ids = %d", r.code)
	}
}

func TestExecBackground(t *testing.T) {
	f := newFakeShellAPI(t)
	r := f.run("", "ws", "exec", "ws-1", "--background", "--tag", "srv", "--", "python3", "-m", "http.server")
	if r.code != 0 || r.stdout != "42\n" {
		t.Fatalf("exec --background = %d %q %q", r.code, r.stdout, r.stderr)
	}
	if s := f.starts[0]; s.Tag != "srv" || s.Timeout != "" || s.PTY != nil || len(s.Command) != 3 {
		t.Fatalf("start = %+v", s)
	}
}
