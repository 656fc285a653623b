package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

func newBackend(t *testing.T) *memory.Backend {
	t.Helper()
	host := local.NewHost(nil)
	t.Cleanup(func() { host.Close() })
	return memory.New(host, t.TempDir())
}

func TestConformance(t *testing.T) {
	var current *memory.Backend
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backend.Backend {
			current = newBackend(t)
			return current
		},
		Template: json.RawMessage(`{"kind":"memory"}`),
		Gone: func(t *testing.T, h backend.Handle) bool {
			_, err := os.Stat(h.Path)
			return errors.Is(err, fs.ErrNotExist) && !current.Provisioned(h.WorkspaceID)
		},
		Timeout:       30 * time.Second,
		HostProcesses: true,
	})
}

// TestConformanceWithSnapshots runs the suite, its snapshot and pause
// cases included, on the memory backend with snapshots.
func TestConformanceWithSnapshots(t *testing.T) {
	var current *memory.Backend
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backend.Backend {
			current = newBackend(t)
			return current.WithSnapshots()
		},
		Template: json.RawMessage(`{"kind":"memory"}`),
		Gone: func(t *testing.T, h backend.Handle) bool {
			_, err := os.Stat(h.Path)
			return errors.Is(err, fs.ErrNotExist) && !current.Provisioned(h.WorkspaceID)
		},
		Stopped: func(t *testing.T, h backend.Handle) bool { return current.Paused(h.WorkspaceID) },
		SnapshotGone: func(t *testing.T, ref backend.SnapshotRef) bool {
			_, err := os.Stat(ref.Ref)
			return errors.Is(err, fs.ErrNotExist)
		},
		Timeout:       30 * time.Second,
		HostProcesses: true,
	})
}

// probe is what the workflow's probe does: endpoint, dial, ping.
func probe(ctx context.Context, b backend.Backend, h backend.Handle, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ep, err := b.Endpoint(ctx, h, token)
	if err != nil {
		return err
	}
	c, err := client.Dial(ctx, ep.URL, token)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Ping(ctx)
}

func TestFailProvision(t *testing.T) {
	b := newBackend(t)
	ctx := t.Context()
	boom := errs.E(errs.Unavailable, "memory: injected failure")
	b.FailProvision(boom)
	for range 2 { // every provision fails until cleared
		_, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: "ws-1", Token: "t"})
		if !errors.Is(err, boom) || !errs.Is(err, errs.Unavailable) {
			t.Fatalf("provision = %v, want the injected error", err)
		}
	}
	if b.Count() != 0 || b.Provisioned("ws-1") {
		t.Errorf("failed provision left a sandbox: count %d", b.Count())
	}
	b.FailProvision(nil)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: "ws-1", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Count() != 1 || !b.Provisioned("ws-1") {
		t.Errorf("after provision: count %d, provisioned %v", b.Count(), b.Provisioned("ws-1"))
	}
	if err := probe(ctx, b, h, "t"); err != nil {
		t.Errorf("probe: %v", err)
	}
}

func TestFailDestroy(t *testing.T) {
	b := newBackend(t)
	ctx := t.Context()
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: "ws-2", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("injected")
	b.FailDestroy(boom)
	if err := b.Destroy(ctx, h); !errors.Is(err, boom) {
		t.Fatalf("destroy = %v, want the injected error", err)
	}
	if !b.Provisioned("ws-2") || probe(ctx, b, h, "t") != nil {
		t.Error("a failed destroy removed the sandbox")
	}
	b.FailDestroy(nil)
	if err := b.Destroy(ctx, h); err != nil || b.Provisioned("ws-2") || b.Count() != 0 {
		t.Errorf("destroy = %v, provisioned %v, count %d", err, b.Provisioned("ws-2"), b.Count())
	}
}

func TestKillRevive(t *testing.T) {
	b := newBackend(t)
	ctx := t.Context()
	id, token := backendtest.NewID(t), backendtest.NewToken(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: token, Env: map[string]string{"FOO": "env"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), h) })
	ep, err := b.Endpoint(ctx, h, token)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(ctx, ep.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WriteFile(ctx, "f", []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}

	b.Kill(id)
	if err := probe(ctx, b, h, token); err == nil {
		t.Fatal("probe of a killed runtime hit")
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.Ping(pctx); err == nil {
		t.Error("a connection to a killed runtime still answers")
	}
	if ep2, err := b.Endpoint(ctx, h, token); err != nil || ep2.URL != ep.URL {
		t.Errorf("endpoint of a killed runtime = %+v, %v; want %s", ep2, err, ep.URL)
	}
	if !b.Provisioned(id) {
		t.Error("kill removed the sandbox")
	}

	if err := b.Revive(id); err != nil {
		t.Fatal(err)
	}
	if err := probe(ctx, b, h, token); err != nil {
		t.Fatalf("probe after revive: %v", err)
	}
	c2, err := client.Dial(ctx, ep.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got, err := c2.ReadFile(ctx, "f"); err != nil || string(got) != "kept" {
		t.Errorf("file after revive = %q, %v", got, err)
	}
	res, err := c2.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $FOO"}}, nil, nil)
	if err != nil || string(res.Stdout) != "env\n" {
		t.Errorf("env after revive = %q, %v", res.Stdout, err)
	}

	// Knobs on unknown ids are harmless.
	b.Kill("ws-unknown")
	if err := b.Revive("ws-unknown"); !errs.Is(err, errs.NotFound) {
		t.Errorf("revive unknown = %v, want not_found", err)
	}
}

func TestFactory(t *testing.T) {
	b := newBackend(t)
	reg := backend.NewRegistry(map[string]backend.Factory{"memory": b.Factory()})
	got, err := reg.For(&wire.Provider{ID: "mem", Provider: "memory", Config: json.RawMessage(`{"kind":"memory"}`)})
	if err != nil || got != backend.Backend(b) {
		t.Fatalf("registry For = %v, %v; want the same backend", got, err)
	}
	for _, cfg := range []string{`{"kind":"local"}`, `{"kind":"memory","x":1}`, `[`} {
		if _, err := b.Factory()(json.RawMessage(cfg)); !errs.Is(err, errs.Invalid) {
			t.Errorf("factory(%s) = %v, want invalid", cfg, err)
		}
	}
	if _, err := b.Factory()(nil); err != nil {
		t.Errorf("factory(empty) = %v", err)
	}
}

func TestTeardownKnobs(t *testing.T) {
	b := newBackend(t)
	ctx := t.Context()
	id, token := backendtest.NewID(t), backendtest.NewToken(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("injected")
	b.FailTeardown(boom)
	if err := b.Teardown(ctx, h); !errors.Is(err, boom) {
		t.Fatalf("teardown = %v, want the injected error", err)
	}
	if b.Teardowns(id) != 0 || probe(ctx, b, h, token) != nil {
		t.Error("a failed teardown tore down")
	}
	b.FailTeardown(nil)

	// A killed runtime (the stale case) is torn down and replaced.
	b.Kill(id)
	for range 2 {
		if err := b.Teardown(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	if b.Teardowns(id) != 1 {
		t.Errorf("Teardowns = %d after two teardowns in a row, want 1", b.Teardowns(id))
	}
	if _, err := b.Endpoint(ctx, h, token); !errs.Is(err, errs.NotFound) {
		t.Errorf("endpoint of a torn down sandbox = %v, want not_found", err)
	}
	if listed, err := b.List(ctx); err != nil || len(listed) != 1 || listed[0].WorkspaceID != id {
		t.Errorf("List = %+v, %v; want the torn down sandbox", listed, err)
	}
	token2 := backendtest.NewToken(t)
	if _, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: token2}); err != nil {
		t.Fatal(err)
	}
	if err := probe(ctx, b, h, token2); err != nil {
		t.Errorf("probe of the replacement: %v", err)
	}
	if b.Teardowns(id) != 1 {
		t.Errorf("Teardowns = %d after the replacement, want 1", b.Teardowns(id))
	}
}
