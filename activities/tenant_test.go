package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// tenantLifecycle creates rows in the tenant the request names, as
// starter.Starter does, and records the requests.
type tenantLifecycle struct {
	fakeLifecycle
	mu   sync.Mutex
	reqs []CreateWorkspaceRequest
}

func (l *tenantLifecycle) CreateWorkspace(ctx context.Context, req CreateWorkspaceRequest) (*wire.Workspace, error) {
	l.mu.Lock()
	l.reqs = append(l.reqs, req)
	l.mu.Unlock()
	w := &wire.Workspace{ID: models.NewID("ws"), TenantID: req.TenantID, TemplateID: req.TemplateID, ProviderID: "mem",
		Backend: memory.Type, Phase: wire.PhaseRunning, Labels: req.Labels, PoolID: req.PoolID}
	if req.PoolID != "" {
		w.PoolState = wire.PoolIdle
	}
	if err := l.store.CreateWorkspace(ctx, w); err != nil {
		return nil, err
	}
	return w, nil
}

// A pool refills in its own tenant; at the tenant's quota it stays short:
// the pass succeeds (no retry storm) with one warning, and fills up once
// the tenant has room again.
func TestPoolRefillAtQuota(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	var logs bytes.Buffer
	r.a.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	lc := &tenantLifecycle{fakeLifecycle: fakeLifecycle{store: r.store}}
	r.a.Lifecycle = lc
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.store.CreateTenant(ctx, &wire.Tenant{ID: "acme", Quota: wire.Quota{MaxWorkspaces: 3}}))
	must(r.store.CreateTemplate(ctx, &wire.Template{ID: "pt", TenantID: "acme", ProviderID: "mem", Backend: json.RawMessage(`{"kind":"memory"}`)}))
	must(r.store.CreatePool(ctx, &wire.Pool{ID: "warm", TenantID: "acme", TemplateID: "pt", Size: 5}))

	for _, tc := range []struct {
		name        string
		wantCreated int
		wantWarns   int
	}{
		{"first pass fills to the quota", 3, 1},
		{"second pass still short", 0, 1},
	} {
		logs.Reset()
		out, err := r.a.ReconcilePool(ctx, ReconcilePoolInput{PoolID: "warm"})
		if err != nil {
			t.Fatalf("%s: pass failed: %v", tc.name, err)
		}
		if out.Created != tc.wantCreated {
			t.Errorf("%s: created %d, want %d", tc.name, out.Created, tc.wantCreated)
		}
		if n := strings.Count(logs.String(), "tenant quota reached"); n != tc.wantWarns {
			t.Errorf("%s: %d quota warnings, want %d:\n%s", tc.name, n, tc.wantWarns, logs.String())
		}
		if !strings.Contains(logs.String(), "tenant acme: quota max_workspaces: limit 3, in use 3") {
			t.Errorf("%s: the warning does not name the quota:\n%s", tc.name, logs.String())
		}
	}
	for _, req := range lc.reqs {
		if req.TenantID != "acme" {
			t.Errorf("pool create asked for tenant %q, want acme", req.TenantID)
		}
	}

	// The tenant gets room: the next pass fills up to the pool's size.
	if _, err := r.store.UpdateTenant(ctx, &wire.Tenant{ID: "acme", Quota: wire.Quota{MaxWorkspaces: 5}}); err != nil {
		t.Fatal(err)
	}
	out, err := r.a.ReconcilePool(ctx, ReconcilePoolInput{PoolID: "warm"})
	if err != nil || out.Created != 2 {
		t.Errorf("pass after the quota grew = %+v, %v; want 2 created", out, err)
	}
}
