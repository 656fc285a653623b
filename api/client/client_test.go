package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// recorded is one request the fake server saw.
type recorded struct {
	Method, Path, RawPath, Query string
	Header                       http.Header
	Body                         []byte
}

// fake is an httptest server that records requests and answers from mux.
type fake struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newFake(t *testing.T, mux *http.ServeMux) *fake {
	t.Helper()
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Clone(), body})
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) last() recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs[len(f.reqs)-1]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, code, msg, field string) {
	e := map[string]any{"code": code, "message": msg}
	if field != "" {
		e["details"] = map[string]any{"field": field}
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func TestErrorDecoding(t *testing.T) {
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		status    int
		kind      errs.Kind
		code      string
		field     string
		msgSubstr string
	}{
		{
			name: "invalid with field",
			handler: func(w http.ResponseWriter, r *http.Request) {
				writeErr(w, 400, "invalid", "template code-sandbox: provider_id: provider docker-local not found", "spec.provider_id")
			},
			status: 400, kind: errs.Invalid, code: "invalid", field: "spec.provider_id", msgSubstr: "provider docker-local not found",
		},
		{
			name: "not found",
			handler: func(w http.ResponseWriter, r *http.Request) {
				writeErr(w, 404, "not_found", "provider x: not found", "")
			},
			status: 404, kind: errs.NotFound, code: "not_found", msgSubstr: "provider x: not found",
		},
		{
			name: "failed precondition",
			handler: func(w http.ResponseWriter, r *http.Request) {
				writeErr(w, 409, "failed_precondition", "workspace ws-1 is pending", "")
			},
			status: 409, kind: errs.Precondition, code: "failed_precondition", msgSubstr: "pending",
		},
		{
			name: "no envelope from a proxy",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(502)
				_, _ = io.WriteString(w, "<html>bad gateway</html>")
			},
			status: 502, kind: errs.Unavailable, code: "unavailable", msgSubstr: "http 502 Bad Gateway: <html>bad gateway</html>",
		},
		{
			name:    "unknown code",
			handler: func(w http.ResponseWriter, r *http.Request) { writeErr(w, 500, "exploded", "boom", "") },
			status:  500, kind: errs.Other, code: "exploded", msgSubstr: "boom",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /v1/providers/x", tt.handler)
			f := newFake(t, mux)
			_, err := New(f.URL).GetProvider(context.Background(), "x")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if e.Status != tt.status || e.Code != tt.code || e.Field != tt.field || e.Kind() != tt.kind {
				t.Errorf("got status %d code %q field %q kind %v, want %d %q %q %v", e.Status, e.Code, e.Field, e.Kind(), tt.status, tt.code, tt.field, tt.kind)
			}
			if !strings.Contains(e.Error(), tt.msgSubstr) {
				t.Errorf("message %q lacks %q", e.Error(), tt.msgSubstr)
			}
			// errs helpers see through the client error.
			if errs.KindOf(err) != tt.kind || !errs.Is(err, tt.kind) || errs.FieldOf(err) != tt.field {
				t.Errorf("errs.KindOf = %v, FieldOf = %q", errs.KindOf(err), errs.FieldOf(err))
			}
		})
	}
}

func TestTransportErrors(t *testing.T) {
	// A closed server: nothing listens.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := New(url).ListProviders(context.Background())
	if !errs.Is(err, errs.Unavailable) {
		t.Errorf("closed server: kind %v (%v), want unavailable", errs.KindOf(err), err)
	}

	// A slow JSON call hits the request timeout.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/providers", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	})
	f := newFake(t, mux)
	_, err = New(f.URL, WithTimeout(50*time.Millisecond)).ListProviders(context.Background())
	if !errs.Is(err, errs.Timeout) {
		t.Errorf("slow server: kind %v (%v), want timeout", errs.KindOf(err), err)
	}
}

func TestResourceRequests(t *testing.T) {
	ts := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/providers", func(w http.ResponseWriter, r *http.Request) {
		var p wire.Provider
		_ = json.NewDecoder(r.Body).Decode(&p)
		p.CreatedAt, p.UpdatedAt = ts, ts
		writeJSON(w, 201, p)
	})
	mux.HandleFunc("GET /v1/templates", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"items": []wire.Template{{ID: "t1", ProviderID: "local", Backend: json.RawMessage(`{"kind":"local"}`)}}})
	})
	mux.HandleFunc("GET /v1/workspaces", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"items": []wire.Workspace{{ID: "ws-1", Phase: "running"}, {ID: "ws-2", Phase: "running"}}})
	})
	mux.HandleFunc("POST /v1/workspaces", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 201, wire.Workspace{ID: "ws-9", TemplateID: "default", Phase: "pending"})
	})
	mux.HandleFunc("DELETE /v1/workspaces/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 202, wire.Workspace{ID: r.PathValue("id"), Phase: "terminating"})
	})
	mux.HandleFunc("DELETE /v1/providers/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	mux.HandleFunc("POST /v1/sessions/{id}/end", func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Reason string }
		_ = json.NewDecoder(r.Body).Decode(&b)
		writeJSON(w, 200, wire.Session{ID: r.PathValue("id"), Status: "ended", EndReason: b.Reason})
	})
	f := newFake(t, mux)
	c := New(f.URL)
	ctx := context.Background()

	p, err := c.CreateProvider(ctx, wire.ProviderSpec{ID: "docker-local", Provider: "container", Config: json.RawMessage(`{"kind":"container","runtime":"docker"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(f.last().Body); got != `{"id":"docker-local","provider":"container","config":{"kind":"container","runtime":"docker"}}` {
		t.Errorf("create provider body = %s", got)
	}
	if p.ID != "docker-local" || !p.CreatedAt.Equal(ts) || string(p.Config) != `{"kind":"container","runtime":"docker"}` {
		t.Errorf("provider = %+v", p)
	}

	tpls, err := c.ListTemplates(ctx, TemplateListOptions{ProviderID: "local"})
	if err != nil || len(tpls) != 1 || tpls[0].ID != "t1" {
		t.Fatalf("templates = %+v, %v", tpls, err)
	}
	if q := f.last().Query; q != "provider_id=local" {
		t.Errorf("templates query = %q", q)
	}

	wss, err := c.ListWorkspaces(ctx, WorkspaceListOptions{Phase: "running", Backend: "local", Limit: 5})
	if err != nil || len(wss) != 2 {
		t.Fatalf("workspaces = %+v, %v", wss, err)
	}
	if q := f.last().Query; q != "backend=local&limit=5&phase=running" {
		t.Errorf("workspaces query = %q", q)
	}

	ws, err := c.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "default", Labels: map[string]string{"team": "a"}})
	if err != nil || ws.ID != "ws-9" {
		t.Fatalf("create workspace = %+v, %v", ws, err)
	}
	if got := string(f.last().Body); got != `{"template_id":"default","labels":{"team":"a"}}` {
		t.Errorf("create workspace body = %s", got)
	}

	ws, err = c.DeleteWorkspace(ctx, "ws-9")
	if err != nil || ws.Phase != "terminating" {
		t.Fatalf("delete workspace = %+v, %v", ws, err)
	}
	if err := c.DeleteProvider(ctx, "a b/c"); err != nil {
		t.Fatal(err)
	}
	if got := f.last().RawPath; got != "/v1/providers/a%20b%2Fc" {
		t.Errorf("escaped id path = %q", got)
	}

	s, err := c.EndSession(ctx, "ses-1", "done")
	if err != nil || s.EndReason != "done" {
		t.Fatalf("end session = %+v, %v", s, err)
	}
	if _, err := c.EndSession(ctx, "ses-1", ""); err != nil {
		t.Fatal(err)
	}
	if got := string(f.last().Body); got != `{}` {
		t.Errorf("end session without reason body = %s, want {} so the server picks its default", got)
	}
}

// phaseServer serves GET /v1/workspaces/ws-1 from a script of phases; after
// the script it keeps the last entry, and "gone" answers 404.
func phaseServer(t *testing.T, script []string, reason string) *fake {
	var n atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/workspaces/ws-1", func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		phase := script[min(i, len(script)-1)]
		if phase == "gone" {
			writeErr(w, 404, "not_found", "workspace ws-1: not found", "")
			return
		}
		ws := wire.Workspace{ID: "ws-1", Phase: phase}
		if phase == "failed" {
			ws.Reason = reason
		}
		writeJSON(w, 200, ws)
	})
	return newFake(t, mux)
}

func TestWaitWorkspace(t *testing.T) {
	tests := []struct {
		name     string
		script   []string
		want     string
		seen     []string
		wantKind errs.Kind // errs.Other: no error
	}{
		{"reaches running", []string{"pending", "pending", "pending", "running"}, "running", []string{"pending", "running"}, errs.Other},
		{"ends failed", []string{"pending", "failed"}, "running", []string{"pending", "failed"}, errs.Precondition},
		{"deleted meanwhile", []string{"pending", "gone"}, "running", []string{"pending"}, errs.NotFound},
		{"waits for terminating", []string{"running", "terminating"}, "terminating", []string{"running", "terminating"}, errs.Other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := phaseServer(t, tt.script, "provision: image not found")
			c := New(f.URL, WithPollInterval(5*time.Millisecond))
			var seen []string
			ws, err := c.WaitWorkspace(context.Background(), "ws-1", tt.want, func(w *wire.Workspace) { seen = append(seen, w.Phase) })
			if tt.wantKind == errs.Other {
				if err != nil || ws.Phase != tt.want {
					t.Fatalf("wait = %+v, %v", ws, err)
				}
			} else if !errs.Is(err, tt.wantKind) {
				t.Fatalf("err = %v (kind %v), want kind %v", err, errs.KindOf(err), tt.wantKind)
			}
			if fmt.Sprint(seen) != fmt.Sprint(tt.seen) {
				t.Errorf("progress saw %v, want %v", seen, tt.seen)
			}
			if tt.name == "ends failed" && !strings.Contains(err.Error(), "provision: image not found") {
				t.Errorf("failure %q lacks the reason", err)
			}
		})
	}

	t.Run("times out", func(t *testing.T) {
		f := phaseServer(t, []string{"pending"}, "")
		c := New(f.URL, WithPollInterval(5*time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := c.WaitWorkspace(ctx, "ws-1", "running", nil)
		if !errs.Is(err, errs.Timeout) || !strings.Contains(err.Error(), "still pending") {
			t.Fatalf("err = %v (kind %v), want a timeout saying still pending", err, errs.KindOf(err))
		}
	})

	t.Run("wait gone", func(t *testing.T) {
		f := phaseServer(t, []string{"terminating", "terminating", "gone"}, "")
		c := New(f.URL, WithPollInterval(5*time.Millisecond))
		var seen []string
		if err := c.WaitGone(context.Background(), "ws-1", func(w *wire.Workspace) { seen = append(seen, w.Phase) }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(seen) != "[terminating]" {
			t.Errorf("progress saw %v", seen)
		}
	})
}

func TestExecStream(t *testing.T) {
	big := strings.Repeat("x", 200<<10) // longer than any default line buffer
	tests := []struct {
		name       string
		lines      []string
		wantOut    string
		wantErr    string
		wantCode   int
		wantKind   errs.Kind
		wantErrSub string
	}{
		{
			name: "interleaved output and exit code",
			lines: []string{
				`{"stream":"stdout","data":"hello "}`,
				`{"stream":"stderr","data":"warn\n"}`,
				`{"stream":"stdout","data":"world\n"}`,
				`{"future":"ignored"}`,
				`{"exit":{"exit_code":3,"duration_ms":12,"timed_out":false}}`,
			},
			wantOut: "hello world\n", wantErr: "warn\n", wantCode: 3,
		},
		{
			name:    "long line",
			lines:   []string{`{"stream":"stdout","data":"` + big + `"}`, `{"exit":{"exit_code":0}}`},
			wantOut: big,
		},
		{
			name:     "error mid-stream",
			lines:    []string{`{"stream":"stdout","data":"a"}`, `{"error":{"code":"unavailable","message":"workspace ws-1: runtime: connection lost"}}`},
			wantOut:  "a",
			wantKind: errs.Unavailable, wantErrSub: "connection lost",
		},
		{
			name:     "truncated stream",
			lines:    []string{`{"stream":"stdout","data":"a"}`},
			wantOut:  "a",
			wantKind: errs.Unavailable, wantErrSub: "before the exit status",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("POST /v1/workspaces/ws-1/exec", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/x-ndjson")
				for _, l := range tt.lines {
					_, _ = io.WriteString(w, l+"\n")
					w.(http.Flusher).Flush()
				}
			})
			f := newFake(t, mux)
			var out, errb bytes.Buffer
			res, err := New(f.URL).ExecStream(context.Background(), ExecRequest{
				WorkspaceID: "ws-1", Command: []string{"sh", "-c", "x"}, Env: map[string]string{"A": "1"}, Timeout: 30 * time.Second,
			}, &out, &errb)
			if out.String() != tt.wantOut || errb.String() != tt.wantErr {
				t.Errorf("stdout %.40q stderr %q, want %.40q %q", out.String(), errb.String(), tt.wantOut, tt.wantErr)
			}
			if tt.wantErrSub != "" {
				if !errs.Is(err, tt.wantKind) || !strings.Contains(err.Error(), tt.wantErrSub) {
					t.Fatalf("err = %v (kind %v), want kind %v with %q", err, errs.KindOf(err), tt.wantKind, tt.wantErrSub)
				}
				return
			}
			if err != nil || res.ExitCode != tt.wantCode {
				t.Fatalf("result %+v, %v; want exit %d", res, err, tt.wantCode)
			}
			req := f.last()
			if got := string(req.Body); got != `{"command":["sh","-c","x"],"env":{"A":"1"},"timeout":"30s","stream":true}` {
				t.Errorf("body = %s", got)
			}
			if req.Header.Get("Accept") != "application/x-ndjson" {
				t.Errorf("Accept = %q", req.Header.Get("Accept"))
			}
		})
	}
}

func TestExecStreamHasNoRequestTimeout(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/workspaces/ws-1/exec", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		time.Sleep(150 * time.Millisecond) // longer than the JSON timeout below
		_, _ = io.WriteString(w, `{"exit":{"exit_code":0}}`+"\n")
	})
	f := newFake(t, mux)
	res, err := New(f.URL, WithTimeout(30*time.Millisecond)).ExecStream(context.Background(), ExecRequest{WorkspaceID: "ws-1", Command: []string{"sleep"}}, nil, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec = %+v, %v", res, err)
	}
}

func TestExec(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/workspaces/ws-1/exec", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"exit_code": 1, "stdout": "hi\n", "stderr": "oops", "duration_ms": 3, "timed_out": false})
	})
	f := newFake(t, mux)
	c := New(f.URL)
	res, err := c.Exec(context.Background(), ExecRequest{WorkspaceID: "ws-1", Command: []string{"echo", "hi"}, Cwd: "sub", Stdin: "in"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 1 || res.Stdout != "hi\n" || res.Stderr != "oops" || res.DurationMS != 3 {
		t.Errorf("result = %+v", res)
	}
	if got := string(f.last().Body); got != `{"command":["echo","hi"],"cwd":"sub","stdin":"in"}` {
		t.Errorf("body = %s", got)
	}
	if _, err := c.Exec(context.Background(), ExecRequest{WorkspaceID: "ws-1"}); !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "command" {
		t.Errorf("empty command: %v, want invalid on field command", err)
	}
}

func TestReadSSE(t *testing.T) {
	stream := ": keep-alive\r\n" +
		"id: 1\r\nevent: a\r\ndata: {\"x\":\r\ndata: 1}\r\n\r\n" +
		"data:no-space\n\n" +
		"event: only-event\n\n" +
		"id: 9\ndata: incomplete" // no blank line: discarded
	var got []sseMessage
	if err := readSSE(strings.NewReader(stream), func(m sseMessage) error { got = append(got, m); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []sseMessage{
		{id: "1", event: "a", data: []byte("{\"x\":\n1}")},
		{data: []byte("no-space")},
		{event: "only-event", data: []byte{}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d messages %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i].id != want[i].id || got[i].event != want[i].event || string(got[i].data) != string(want[i].data) {
			t.Errorf("message %d = {%q %q %q}, want {%q %q %q}", i, got[i].id, got[i].event, got[i].data, want[i].id, want[i].event, want[i].data)
		}
	}
}

func sseEvent(id uint64, typ, data string) string {
	ev := fmt.Sprintf(`{"id":%d,"workspace_id":"ws-1","type":%q,"data":%s,"created_at":"2025-01-02T03:04:05Z"}`, id, typ, data)
	return fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", id, typ, ev)
}

func TestFollowEvents(t *testing.T) {
	// The first connection drops after two events; the second must resume
	// after event 2 and end with workspace.destroyed.
	var conns atomic.Int32
	var lastIDs sync.Map
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/workspaces/ws-1/events", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("follow") != "true" || r.Header.Get("Accept") != "text/event-stream" {
			writeErr(w, 400, "invalid", "not a follow request", "")
			return
		}
		n := conns.Add(1)
		lastIDs.Store(n, r.Header.Get("Last-Event-ID"))
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			_, _ = io.WriteString(w, sseEvent(1, wire.EventPhaseChanged, `{"from":"","to":"pending"}`))
			_, _ = io.WriteString(w, ": ping\n\n")
			_, _ = io.WriteString(w, sseEvent(2, wire.EventProvisioned, `{"workspace_type":"local"}`))
			return // drop
		}
		// The server replays from Last-Event-ID; an overlap is skipped.
		_, _ = io.WriteString(w, sseEvent(2, wire.EventProvisioned, `{"workspace_type":"local"}`))
		_, _ = io.WriteString(w, sseEvent(3, wire.EventDestroyed, `{"workspace_type":"local"}`))
		_, _ = io.WriteString(w, sseEvent(4, "never.delivered", `{}`))
	})
	mux.HandleFunc("GET /v1/workspaces/ws-1", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, wire.Workspace{ID: "ws-1", Phase: "terminating"})
	})
	f := newFake(t, mux)
	var got []string
	err := New(f.URL).FollowEvents(context.Background(), "ws-1", 0, func(ev wire.Event) error {
		got = append(got, fmt.Sprintf("%d:%s", ev.ID, ev.Type))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "[1:workspace.phase_changed 2:workspace.provisioned 3:workspace.destroyed]"
	if fmt.Sprint(got) != want {
		t.Errorf("events %v, want %s", got, want)
	}
	if v, _ := lastIDs.Load(int32(1)); v != "" {
		t.Errorf("first connection Last-Event-ID = %q, want none", v)
	}
	if v, _ := lastIDs.Load(int32(2)); v != "2" {
		t.Errorf("resumed connection Last-Event-ID = %q, want 2", v)
	}

	// fn's error ends the stream and comes back unchanged.
	stop := errors.New("enough")
	err = New(f.URL).FollowEvents(context.Background(), "ws-1", 0, func(wire.Event) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("err = %v, want fn's error", err)
	}

	// A stream that ends cleanly without workspace.destroyed is over once
	// the workspace is gone; an error event ends it with the server's error.
	muxGone := http.NewServeMux()
	muxGone.HandleFunc("GET /v1/workspaces/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseEvent(1, wire.EventPhaseChanged, `{"from":"running","to":"terminating"}`))
		if r.PathValue("id") == "ws-err" {
			_, _ = io.WriteString(w, "event: error\ndata: {\"error\":{\"code\":\"unavailable\",\"message\":\"events: database is locked\"}}\n\n")
		}
	})
	muxGone.HandleFunc("GET /v1/workspaces/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, 404, "not_found", "workspace gone", "")
	})
	fGone := newFake(t, muxGone)
	n := 0
	err = New(fGone.URL).FollowEvents(context.Background(), "ws-gone", 0, func(wire.Event) error { n++; return nil })
	if err != nil || n != 1 || len(fGone.reqs) != 2 {
		t.Errorf("gone workspace: err %v after %d events and %d requests, want nil, 1, 2", err, n, len(fGone.reqs))
	}
	n = 0
	err = New(fGone.URL).FollowEvents(context.Background(), "ws-err", 0, func(wire.Event) error { n++; return nil })
	if !errs.Is(err, errs.Unavailable) || n != 1 || !strings.Contains(err.Error(), "database is locked") {
		t.Errorf("error event: err %v after %d events", err, n)
	}

	// An API error is returned, not retried.
	mux404 := http.NewServeMux()
	mux404.HandleFunc("GET /v1/workspaces/nope/events", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, 404, "not_found", "workspace nope: not found", "")
	})
	f404 := newFake(t, mux404)
	err = New(f404.URL).FollowEvents(context.Background(), "nope", 0, func(wire.Event) error { return nil })
	if !errs.Is(err, errs.NotFound) || len(f404.reqs) != 1 {
		t.Errorf("err = %v after %d requests, want one not_found", err, len(f404.reqs))
	}
}

func TestEvents(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/workspaces/ws-1/events", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"items": []wire.Event{{ID: 5, Type: wire.EventProvisioned, Data: json.RawMessage(`{"workspace_path":"/x"}`)}}})
	})
	f := newFake(t, mux)
	evs, err := New(f.URL).Events(context.Background(), "ws-1", 4)
	if err != nil || len(evs) != 1 || evs[0].ID != 5 || string(evs[0].Data) != `{"workspace_path":"/x"}` {
		t.Fatalf("events = %+v, %v", evs, err)
	}
	if q := f.last().Query; q != "after=4" {
		t.Errorf("query = %q", q)
	}
}

func TestFiles(t *testing.T) {
	raw := []byte{0, 1, 2, 0xff, '\n'}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/workspaces/ws-1/files/{path...}", func(w http.ResponseWriter, r *http.Request) {
		p := r.PathValue("path")
		switch {
		case r.URL.Query().Get("stat") == "true":
			writeJSON(w, 200, FileInfo{Name: "f.bin", Path: p, Size: 5, Mode: 0o644})
		case p == "" || p == "dir":
			writeJSON(w, 200, wire.DirListing{Path: p, Items: []FileInfo{{Name: "f.bin", Path: "dir/f.bin", Size: 5, Mode: 0o644}}})
		default:
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("X-Primer-File-Mode", "4755")
			_, _ = w.Write(raw)
		}
	})
	mux.HandleFunc("PUT /v1/workspaces/ws-1/files/{path...}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		writeJSON(w, 200, FileInfo{Name: "x", Path: r.PathValue("path"), Size: int64(len(b)), IsDir: r.URL.Query().Get("mkdir") == "true"})
	})
	mux.HandleFunc("DELETE /v1/workspaces/ws-1/files/{path...}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	f := newFake(t, mux)
	c := New(f.URL)
	ctx := context.Background()

	b, err := c.ReadFile(ctx, "ws-1", "dir/f.bin")
	if err != nil || !bytes.Equal(b, raw) {
		t.Fatalf("read = %v, %v", b, err)
	}
	file, err := c.OpenFile(ctx, "ws-1", "dir/f.bin")
	if err != nil || file.Mode != 0o4755 || file.Size != 5 {
		t.Fatalf("open = %+v, %v", file, err)
	}
	file.Close()
	if _, err := c.ReadFile(ctx, "ws-1", "dir"); !errors.Is(err, ErrIsDirectory) {
		t.Errorf("read of a directory: %v, want ErrIsDirectory", err)
	}
	if _, err := c.ReadFile(ctx, "ws-1", "a b/ü#?.txt"); err != nil {
		t.Fatal(err)
	}
	if got := f.last().RawPath; got != "/v1/workspaces/ws-1/files/a%20b/%C3%BC%23%3F.txt" {
		t.Errorf("escaped path = %q", got)
	}

	d, err := c.ListFiles(ctx, "ws-1", "")
	if err != nil || len(d.Items) != 1 || d.Items[0].Name != "f.bin" {
		t.Fatalf("list = %+v, %v", d, err)
	}
	if got := f.last().Path; got != "/v1/workspaces/ws-1/files/" {
		t.Errorf("root list path = %q", got)
	}
	if _, err := c.ListFiles(ctx, "ws-1", "dir/f.bin"); !errors.Is(err, ErrNotDirectory) {
		t.Errorf("list of a file: %v, want ErrNotDirectory", err)
	}

	fi, err := c.StatFile(ctx, "ws-1", "dir/f.bin")
	if err != nil || fi.Size != 5 || fi.FileMode().String() != "-rw-r--r--" {
		t.Fatalf("stat = %+v, %v", fi, err)
	}
	if q := f.last().Query; q != "stat=true" {
		t.Errorf("stat query = %q", q)
	}

	fi, err = c.WriteFile(ctx, "ws-1", "new/file.txt", bytes.NewReader(raw))
	if err != nil || fi.Size != 5 || fi.Path != "new/file.txt" {
		t.Fatalf("write = %+v, %v", fi, err)
	}
	if got := f.last(); !bytes.Equal(got.Body, raw) || got.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("write sent %v as %q", got.Body, got.Header.Get("Content-Type"))
	}
	if got := f.last().Header.Get(FileModeHeader); got != "" {
		t.Errorf("WriteFile sent mode %q, want none (the server's default)", got)
	}
	if _, err := c.WriteFileMode(ctx, "ws-1", "run.sh", strings.NewReader("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := f.last().Header.Get(FileModeHeader); got != "0755" {
		t.Errorf("WriteFileMode sent mode %q, want 0755", got)
	}
	fi, err = c.Mkdir(ctx, "ws-1", "d")
	if err != nil || !fi.IsDir || f.last().Query != "mkdir=true" {
		t.Fatalf("mkdir = %+v, %v, query %q", fi, err, f.last().Query)
	}
	if err := c.RemoveFile(ctx, "ws-1", "d", true); err != nil || f.last().Query != "recursive=true" || f.last().Method != "DELETE" {
		t.Fatalf("remove: %v, %+v", err, f.last())
	}
}
