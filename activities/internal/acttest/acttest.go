// Package acttest builds what the tests of the workflow-specific activity
// packages (evalrun, agentrun) stand on: a real store on SQLite, the memory
// backend with real runtimes on a local host, and the workspace activities
// over them, as the activities package's own tests build it.
package acttest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/wire"
)

// Rig is a store, a memory backend and the workspace activities on them.
// Everything it starts stops when the test ends.
type Rig struct {
	Store      *models.Store
	Mem        *memory.Backend
	Backends   *backend.Registry
	Connector  *connector.Connector
	Metrics    *metrics.Metrics
	Workspaces *activities.Activities
}

// New builds a Rig with provider "mem" stored.
func New(t *testing.T) *Rig {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store, err := models.Open(ctx, models.Config{SQLitePath: filepath.Join(dir, "primer.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	host := local.NewHost(nil)
	t.Cleanup(func() { _ = host.Close() })
	mem := memory.New(host, filepath.Join(dir, "sandboxes"))
	reg := backend.NewRegistry(map[string]backend.Factory{memory.Type: mem.Factory()})
	pool := client.NewPool()
	t.Cleanup(pool.Close)
	m := metrics.New()
	conn := &connector.Connector{Store: store, Backends: reg, Pool: pool}
	ws := &activities.Activities{
		Store:        store,
		Backends:     reg,
		Connector:    conn,
		Metrics:      m,
		ProbeTimeout: 2 * time.Second,
		RuntimeWait:  3 * time.Second,
		Outbound:     LoopbackPolicy(t),
	}
	if err := store.CreateProvider(ctx, &wire.Provider{ID: "mem", Provider: memory.Type, Config: json.RawMessage(`{"kind":"memory"}`)}); err != nil {
		t.Fatal(err)
	}
	return &Rig{Store: store, Mem: mem, Backends: reg, Connector: conn, Metrics: m, Workspaces: ws}
}

// Workspace creates a template with the given backend document and a
// pending workspace from it.
func (r *Rig) Workspace(t *testing.T, id, tmplDoc string) *wire.Workspace {
	t.Helper()
	ctx := context.Background()
	tmplID := "tmpl-" + id
	if err := r.Store.CreateTemplate(ctx, &wire.Template{ID: tmplID, ProviderID: "mem", Backend: json.RawMessage(tmplDoc)}); err != nil {
		t.Fatal(err)
	}
	ws := &wire.Workspace{ID: id, TemplateID: tmplID, ProviderID: "mem", Backend: memory.Type, Phase: wire.PhasePending}
	if err := r.Store.CreateWorkspace(ctx, ws); err != nil {
		t.Fatal(err)
	}
	return ws
}

// LoopbackPolicy allows 127.0.0.1, where the test model servers and
// webhook receivers listen.
func LoopbackPolicy(t *testing.T) *outbound.Policy {
	t.Helper()
	p, err := outbound.Parse("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return p
}
