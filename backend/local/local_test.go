package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/wire"
)

// newBackend returns a local backend on its own host under a fresh root.
func newBackend(t *testing.T) (*local.Backend, *local.Host) {
	t.Helper()
	return backendAt(t, t.TempDir())
}

// backendAt returns a local backend on its own host under root.
func backendAt(t *testing.T, root string) (*local.Backend, *local.Host) {
	t.Helper()
	host := local.NewHost(nil)
	t.Cleanup(func() { host.Close() })
	b, err := local.New(host, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, host
}

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	hosts := map[*local.Backend]*local.Host{}
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backend.Backend {
			b, host := newBackend(t)
			mu.Lock()
			defer mu.Unlock()
			hosts[b] = host
			return b
		},
		Template: json.RawMessage(`{"kind":"local","env":{"FROM_TEMPLATE":"1"},"init":["true"]}`),
		Gone: func(t *testing.T, h backend.Handle) bool {
			_, err := os.Stat(h.Path)
			return errors.Is(err, fs.ErrNotExist)
		},
		Timeout:       30 * time.Second,
		HostProcesses: true,
		// Paused: no host of the test serves the workspace's runtime (its
		// processes were killed with it).
		Stopped: func(t *testing.T, h backend.Handle) bool {
			mu.Lock()
			defer mu.Unlock()
			for _, host := range hosts {
				if host.URL(h.WorkspaceID) != "" {
					return false
				}
			}
			return true
		},
		SnapshotGone: func(t *testing.T, ref backend.SnapshotRef) bool {
			_, err := os.Stat(ref.Ref)
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(ref.Ref), "."+ref.SnapshotID+"*"))
			return errors.Is(err, fs.ErrNotExist) && len(left) == 0
		},
		// A restart ends the process whose host served the runtimes; the
		// new platform has a new host over the same root.
		Restart: func(t *testing.T, old backend.Backend) backend.Backend {
			ob := old.(*local.Backend)
			mu.Lock()
			host := hosts[ob]
			mu.Unlock()
			host.Close()
			b, h := backendAt(t, ob.Root())
			mu.Lock()
			hosts[b] = h
			mu.Unlock()
			return b
		},
	})
}

func TestFactoryConfig(t *testing.T) {
	host := local.NewHost(nil)
	t.Cleanup(func() { host.Close() })
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		config    string
		wantField string // "" means valid
	}{
		{"valid", `{"kind":"local","root_path":"` + dir + `/ok"}`, ""},
		{"kind optional", `{"root_path":"` + dir + `/ok2"}`, ""},
		{"missing, with parents", `{"kind":"local","root_path":"` + dir + `/new/nested"}`, ""},
		{"missing root_path", `{"kind":"local"}`, "spec.config.root_path"},
		{"relative root_path", `{"kind":"local","root_path":"rel/dir"}`, "spec.config.root_path"},
		{"root_path is a file", `{"kind":"local","root_path":"` + file + `"}`, "spec.config.root_path"},
		{"unknown field", `{"kind":"local","root_path":"/tmp","bogus":1}`, "spec.config.bogus"},
		{"wrong kind", `{"kind":"worktree","root_path":"/tmp"}`, "spec.config.kind"},
		{"wrong type", `{"kind":"local","root_path":7}`, "spec.config.root_path"},
		{"malformed", `{"kind":`, "spec.config"},
		{"empty", ``, "spec.config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := local.Factory(host, nil)(json.RawMessage(tt.config))
			if tt.wantField != "" {
				if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tt.wantField {
					t.Fatalf("factory(%s) = %v (field %q), want invalid naming %q", tt.config, err, errs.FieldOf(err), tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatalf("factory(%s) = %v", tt.config, err)
			}
			root := b.(*local.Backend).Root()
			if _, err := os.Stat(root); err == nil && strings.HasPrefix(root, dir+"/new") {
				t.Errorf("root_path %s created by building the backend; want it made at first provision", root)
			}
		})
	}
}

// TestValidateHasNoSideEffects validates local and worktree-style provider
// documents through the registry, as the API does: a missing root_path is
// valid and stays missing; the first provision creates it (0700) and the
// workspace in it, and List on the missing root finds nothing.
func TestValidateHasNoSideEffects(t *testing.T) {
	host := local.NewHost(nil)
	t.Cleanup(func() { host.Close() })
	root := filepath.Join(t.TempDir(), "not", "yet")
	reg := backend.NewRegistry(map[string]backend.Factory{"local": local.Factory(host, nil)})
	p := &wire.Provider{ID: "p", Provider: "local", Config: json.RawMessage(`{"kind":"local","root_path":"` + root + `"}`)}
	if err := reg.Validate(p); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(root)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("validating the provider made %s (stat: %v); want nothing on disk", filepath.Dir(root), err)
	}
	b, err := reg.For(p)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := b.(backend.Lister).List(t.Context()); err != nil || len(l) != 0 {
		t.Fatalf("List on a root not made yet = %v, %v; want nothing", l, err)
	}
	if _, err := os.Stat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("building the backend made %s; want it made at first provision", root)
	}
	h, err := b.Provision(t.Context(), backend.ProvisionRequest{WorkspaceID: "ws-1a2b", Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("root_path after the first provision: %v (%v), want a 0700 directory", fi, err)
	}
	if fi, err := os.Stat(h.Path); err != nil || !fi.IsDir() {
		t.Fatalf("workspace directory %s: %v", h.Path, err)
	}
}

func TestRejectsUnsafeIDs(t *testing.T) {
	b, _ := newBackend(t)
	ctx := t.Context()
	for _, id := range []string{"", ".", "..", "../escape", "a/b", "ws-1/../../x", "/abs", "ws-1.lock", "-rf", "ws 1", strings.Repeat("a", 200)} {
		t.Run(id, func(t *testing.T) {
			_, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: "t"})
			if !errs.Is(err, errs.Invalid) {
				t.Errorf("provision %q = %v, want invalid", id, err)
			}
			h := backend.Handle{Backend: local.Type, WorkspaceID: id}
			if err := b.Destroy(ctx, h); !errs.Is(err, errs.Invalid) {
				t.Errorf("destroy %q = %v, want invalid", id, err)
			}
		})
	}
	entries, err := os.ReadDir(b.Root())
	if err != nil || len(entries) != 0 {
		t.Errorf("root holds %v (%v) after refused ids, want nothing", entries, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(b.Root()), "escape")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("../escape was created next to the root")
	}
}

// A handle is data that came back from a database: one that points outside
// root_path must never make Destroy remove, or Endpoint serve, that path.
func TestForgedHandleRefused(t *testing.T) {
	b, host := newBackend(t)
	ctx := t.Context()
	id := backendtest.NewID(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	victim := t.TempDir()
	keep := filepath.Join(victim, "precious")
	if err := os.WriteFile(keep, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	forged := []backend.Handle{
		{Backend: local.Type, WorkspaceID: id, Path: victim},
		{Backend: local.Type, WorkspaceID: id, Path: filepath.Join(b.Root(), id, "..")},
		{Backend: local.Type, WorkspaceID: id, Path: b.Root()},
		{Backend: "worktree", WorkspaceID: id, Path: h.Path},
	}
	for _, f := range forged {
		if err := b.Destroy(ctx, f); !errs.Is(err, errs.Invalid) {
			t.Errorf("destroy %+v = %v, want invalid", f, err)
		}
		if _, err := b.Endpoint(ctx, f, "tok"); !errs.Is(err, errs.Invalid) {
			t.Errorf("endpoint %+v = %v, want invalid", f, err)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("file outside root_path: %v", err)
	}
	if _, err := os.Stat(h.Path); err != nil {
		t.Errorf("the real workspace was touched by forged destroys: %v", err)
	}
	if host.URL(id) == "" {
		t.Error("forged destroys stopped the real workspace's runtime")
	}
	// The genuine handle still destroys, and a handle without Path (from
	// an older row) is accepted.
	if err := b.Destroy(ctx, backend.Handle{Backend: local.Type, WorkspaceID: id}); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if _, err := os.Stat(h.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("workspace dir after destroy: %v", err)
	}
}

// A local workspace outlives the platform process: a new host and backend on
// the same root_path serve it again with the stored token.
func TestEndpointAfterRestart(t *testing.T) {
	root := t.TempDir()
	id, token := backendtest.NewID(t), backendtest.NewToken(t)
	ctx := t.Context()

	host1 := local.NewHost(nil)
	b1, err := local.Factory(host1, nil)(json.RawMessage(`{"kind":"local","root_path":"` + root + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	h, err := b1.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: token, Env: map[string]string{"A": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	ep1, err := b1.Endpoint(ctx, h, token)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := client.Dial(ctx, ep1.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.WriteFile(ctx, "state.txt", []byte("before restart"), 0o644); err != nil {
		t.Fatal(err)
	}
	host1.Close() // the platform stops
	if err := c1.Ping(ctx); err == nil {
		t.Error("runtime still answers after its host closed")
	}
	c1.Close()

	host2 := local.NewHost(nil)
	t.Cleanup(func() { host2.Close() })
	b2, err := local.Factory(host2, nil)(json.RawMessage(`{"kind":"local","root_path":"` + root + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !b2.Capabilities().PersistentAcrossRestart {
		t.Error("local backend does not claim PersistentAcrossRestart")
	}
	ep2, err := b2.Endpoint(ctx, h, token)
	if err != nil {
		t.Fatalf("endpoint after restart: %v", err)
	}
	c2, err := client.Dial(ctx, ep2.URL, token)
	if err != nil {
		t.Fatalf("dial after restart: %v", err)
	}
	defer c2.Close()
	if got, err := c2.ReadFile(ctx, "state.txt"); err != nil || string(got) != "before restart" {
		t.Errorf("state.txt after restart = %q, %v", got, err)
	}
	if err := b2.Destroy(ctx, h); err != nil {
		t.Fatal(err)
	}
}

func TestEndpointDirRemovedBehindOurBack(t *testing.T) {
	b, host := newBackend(t)
	ctx := t.Context()
	id := backendtest.NewID(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(h.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Endpoint(ctx, h, "tok"); !errs.Is(err, errs.NotFound) {
		t.Errorf("endpoint with the directory gone = %v, want not_found", err)
	}
	if host.URL(id) != "" {
		t.Error("runtime of a vanished directory is still served")
	}
}

func TestDestroyReadOnlyTree(t *testing.T) {
	b, _ := newBackend(t)
	ctx := t.Context()
	id, token := backendtest.NewID(t), backendtest.NewToken(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	// What `go mod download` leaves behind: read-only directories.
	ro := filepath.Join(h.Path, "a", "b")
	if err := os.MkdirAll(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "f"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{ro, filepath.Dir(ro)} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.Destroy(ctx, h); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if _, err := os.Stat(h.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("workspace dir after destroy: %v", err)
	}
}

// List returns only directories named like a workspace id the server mints:
// a user's own files and directories next to them under root_path, and
// symlinks, are never listed (whatever List returns may be destroyed).
func TestListIgnoresLookalikes(t *testing.T) {
	b, _ := newBackend(t)
	ctx := t.Context()
	id := backendtest.NewID(t)
	if _, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: "tok"}); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	for _, d := range []string{"notes", "ws-backup", "ws-1A2B", "ws-", "ses-1a2b"} {
		if err := os.Mkdir(filepath.Join(b.Root(), d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(b.Root(), "ws-abc123"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(b.Root(), "ws-def456")); err != nil {
		t.Fatal(err)
	}
	got, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].WorkspaceID != id || got[0].Objects[0] != "directory "+filepath.Join(b.Root(), id) {
		t.Errorf("List = %+v, want only %s", got, id)
	}
}

// Teardown keeps the directory, and Destroy of a handle without Path (the
// reconciler's, built from List) removes it.
func TestTeardownThenDestroyFromList(t *testing.T) {
	b, host := newBackend(t)
	ctx := t.Context()
	id := backendtest.NewID(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Teardown(ctx, h); err != nil {
		t.Fatal(err)
	}
	if host.URL(id) != "" {
		t.Error("runtime still served after teardown")
	}
	if _, err := os.Stat(h.Path); err != nil {
		t.Fatalf("directory after teardown: %v", err)
	}
	got, err := b.List(ctx)
	if err != nil || len(got) != 1 {
		t.Fatalf("List = %+v, %v", got, err)
	}
	if err := b.Destroy(ctx, backend.Handle{Backend: local.Type, WorkspaceID: got[0].WorkspaceID}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.List(ctx); err != nil || len(got) != 0 {
		t.Errorf("List after destroy = %+v, %v", got, err)
	}
}
