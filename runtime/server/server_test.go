package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

func TestNewValidates(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		cfg   server.Config
		field string
	}{
		{"no root", server.Config{Token: "t"}, "root"},
		{"no token", server.Config{Root: dir}, "token"},
		{"negative max", server.Config{Root: dir, Token: "t", MaxFileBytes: -1}, "max_file_bytes"},
		{"bad env", server.Config{Root: dir, Token: "t", Env: map[string]string{"": "x"}}, "env"},
		{"negative write timeout", server.Config{Root: dir, Token: "t", WriteTimeout: -1}, "write_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := server.New(tt.cfg)
			if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tt.field {
				t.Fatalf("New = %v (field %q), want invalid %s", err, errs.FieldOf(err), tt.field)
			}
		})
	}
	// A missing root is created.
	s, err := server.New(server.Config{Root: filepath.Join(dir, "new/ws"), Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fi, err := os.Stat(filepath.Join(dir, "new/ws")); err != nil || !fi.IsDir() {
		t.Fatalf("root not created: %v", err)
	}
}

func TestAuth(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	tests := []struct {
		name   string
		header string
		want   int
	}{
		{"missing", "", http.StatusUnauthorized},
		{"wrong", "Bearer nope", http.StatusUnauthorized},
		{"prefix of the token", "Bearer " + runtimetest.Token[:5], http.StatusUnauthorized},
		{"token with a suffix", "Bearer " + runtimetest.Token + "x", http.StatusUnauthorized},
		{"not bearer", "Basic " + runtimetest.Token, http.StatusUnauthorized},
		{"right", "Bearer " + runtimetest.Token, http.StatusSwitchingProtocols},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.header != "" {
				h.Set("Authorization", tt.header)
			}
			ws, resp, err := websocket.Dial(ctx, e.URL+"/any/path", &websocket.DialOptions{HTTPHeader: h, Subprotocols: []string{protocol.Version}})
			if resp == nil {
				t.Fatalf("Dial: no response: %v", err)
			}
			if resp.StatusCode != tt.want {
				t.Fatalf("status = %d, want %d (%v)", resp.StatusCode, tt.want, err)
			}
			if ws != nil {
				if ws.Subprotocol() != protocol.Version {
					t.Fatalf("subprotocol = %q", ws.Subprotocol())
				}
				_ = ws.CloseNow()
			}
		})
	}
	// Without the subprotocol the upgrade is refused with a reason.
	ws, resp, err := websocket.Dial(ctx, e.URL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + runtimetest.Token}}})
	if ws != nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("dial without subprotocol: %v %v", resp, err)
	}
	// A plain request with the token is not an upgrade and gets nothing.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.HTTP.URL+"/", nil)
	req.Header.Set("Authorization", "Bearer "+runtimetest.Token)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode == http.StatusOK {
		t.Fatalf("plain GET = %v %v", r, err)
	} else {
		r.Body.Close()
	}
}

func TestHealthz(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	for _, p := range []string{"/healthz", "/w/ws-1/healthz"} {
		r, err := http.Get(e.HTTP.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusOK || string(b) != "ok" {
			t.Fatalf("GET %s = %d %q", p, r.StatusCode, b)
		}
	}
	// Anything else without a token is refused.
	r, err := http.Get(e.HTTP.URL + "/healthzz")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /healthzz = %d, want 401", r.StatusCode)
	}
}

// rawConn speaks the protocol by hand, to test what the client never sends.
func rawConn(t *testing.T, e *runtimetest.Env) (*websocket.Conn, func(any) map[string]any) {
	ctx := runtimetest.Ctx(t)
	ws, _, err := websocket.Dial(ctx, e.URL, &websocket.DialOptions{
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + runtimetest.Token}},
		Subprotocols: []string{protocol.Version},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	return ws, func(req any) map[string]any {
		t.Helper()
		var b []byte
		if s, ok := req.(string); ok {
			b = []byte(s)
		} else {
			b, _ = json.Marshal(req)
		}
		if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
}

func TestProtocolErrors(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	_, call := rawConn(t, e)
	tests := []struct {
		name string
		req  string
		id   float64
		code string
	}{
		{"unknown op", `{"id":5,"op":"teleport"}`, 5, "invalid"},
		{"malformed frame", `{"id":6,"op":`, 0, "invalid"},
		{"unknown fields are ignored", `{"id":7,"op":"ping","future":{"x":1}}`, 7, ""},
		{"stdin for no exec", `{"id":8,"op":"exec.stdin","target":99,"data":"eA=="}`, 8, "not_found"},
		{"cancel for no exec", `{"id":9,"op":"exec.cancel","target":99}`, 9, "not_found"},
		{"unknown signal", `{"id":10,"op":"exec.cancel","target":99,"signal":"SIGNOPE"}`, 10, "invalid"},
		{"exec without args", `{"id":11,"op":"exec","exec":{"args":[]}}`, 11, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := call(tt.req)
			if m["type"] != protocol.TypeResult || m["id"] != tt.id {
				t.Fatalf("frame = %v", m)
			}
			code := ""
			if e, ok := m["error"].(map[string]any); ok {
				code, _ = e["code"].(string)
				if msg, _ := e["message"].(string); msg == "" {
					t.Fatalf("error without message: %v", m)
				}
			}
			if code != tt.code {
				t.Fatalf("code = %q, want %q (%v)", code, tt.code, m)
			}
		})
	}
	m := call(`{"id":12,"op":"ping"}`)
	if res, _ := m["result"].(map[string]any); res["version"] != protocol.Version {
		t.Fatalf("ping = %v", m)
	}
}

// TestRawExecFrames checks the exact frame sequence of a streamed exec.
func TestRawExecFrames(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ws, call := rawConn(t, e)
	ctx := runtimetest.Ctx(t)
	m := call(`{"id":1,"op":"exec","exec":{"args":["sh","-c","printf a; printf b >&2; exit 3"],"stream":true}}`)
	if res, _ := m["result"].(map[string]any); m["id"] != 1.0 || res["pid"].(float64) <= 0 {
		t.Fatalf("first frame = %v, want the start result", m)
	}
	got := map[string]string{}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var f protocol.Frame
		if err := json.Unmarshal(data, &f); err != nil || f.ID != 1 {
			t.Fatalf("frame %s: %v", data, err)
		}
		if f.Type == protocol.TypeExecOutput {
			got[f.Stream] += string(f.Data)
			continue
		}
		if f.Type != protocol.TypeExecExit || f.ExitCode != 3 || f.DurationMS <= 0 || f.TimedOut || f.Canceled || len(f.Stdout) > 0 {
			t.Fatalf("exit frame = %s", data)
		}
		break
	}
	if got["stdout"] != "a" || got["stderr"] != "b" {
		t.Fatalf("output = %v", got)
	}
}

func TestPathEscapes(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	e.WriteHost(t, "outside/secret", "secret")
	outside := filepath.Join(e.Dir, "outside")
	// Symlinks a command in the workspace could make: to the host's root,
	// to a directory beside the workspace, to a file outside, and relative.
	for _, script := range []string{
		"ln -s / escape",
		"ln -s " + outside + " out",
		"ln -s " + filepath.Join(outside, "secret") + " secretlink",
		"ln -s ../outside rel",
		"mkdir -p sub && ln -s ../../outside sub/up",
	} {
		res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", script}}, nil, nil)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: %v %s", script, err, res.Stderr)
		}
	}
	paths := []string{
		"..", "../x", "/etc/passwd", "a/../../x", "../ws/../outside/secret", "./../x",
		"escape/etc/passwd", "escape/etc", "escape", "out/secret", "out", "secretlink",
		"rel/secret", "rel", "sub/up/secret", "sub/up",
	}
	// stat describes a symlink itself without following it; that stays
	// inside, so the bare link names are allowed for stat (and remove).
	links := map[string]bool{"escape": true, "out": true, "secretlink": true, "rel": true, "sub/up": true}
	refused := func(err error) bool { return errs.Is(err, errs.Invalid) || errs.Is(err, errs.NotFound) }
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			if b, err := c.ReadFile(ctx, p); !refused(err) {
				t.Errorf("read %s = %q, %v; want refused", p, b, err)
			}
			if err := c.WriteFile(ctx, p, []byte("pwned"), 0); !refused(err) {
				t.Errorf("write %s = %v; want refused", p, err)
			}
			if err := c.WriteFile(ctx, p+"/new", []byte("pwned"), 0); !refused(err) {
				t.Errorf("write %s/new = %v; want refused", p, err)
			}
			if ents, err := c.List(ctx, p); !refused(err) {
				t.Errorf("list %s = %d entries, %v; want refused", p, len(ents), err)
			}
			if err := c.Mkdir(ctx, p+"/d", true); !refused(err) {
				t.Errorf("mkdir %s/d = %v; want refused", p, err)
			}
			if err := c.Rename(ctx, "sub", p+"/moved"); !refused(err) {
				t.Errorf("rename into %s = %v; want refused", p, err)
			}
			if !links[p] {
				if fi, err := c.Stat(ctx, p); !refused(err) {
					t.Errorf("stat %s = %+v, %v; want refused", p, fi, err)
				}
				if err := c.Remove(ctx, p, true); !refused(err) {
					t.Errorf("remove %s = %v; want refused", p, err)
				}
				if err := c.Rename(ctx, p, "stolen"); !refused(err) {
					t.Errorf("rename from %s = %v; want refused", p, err)
				}
			}
			if _, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"true"}, Cwd: p}, nil, nil); !refused(err) {
				t.Errorf("exec in %s = %v; want refused", p, err)
			}
		})
	}
	for _, p := range []string{"..", "/etc/passwd", "a/../../x"} {
		if _, err := c.ReadFile(ctx, p); !errs.Is(err, errs.Invalid) {
			t.Errorf("read %s = %v, want invalid", p, err)
		}
	}
	fi, err := c.Stat(ctx, "escape")
	if err != nil || !fi.IsSymlink || fi.IsDir {
		t.Fatalf("stat escape = %+v, %v; want the link itself", fi, err)
	}
	// Removing a link removes the link, never its target.
	if err := c.Remove(ctx, "out", true); err != nil {
		t.Fatalf("remove link: %v", err)
	}

	// Nothing outside changed: the directory beside the workspace still
	// holds exactly the secret, and no file appeared next to the root.
	ents, err := os.ReadDir(outside)
	if err != nil || len(ents) != 1 || ents[0].Name() != "secret" {
		t.Fatalf("outside dir = %v, %v", ents, err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "secret" {
		t.Fatalf("secret = %q", b)
	}
	top, _ := os.ReadDir(e.Dir)
	for _, en := range top {
		if en.Name() != "ws" && en.Name() != "outside" {
			t.Fatalf("unexpected %s beside the workspace", en.Name())
		}
	}
	for _, p := range []string{"/x", "/new", "/d", "/moved", "/stolen"} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists on the host", p)
		}
	}
}

func TestServerCloseRefusesNewConnections(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	if err := e.Server.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, e.URL, &websocket.DialOptions{
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + runtimetest.Token}},
		Subprotocols: []string{protocol.Version},
	})
	if err == nil {
		_, _, err = ws.Read(ctx)
		if err == nil || !strings.Contains(err.Error(), "going away") && websocket.CloseStatus(err) != websocket.StatusGoingAway {
			t.Fatalf("read after close = %v, want going away", err)
		}
	}
}

// TestBinaryFrames writes a file with a binary frame, reads it back as one,
// and answers a malformed binary frame with an invalid error.
func TestBinaryFrames(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ws, _ := rawConn(t, e)
	ctx := runtimetest.Ctx(t)
	send := func(header string, payload []byte) {
		t.Helper()
		w, err := ws.Writer(ctx, websocket.MessageBinary)
		if err != nil {
			t.Fatal(err)
		}
		if err := protocol.WriteBinary(w, []byte(header), payload); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() (websocket.MessageType, []byte) {
		t.Helper()
		typ, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return typ, data
	}
	content := []byte{0, 1, 2, 0xff, '\n'}
	send(`{"id":1,"op":"write","path":"bin.dat"}`, content)
	// The write's result describes the written file.
	if typ, data := recv(); typ != websocket.MessageText || strings.Contains(string(data), `"error"`) || !strings.Contains(string(data), `"size":5`) {
		t.Fatalf("write reply = %v %s; want the file's description with size 5", typ, data)
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"id":2,"op":"read","path":"bin.dat"}`)); err != nil {
		t.Fatal(err)
	}
	typ, data := recv()
	if typ != websocket.MessageBinary {
		t.Fatalf("read reply is %v, want binary", typ)
	}
	h, payload, err := protocol.SplitBinary(data)
	if err != nil || !bytes.Equal(payload, content) || !strings.Contains(string(h), `"id":2`) {
		t.Fatalf("read reply = %s + %v, %v; want id 2 with the file's bytes", h, payload, err)
	}

	if err := ws.Write(ctx, websocket.MessageBinary, []byte{0, 0, 1, 0, '{'}); err != nil {
		t.Fatal(err)
	}
	if _, data := recv(); !strings.Contains(string(data), `"invalid"`) {
		t.Fatalf("malformed binary frame answered %s, want an invalid error", data)
	}
}
