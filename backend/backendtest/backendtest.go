// Package backendtest is the conformance suite every workspace backend
// passes, the in-memory one included. It drives a backend only through the
// backend.Backend interface and the runtime client, exactly as the
// activities do, so a backend that passes it works under the workflow.
// Backend tests add only what the suite cannot see (a git branch, a
// container, a pod).
package backendtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// Harness is what the suite needs from a backend's test.
type Harness struct {
	// New returns a fresh backend. It is called once per subtest; it should
	// register its own cleanup (closing the local.Host, removing volumes).
	New func(t *testing.T) backend.Backend
	// Template is a valid template backend document (with its kind) for the
	// backend. It must not set env FOO: the suite checks the request's env.
	Template json.RawMessage
	// Gone reports whether nothing of the sandbox behind h is left on the
	// backend (directory, branch, container, volume, pod, secret).
	Gone func(t *testing.T, h backend.Handle) bool
	// Timeout bounds each operation; default 2 minutes (pulling an image).
	Timeout time.Duration
	// HostProcesses says commands run as processes the test can see (local,
	// worktree, memory): the suite then checks by pid that destroy killed them.
	HostProcesses bool
	// Restart returns a new backend built from the same config as old, as a
	// platform restarted on the same provider builds it. It first stops what
	// old serves from the test's process (a local.Host), since a restart
	// ends the process that served it. Required when the backend claims
	// Capabilities().PersistentAcrossRestart.
	Restart func(t *testing.T, old backend.Backend) backend.Backend
	// WholeSandbox says the backend's snapshots capture the sandbox's whole
	// filesystem (containers, pods), not only the workspace directory: the
	// snapshot cases then check files outside it (/tmp, /usr/local) too.
	WholeSandbox bool
	// Stopped reports whether the sandbox behind h holds no CPU (its
	// container stopped, its pod gone, its processes ended). Optional: when
	// set, PauseResume checks it is true while paused and false after
	// resume.
	Stopped func(t *testing.T, h backend.Handle) bool
	// SnapshotGone reports whether nothing of the capture behind ref is left
	// (image, volume, archive). Optional: when set, Snapshot checks it after
	// DeleteSnapshot.
	SnapshotGone func(t *testing.T, ref backend.SnapshotRef) bool
}

// Run runs the suite as subtests of t.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.Gone == nil || len(h.Template) == 0 {
		t.Fatal("backendtest: Harness needs New, Template and Gone")
	}
	if h.Timeout == 0 {
		h.Timeout = 2 * time.Minute
	}
	s := &suite{h: h}
	t.Run("Capabilities", s.capabilities)
	t.Run("ValidateTemplate", s.validateTemplate)
	t.Run("ProvisionAndUse", s.provisionAndUse)
	t.Run("WrongTokenRefused", s.wrongToken)
	t.Run("ProvisionIdempotent", s.provisionIdempotent)
	t.Run("Destroy", s.destroy)
	t.Run("DestroyKillsProcesses", s.destroyKillsProcesses)
	t.Run("ConcurrentProvisions", s.concurrentProvisions)
	t.Run("TeardownKeepsData", s.teardownKeepsData)
	t.Run("TeardownThenDestroy", s.teardownThenDestroy)
	t.Run("List", s.list)
	t.Run("ReattachAfterRestart", s.reattachAfterRestart)
	// Snapshots and pause (snapshot.go): each skips, naming the
	// capability, on a backend without it.
	t.Run("Snapshot", s.snapshotCase)
	t.Run("FromSnapshot", s.fromSnapshot)
	t.Run("Fork", s.fork)
	t.Run("PauseResume", s.pauseResume)
	// What a reset restores (restore.go).
	t.Run("ResetRestoresSandbox", s.resetRestoresSandbox)
	t.Run("ResetKeepsUnchanged", s.resetKeepsUnchanged)
	t.Run("ResetRestoresSnapshot", s.resetRestoresSnapshot)
}

type suite struct{ h Harness }

// NewID returns a fresh workspace id of the server's form, ws-<hex>.
func NewID(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "ws-" + hex.EncodeToString(b)
}

// NewToken returns a fresh runtime token.
func NewToken(t testing.TB) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), s.h.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// provision provisions a new workspace with env FOO=<id> and destroys it at
// cleanup.
func (s *suite) provision(t *testing.T, b backend.Backend, id, token string) backend.Handle {
	t.Helper()
	h, err := b.Provision(s.ctx(t), backend.ProvisionRequest{
		WorkspaceID: id,
		Template:    s.h.Template,
		Env:         map[string]string{"FOO": "foo-" + id},
		Token:       token,
	})
	if err != nil {
		t.Fatalf("provision %s: %v", id, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
		defer cancel()
		if err := b.Destroy(ctx, h); err != nil {
			t.Errorf("cleanup: destroy %s: %v", id, err)
		}
	})
	return h
}

// Dial returns a runtime client for the workspace behind h, closed at cleanup.
func Dial(ctx context.Context, t *testing.T, b backend.Backend, h backend.Handle, token string) *client.Client {
	t.Helper()
	ep, err := b.Endpoint(ctx, h, token)
	if err != nil {
		t.Fatalf("endpoint %s: %v", h.WorkspaceID, err)
	}
	if !strings.HasPrefix(ep.URL, "ws://") && !strings.HasPrefix(ep.URL, "wss://") {
		t.Fatalf("endpoint %s: URL %q is not ws:// or wss://", h.WorkspaceID, ep.URL)
	}
	c, err := dialRetry(ctx, ep.URL, token)
	if err != nil {
		t.Fatalf("dial %s at %s: %v", h.WorkspaceID, ep.URL, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialRetry dials until the runtime answers a ping: a container's runtime
// may still be starting when Provision returns.
func dialRetry(ctx context.Context, url, token string) (*client.Client, error) {
	var last error
	for {
		c, err := client.Dial(ctx, url, token)
		if err == nil {
			if err = c.Ping(ctx); err == nil {
				return c, nil
			}
			c.Close()
		}
		last = err
		if errs.Is(err, errs.Forbidden) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *suite) capabilities(t *testing.T) {
	c := s.h.New(t).Capabilities()
	if !slices.Contains([]string{"none", "container", "pod", "machine"}, c.Isolation) {
		t.Errorf("Capabilities().Isolation = %q, want none, container, pod or machine", c.Isolation)
	}
	checkResetCapability(t, c)
}

func (s *suite) validateTemplate(t *testing.T) {
	b := s.h.New(t)
	var doc map[string]any
	if err := json.Unmarshal(s.h.Template, &doc); err != nil {
		t.Fatalf("harness template: %v", err)
	}
	with := func(kv ...any) json.RawMessage {
		m := map[string]any{}
		for k, v := range doc {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	tests := []struct {
		name      string
		doc       json.RawMessage
		wantErr   bool
		wantField string // a part of the field the error must name
	}{
		{"harness template", s.h.Template, false, ""},
		{"with common fields", with("files", map[string]string{"a/b.txt": "x"}), false, ""},
		{"with start_timeout", with("start_timeout", "5m"), false, ""},
		{"with recovery", with("recovery", map[string]any{"max_attempts": 0, "after": "1m", "webhook_url": "https://hooks.example.com/x"}), false, ""},
		{"with config_toml", with("config_toml", "[model]\nname = \"m\"\n"), false, ""},
		{"bad start_timeout", with("start_timeout", "5 minutes"), true, "start_timeout"},
		{"config_toml not TOML", with("config_toml", "[model\n"), true, "config_toml"},
		{"config_toml holds an env value", with("env", map[string]string{"API_KEY": "k-0123456"}, "config_toml", "[model]\nkey = \"k-0123456\"\n"), true, "config_toml"},
		{"bad recovery after", with("recovery", map[string]any{"after": "-1s"}), true, "recovery.after"},
		{"bad recovery max_attempts", with("recovery", map[string]any{"max_attempts": 99}), true, "recovery.max_attempts"},
		{"bad recovery webhook_url", with("recovery", map[string]any{"webhook_url": "file:///etc/passwd"}), true, "recovery.webhook_url"},
		{"unknown recovery field", with("recovery", map[string]any{"attempts": 1}), true, "recovery.attempts"},
		{"unknown field", with("no_such_field", 1), true, "no_such_field"},
		{"wrong kind", with("kind", "no-such-kind"), true, "kind"},
		{"missing kind", with("kind", ""), true, "kind"},
		{"wrong type", with("env", "not-an-object"), true, "env"},
		{"file escapes", with("files", map[string]string{"../x": "y"}), true, "files"},
		{"absolute file", with("files", map[string]string{"/etc/x": "y"}), true, "files"},
		{"empty init command", with("init", []string{" "}), true, "init"},
		{"malformed", json.RawMessage(`{"kind":`), true, ""},
		{"not an object", json.RawMessage(`[1,2]`), true, ""},
		{"trailing data", append(append(json.RawMessage{}, s.h.Template...), []byte(` {}`)...), true, ""},
		{"empty", nil, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := b.ValidateTemplate(tt.doc)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("ValidateTemplate(%s) = %v, want nil", tt.doc, err)
				}
				return
			}
			if !errs.Is(err, errs.Invalid) {
				t.Fatalf("ValidateTemplate(%s) = %v (kind %v), want an invalid error", tt.doc, err, errs.KindOf(err))
			}
			if f := errs.FieldOf(err); f == "" || !strings.Contains(f, tt.wantField) {
				t.Errorf("ValidateTemplate(%s) names field %q, want one containing %q", tt.doc, f, tt.wantField)
			}
		})
	}
}

func (s *suite) provisionAndUse(t *testing.T) {
	b := s.h.New(t)
	ctx := s.ctx(t)
	id, token := NewID(t), NewToken(t)
	h := s.provision(t, b, id, token)
	if h.WorkspaceID != id || h.Backend == "" {
		t.Fatalf("handle = %+v, want workspace %s and a backend name", h, id)
	}

	// A handle is a value: it survives a JSON round trip (workflow history,
	// the database) and still finds the sandbox.
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var h2 backend.Handle
	if err := json.Unmarshal(raw, &h2); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), token) {
		t.Errorf("handle %s holds the runtime token", raw)
	}
	c := Dial(ctx, t, b, h2, token)

	data := []byte("hello from " + id + "\n")
	if err := c.WriteFile(ctx, "dir/hello.txt", data, 0o644); err != nil {
		t.Fatalf("write file: %v", err)
	}
	got, err := c.ReadFile(ctx, "dir/hello.txt")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read file = %q, %v; want %q", got, err, data)
	}
	entries, err := c.List(ctx, "dir")
	if err != nil || len(entries) != 1 || entries[0].Name != "hello.txt" || entries[0].Size != int64(len(data)) {
		t.Errorf("list dir = %+v, %v; want hello.txt of %d bytes", entries, err, len(data))
	}

	tests := []struct {
		name     string
		req      protocol.ExecRequest
		wantOut  string
		wantCode int
	}{
		{"sees provision env", protocol.ExecRequest{Args: []string{"sh", "-c", "echo $FOO"}}, "foo-" + id + "\n", 0},
		{"exec env adds", protocol.ExecRequest{Args: []string{"sh", "-c", "echo $FOO $BAR"}, Env: map[string]string{"BAR": "bar"}}, "foo-" + id + " bar\n", 0},
		{"runs in the workspace", protocol.ExecRequest{Args: []string{"cat", "dir/hello.txt"}}, string(data), 0},
		{"cwd", protocol.ExecRequest{Args: []string{"cat", "hello.txt"}, Cwd: "dir"}, string(data), 0},
		{"stdin", protocol.ExecRequest{Args: []string{"cat"}, Stdin: []byte("in")}, "in", 0},
		{"exit code", protocol.ExecRequest{Args: []string{"sh", "-c", "echo out; exit 3"}}, "out\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Exec(ctx, tt.req, nil, nil)
			if err != nil {
				t.Fatalf("exec %q: %v", tt.req.Args, err)
			}
			if string(res.Stdout) != tt.wantOut || res.ExitCode != tt.wantCode {
				t.Errorf("exec %q = stdout %q, exit %d (stderr %q); want %q, exit %d",
					tt.req.Args, res.Stdout, res.ExitCode, res.Stderr, tt.wantOut, tt.wantCode)
			}
		})
	}

	// Files written by commands are seen through the file API.
	if res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "printf made > made.txt"}}, nil, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("exec write = %+v, %v", res, err)
	}
	if got, err := c.ReadFile(ctx, "made.txt"); err != nil || string(got) != "made" {
		t.Errorf("read made.txt = %q, %v; want %q", got, err, "made")
	}
}

func (s *suite) wrongToken(t *testing.T) {
	b := s.h.New(t)
	ctx := s.ctx(t)
	id, token := NewID(t), NewToken(t)
	h := s.provision(t, b, id, token)
	c := Dial(ctx, t, b, h, token) // the right token works...

	// ...and the wrong one does not, at dial or at the first call.
	ep, err := b.Endpoint(ctx, h, token)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"wrong-" + token, ""} {
		bc, err := client.Dial(ctx, ep.URL, bad)
		if err == nil {
			err = bc.Ping(ctx)
			bc.Close()
		}
		if err == nil {
			t.Errorf("dial with token %q: runtime answered, want it refused", bad)
		}
	}
	// The refused attempts did not disturb the good connection.
	if err := c.Ping(ctx); err != nil {
		t.Errorf("ping with the right token after refusals: %v", err)
	}
}

func (s *suite) provisionIdempotent(t *testing.T) {
	b := s.h.New(t)
	ctx := s.ctx(t)
	id, token := NewID(t), NewToken(t)
	h1 := s.provision(t, b, id, token)
	c := Dial(ctx, t, b, h1, token)
	if err := c.WriteFile(ctx, "keep.txt", []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Close()

	// A retried provision (the activity's first try crashed after the
	// backend finished) finds the same sandbox.
	h2, err := b.Provision(ctx, backend.ProvisionRequest{
		WorkspaceID: id, Template: s.h.Template, Env: map[string]string{"FOO": "foo-" + id}, Token: token,
	})
	if err != nil {
		t.Fatalf("second provision: %v", err)
	}
	if !reflect.DeepEqual(h1, h2) {
		t.Errorf("second provision handle = %+v, want %+v", h2, h1)
	}
	c2 := Dial(ctx, t, b, h2, token)
	if got, err := c2.ReadFile(ctx, "keep.txt"); err != nil || string(got) != "kept" {
		t.Errorf("after second provision, keep.txt = %q, %v; want %q", got, err, "kept")
	}
}

func (s *suite) destroy(t *testing.T) {
	b := s.h.New(t)
	ctx := s.ctx(t)
	id, token := NewID(t), NewToken(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: s.h.Template, Token: token})
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	c := Dial(ctx, t, b, h, token)
	if err := c.WriteFile(ctx, "x/y.txt", []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	ep, err := b.Endpoint(ctx, h, token)
	if err != nil {
		t.Fatal(err)
	}
	if s.h.Gone(t, h) {
		t.Fatal("Gone is true for a live sandbox; the harness cannot tell")
	}

	if err := b.Destroy(ctx, h); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if !s.h.Gone(t, h) {
		t.Error("after destroy, something of the sandbox is left")
	}
	if err := b.Destroy(ctx, h); err != nil {
		t.Errorf("second destroy: %v, want nil", err)
	}
	// Nothing answers at the old address any more (checked before Endpoint,
	// which must not be what stops the runtime).
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if oc, err := client.Dial(dctx, ep.URL, token); err == nil {
		err = oc.Ping(dctx)
		oc.Close()
		if err == nil {
			t.Errorf("runtime at %s still answers after destroy", ep.URL)
		}
	}
	// The old connection is dead too.
	if err := c.Ping(dctx); err == nil {
		t.Error("a connection opened before destroy still answers")
	}
	if _, err := b.Endpoint(ctx, h, token); !errs.Is(err, errs.NotFound) {
		t.Errorf("endpoint after destroy = %v (kind %v), want not_found", err, errs.KindOf(err))
	}
}

func (s *suite) destroyKillsProcesses(t *testing.T) {
	b := s.h.New(t)
	ctx := s.ctx(t)
	id, token := NewID(t), NewToken(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: s.h.Template, Token: token})
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	c := Dial(ctx, t, b, h, token)
	// A background process that would outlive a careless destroy. It writes
	// its pid so the test can check it where host processes are visible.
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $$ > pid; sleep 300"}}, nil, nil)
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	var pid int
	for {
		if got, err := c.ReadFile(ctx, "pid"); err == nil && len(got) > 0 {
			if pid, err = strconv.Atoi(strings.TrimSpace(string(got))); err != nil {
				t.Fatalf("pid file %q: %v", got, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background command did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if err := b.Destroy(ctx, h); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("an exec running at destroy had not ended 30 s later")
	}
	t.Logf("destroy with a running command took %s", time.Since(start))
	if s.h.HostProcesses {
		for deadline := time.Now().Add(10 * time.Second); processAlive(pid); {
			if time.Now().After(deadline) {
				t.Fatalf("process %d started in the workspace is still running after destroy", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !s.h.Gone(t, h) {
		t.Error("after destroy, something of the sandbox is left")
	}
}

func (s *suite) concurrentProvisions(t *testing.T) {
	const n = 10
	b := s.h.New(t)
	ctx := s.ctx(t)
	ids := make([]string, n)
	tokens := make([]string, n)
	handles := make([]backend.Handle, n)
	errList := make([]error, n)
	for i := range n {
		ids[i], tokens[i] = NewID(t), NewToken(t)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			handles[i], errList[i] = b.Provision(ctx, backend.ProvisionRequest{
				WorkspaceID: ids[i], Template: s.h.Template,
				Env: map[string]string{"FOO": "foo-" + ids[i]}, Token: tokens[i],
			})
		})
	}
	wg.Wait()
	for i := range n {
		if errList[i] != nil {
			t.Errorf("provision %s: %v", ids[i], errList[i])
			continue
		}
		h := handles[i]
		t.Cleanup(func() {
			if err := b.Destroy(context.Background(), h); err != nil {
				t.Errorf("cleanup: destroy %s: %v", h.WorkspaceID, err)
			}
		})
	}
	if t.Failed() {
		return
	}

	paths := map[string]bool{}
	for i, h := range handles {
		if h.WorkspaceID != ids[i] {
			t.Errorf("handle %d is for %s, want %s", i, h.WorkspaceID, ids[i])
		}
		if h.Path != "" {
			if paths[h.Path] {
				t.Errorf("two workspaces share path %s", h.Path)
			}
			paths[h.Path] = true
		}
	}

	// Each is reachable with its own token only, sees its own env, and does
	// not see the others' files.
	var cwg sync.WaitGroup
	for i, h := range handles {
		cwg.Go(func() {
			ep, err := b.Endpoint(ctx, h, tokens[i])
			if err != nil {
				t.Errorf("endpoint %s: %v", h.WorkspaceID, err)
				return
			}
			c, err := dialRetry(ctx, ep.URL, tokens[i])
			if err != nil {
				t.Errorf("dial %s: %v", h.WorkspaceID, err)
				return
			}
			defer c.Close()
			if err := c.WriteFile(ctx, "mine-"+ids[i], nil, 0o644); err != nil {
				t.Errorf("write in %s: %v", h.WorkspaceID, err)
			}
			res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $FOO"}}, nil, nil)
			if err != nil || string(res.Stdout) != "foo-"+ids[i]+"\n" {
				t.Errorf("exec in %s = %q, %v; want its own env", h.WorkspaceID, res.Stdout, err)
			}
			other := tokens[(i+1)%n]
			if oc, err := client.Dial(ctx, ep.URL, other); err == nil {
				if oc.Ping(ctx) == nil {
					t.Errorf("workspace %s accepts another workspace's token", h.WorkspaceID)
				}
				oc.Close()
			}
		})
	}
	cwg.Wait()
	for i, h := range handles {
		ep, err := b.Endpoint(ctx, h, tokens[i])
		if err != nil {
			t.Fatal(err)
		}
		c, err := dialRetry(ctx, ep.URL, tokens[i])
		if err != nil {
			t.Fatal(err)
		}
		entries, err := c.List(ctx, ".")
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name, "mine-") && e.Name != "mine-"+ids[i] {
				t.Errorf("workspace %s sees %s of another workspace", h.WorkspaceID, e.Name)
			}
		}
	}
}

// processAlive reports whether pid names a live, non-zombie process on this
// host.
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		// No /proc (macOS): signal 0 tells whether the pid exists.
		return syscall.Kill(pid, 0) == nil
	}
	// The state follows the parenthesised command name: Z is a zombie, which
	// is dead and only waiting for its parent.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

// keeper returns b as a backend.Keeper, or skips t.
func keeper(t *testing.T, b backend.Backend) backend.Keeper {
	t.Helper()
	k, ok := b.(backend.Keeper)
	if !ok {
		t.Skipf("%T does not implement backend.Keeper", b)
	}
	return k
}

// startSleeper starts a long command in the workspace and returns its pid
// and a channel that receives when the exec ends.
func startSleeper(ctx context.Context, t *testing.T, c *client.Client) (int, <-chan error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $$ > sleeper.pid; sleep 300"}}, nil, nil)
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if got, err := c.ReadFile(ctx, "sleeper.pid"); err == nil && len(got) > 0 {
			pid, err := strconv.Atoi(strings.TrimSpace(string(got)))
			if err != nil {
				t.Fatalf("pid file %q: %v", got, err)
			}
			return pid, done
		}
		if time.Now().After(deadline) {
			t.Fatal("the background command did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// teardownKeepsData is stale recovery's replacement: Teardown removes the
// sandbox's compute, its processes included, and a Provision of the same id
// with a new token makes a sandbox that finds the files, answers to the new
// token only, and starts with the request's env.
func (s *suite) teardownKeepsData(t *testing.T) {
	b := s.h.New(t)
	k := keeper(t, b)
	ctx := s.ctx(t)
	id, oldToken := NewID(t), NewToken(t)
	h := s.provision(t, b, id, oldToken)
	c := Dial(ctx, t, b, h, oldToken)
	data := []byte("kept across teardown " + id)
	if err := c.WriteFile(ctx, "kept/data.txt", data, 0o600); err != nil {
		t.Fatalf("write file: %v", err)
	}
	pid, done := startSleeper(ctx, t, c)
	ep, err := b.Endpoint(ctx, h, oldToken)
	if err != nil {
		t.Fatal(err)
	}

	if err := k.Teardown(ctx, h); err != nil {
		t.Fatalf("teardown: %v", err)
	}
	if err := k.Teardown(ctx, h); err != nil {
		t.Errorf("second teardown: %v, want nil", err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("an exec running at teardown had not ended 30 s later")
	}
	if s.h.HostProcesses {
		for deadline := time.Now().Add(10 * time.Second); processAlive(pid); {
			if time.Now().After(deadline) {
				t.Fatalf("process %d started in the workspace is still running after teardown", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(dctx); err == nil {
		t.Error("a connection opened before teardown still answers")
	}
	if oc, err := client.Dial(dctx, ep.URL, oldToken); err == nil {
		err = oc.Ping(dctx)
		oc.Close()
		if err == nil {
			t.Errorf("runtime at %s still answers after teardown", ep.URL)
		}
	}
	if s.h.Gone(t, h) {
		t.Fatal("teardown removed the workspace's data")
	}

	// The replacement: same id, new token.
	newToken := NewToken(t)
	h2, err := b.Provision(ctx, backend.ProvisionRequest{
		WorkspaceID: id, Template: s.h.Template, Env: map[string]string{"FOO": "again-" + id}, Token: newToken,
	})
	if err != nil {
		t.Fatalf("provision after teardown: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
		defer cancel()
		if err := b.Destroy(ctx, h2); err != nil {
			t.Errorf("cleanup: destroy %s: %v", id, err)
		}
	})
	if h2.WorkspaceID != id || h2.Path != h.Path {
		t.Errorf("handle after teardown = %+v, want workspace %s at path %q", h2, id, h.Path)
	}
	c2 := Dial(ctx, t, b, h2, newToken)
	if got, err := c2.ReadFile(ctx, "kept/data.txt"); err != nil || !bytes.Equal(got, data) {
		t.Errorf("after teardown and provision, kept/data.txt = %q, %v; want %q", got, err, data)
	}
	res, err := c2.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $FOO; cat kept/data.txt"}}, nil, nil)
	if err != nil || string(res.Stdout) != "again-"+id+"\n"+string(data) {
		t.Errorf("exec in the replacement = %q, %v; want its new env and the kept file", res.Stdout, err)
	}
	ep2, err := b.Endpoint(ctx, h2, newToken)
	if err != nil {
		t.Fatal(err)
	}
	if oc, err := client.Dial(ctx, ep2.URL, oldToken); err == nil {
		err = oc.Ping(ctx)
		oc.Close()
		if err == nil {
			t.Error("the replacement answers to the old token")
		}
	}
	if err := c2.Ping(ctx); err != nil {
		t.Errorf("ping with the new token after the old one was refused: %v", err)
	}

	// Tearing down what was never there is not an error either.
	if err := k.Teardown(ctx, backend.Handle{Backend: h.Backend, WorkspaceID: NewID(t)}); err != nil {
		t.Errorf("teardown of a workspace never provisioned: %v, want nil", err)
	}
}

// teardownThenDestroy: a workspace deleted while torn down (its replacement
// failed) leaves nothing behind.
func (s *suite) teardownThenDestroy(t *testing.T) {
	b := s.h.New(t)
	k := keeper(t, b)
	ctx := s.ctx(t)
	id, token := NewID(t), NewToken(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: s.h.Template, Token: token})
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	c := Dial(ctx, t, b, h, token)
	if err := c.WriteFile(ctx, "x.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := k.Teardown(ctx, h); err != nil {
		t.Fatalf("teardown: %v", err)
	}
	if err := b.Destroy(ctx, h); err != nil {
		t.Fatalf("destroy after teardown: %v", err)
	}
	if !s.h.Gone(t, h) {
		t.Error("after teardown and destroy, something of the sandbox is left")
	}
	if err := k.Teardown(ctx, h); err != nil {
		t.Errorf("teardown after destroy: %v, want nil", err)
	}
	if !s.h.Gone(t, h) {
		t.Error("teardown after destroy made something again")
	}
}

// list: List finds a live sandbox and a torn down one (its data is still
// there), and not a destroyed one. The backend may hold sandboxes of others
// (a shared engine): only these three are checked.
func (s *suite) list(t *testing.T) {
	b := s.h.New(t)
	l, ok := b.(backend.Lister)
	if !ok {
		t.Skipf("%T does not implement backend.Lister", b)
	}
	ctx := s.ctx(t)
	start := time.Now()
	live, down, gone := NewID(t), NewID(t), NewID(t)
	s.provision(t, b, live, NewToken(t))
	hd := s.provision(t, b, down, NewToken(t))
	hg := s.provision(t, b, gone, NewToken(t))
	if k, ok := b.(backend.Keeper); ok {
		if err := k.Teardown(ctx, hd); err != nil {
			t.Fatalf("teardown: %v", err)
		}
	}
	if err := b.Destroy(ctx, hg); err != nil {
		t.Fatalf("destroy: %v", err)
	}

	got, err := l.List(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	byID := map[string]backend.Listed{}
	for _, e := range got {
		if _, dup := byID[e.WorkspaceID]; dup {
			t.Errorf("list returns %s twice", e.WorkspaceID)
		}
		byID[e.WorkspaceID] = e
	}
	for _, id := range []string{live, down} {
		e, ok := byID[id]
		if !ok {
			t.Errorf("list does not return %s", id)
			continue
		}
		if len(e.Objects) == 0 {
			t.Errorf("list returns %s with no objects", id)
		}
		// Engines keep creation times in seconds; allow for that and a
		// little clock skew.
		if e.Created.IsZero() || e.Created.Before(start.Add(-time.Minute)) || e.Created.After(time.Now().Add(time.Minute)) {
			t.Errorf("list returns %s created at %v, want about %v", id, e.Created, start)
		}
	}
	if e, ok := byID[gone]; ok {
		t.Errorf("list returns destroyed workspace %s: %+v", gone, e)
	}
}

// reattachAfterRestart is what a restarted platform does with a workspace
// that was running: it builds a new backend from the same provider config,
// reads the handle back from the database, asks for the endpoint (serving
// the runtime again where the backend hosts it), and finds the files and the
// env the workspace was made with. The new backend can destroy it too.
func (s *suite) reattachAfterRestart(t *testing.T) {
	b := s.h.New(t)
	if !b.Capabilities().PersistentAcrossRestart {
		t.Skipf("%T does not claim PersistentAcrossRestart", b)
	}
	if s.h.Restart == nil {
		t.Fatalf("%T claims PersistentAcrossRestart: Harness needs Restart", b)
	}
	ctx := s.ctx(t)
	id, token := NewID(t), NewToken(t)
	env := map[string]string{"FOO": "foo-" + id}
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: s.h.Template, Env: env, Token: token})
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	current := b
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
		defer cancel()
		if err := current.Destroy(ctx, h); err != nil {
			t.Errorf("cleanup: destroy %s: %v", id, err)
		}
	})
	c := Dial(ctx, t, b, h, token)
	data := []byte("kept across restart " + id)
	if err := c.WriteFile(ctx, "restart/data.txt", data, 0o600); err != nil {
		t.Fatalf("write file: %v", err)
	}
	c.Close()

	// The handle travels through the database as JSON.
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var stored backend.Handle
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}

	b2 := s.h.Restart(t, b)
	current = b2
	var ep backend.Endpoint
	if rh, ok := b2.(backend.RuntimeHost); ok {
		ep, err = rh.ServeRuntime(ctx, stored, token, func(context.Context) (map[string]string, error) { return env, nil })
	} else {
		ep, err = b2.Endpoint(ctx, stored, token)
	}
	if err != nil {
		t.Fatalf("endpoint after restart: %v", err)
	}
	c2, err := dialRetry(ctx, ep.URL, token)
	if err != nil {
		t.Fatalf("dial after restart at %s: %v", ep.URL, err)
	}
	t.Cleanup(func() { c2.Close() })
	if got, err := c2.ReadFile(ctx, "restart/data.txt"); err != nil || !bytes.Equal(got, data) {
		t.Errorf("after restart, restart/data.txt = %q, %v; want %q", got, err, data)
	}
	res, err := c2.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $FOO; cat restart/data.txt"}}, nil, nil)
	if err != nil || string(res.Stdout) != "foo-"+id+"\n"+string(data) {
		t.Errorf("exec after restart = %q, %v; want the workspace's env and file", res.Stdout, err)
	}
	c2.Close()

	if err := b2.Destroy(ctx, stored); err != nil {
		t.Fatalf("destroy after restart: %v", err)
	}
	if !s.h.Gone(t, stored) {
		t.Error("after a destroy by the restarted backend, something of the sandbox is left")
	}
}
