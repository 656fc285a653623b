package activities

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// A pending row older than the grace with no handle gets its workflow
// started by the reconciler; a young one (a create in flight), a
// provisioned one and a running one do not.
func TestReconcileAdoptsPendingRowsWithoutWorkflow(t *testing.T) {
	r := newPoolRig(t, 1)
	old := time.Now().Add(-time.Minute)
	rows := map[string]*wire.Workspace{
		"cut-off":     {Phase: wire.PhasePending, CreatedAt: old},
		"in-flight":   {Phase: wire.PhasePending},
		"provisioned": {Phase: wire.PhasePending, CreatedAt: old, Handle: json.RawMessage(`{"backend":"memory","workspace_id":"x"}`)},
		"running":     {Phase: wire.PhaseRunning, CreatedAt: old},
	}
	ids := map[string]string{}
	for name, w := range rows {
		w.ID, w.TemplateID, w.ProviderID, w.Backend = models.NewID("ws"), "pt", "mem", "memory"
		w.WorkflowID = "workspace-" + w.ID
		if err := r.store.CreateWorkspace(r.ctx, w); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ids[name] = w.ID
	}
	out, err := r.a.Reconcile(r.ctx, ReconcileInput{Grace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Adopted, []string{ids["cut-off"]}) || !slices.Equal(r.lc.adopted, []string{ids["cut-off"]}) {
		t.Fatalf("adopted %v (asked %v), want only the cut-off create %s", out.Adopted, r.lc.adopted, ids["cut-off"])
	}
}
