package activities

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// hostRig is a rig whose provider "host" is of the local type (served by
// the memory backend, whose commands run on this machine like local's):
// what the host rule guards.
func hostRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t)
	reg := backend.NewRegistry(map[string]backend.Factory{memory.Type: r.mem.Factory(), wire.BackendLocal: r.mem.Factory()})
	r.a.Backends = reg
	r.a.Connector.Backends = reg
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.store.CreateProvider(ctx, &wire.Provider{ID: "host", Provider: wire.BackendLocal}))
	must(r.store.CreateTenant(ctx, &wire.Tenant{ID: "acme"}))
	return r
}

// markerInit is a template document whose init leaves a file at marker
// on this machine.
func markerInit(marker string) string {
	return `{"kind":"memory","init":["touch ` + marker + `"]}`
}

// TestProvisionHostRule: a workspace on a host backend is provisioned only
// from a template an admin wrote last and when an admin asked for it
// (directly or through an admin's pool or suite), and only from its own
// tenant's template unless an admin asked; the rows decide at provision
// time, however they were written. A refusal is final (Forbidden, not
// retried), makes nothing (no sandbox, no token, the init never runs) and
// says why.
func TestProvisionHostRule(t *testing.T) {
	for _, tc := range []struct {
		name         string
		provider     string // of the template and the workspace
		tmplTenant   string
		adminWritten bool
		byAdmin      bool
		wantErr      string // "" provisions
	}{
		{"admin's template, admin's workspace", "host", "", true, true, ""},
		{"member's template (or one from before the rule)", "host", "", false, true, "its last write was not an admin's"},
		{"admin's template, member's workspace", "host", "", true, false, "the workspace was not made by an admin"},
		{"neither", "host", "", false, false, "its last write was not an admin's"},
		{"not host: a member's row is fine", "mem", "", false, false, ""},
		{"another tenant's template", "mem", "acme", false, false, "template tmpl-x belongs to another tenant"},
		{"another tenant's template, admin's workspace", "mem", "acme", false, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := hostRig(t)
			ctx := context.Background()
			marker := filepath.Join(t.TempDir(), "ran-on-host")
			if err := r.store.CreateTemplate(ctx, &wire.Template{ID: "tmpl-x", TenantID: tc.tmplTenant, ProviderID: tc.provider,
				Backend: json.RawMessage(markerInit(marker)), AdminWritten: tc.adminWritten}); err != nil {
				t.Fatal(err)
			}
			kind := memory.Type
			if tc.provider == "host" {
				kind = wire.BackendLocal
			}
			ws := &wire.Workspace{ID: "ws-x", TemplateID: "tmpl-x", ProviderID: tc.provider, Backend: kind,
				Phase: wire.PhasePending, ByAdmin: tc.byAdmin}
			if err := r.store.CreateWorkspace(ctx, ws); err != nil {
				t.Fatal(err)
			}
			_, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: ws.ID})
			_, statErr := os.Stat(marker)
			if tc.wantErr == "" {
				if err != nil || statErr != nil {
					t.Fatalf("Provision = %v, marker: %v; want provisioned and init run", err, statErr)
				}
				return
			}
			appError(t, err, errs.Forbidden.String(), false)
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Provision error %q does not say %q", err, tc.wantErr)
			}
			if statErr == nil {
				t.Errorf("the template's init ran on the host (%s exists)", marker)
			}
			if r.mem.Provisioned(ws.ID) {
				t.Errorf("a sandbox was made for %s", ws.ID)
			}
			if got, _ := r.store.GetWorkspace(ctx, ws.ID); got.RuntimeToken != "" || len(got.Handle) > 0 && string(got.Handle) != "null" {
				t.Errorf("refused workspace has a token or handle: %+v", got)
			}
		})
	}
}

// TestHostRuleAfterUpdate: a template rewritten underneath a running
// workspace (a member's update, or a row from before the rule) is not run
// on the host by a replacement (recovery) or a pool return's reset.
func TestHostRuleAfterUpdate(t *testing.T) {
	for _, step := range []string{"replace", "reset"} {
		t.Run(step, func(t *testing.T) {
			r := hostRig(t)
			ctx := context.Background()
			dir := t.TempDir()
			tmpl := &wire.Template{ID: "tmpl-x", ProviderID: "host", Backend: json.RawMessage(markerInit(filepath.Join(dir, "first"))), AdminWritten: true}
			if err := r.store.CreateTemplate(ctx, tmpl); err != nil {
				t.Fatal(err)
			}
			if err := r.store.CreatePool(ctx, &wire.Pool{ID: "warm", TemplateID: "tmpl-x", Size: 1, AdminWritten: true}); err != nil {
				t.Fatal(err)
			}
			ws := &wire.Workspace{ID: "ws-x", TemplateID: "tmpl-x", ProviderID: "host", Backend: wire.BackendLocal,
				Phase: wire.PhasePending, ByAdmin: true, PoolID: "warm", PoolState: wire.PoolReturning}
			if err := r.store.CreateWorkspace(ctx, ws); err != nil {
				t.Fatal(err)
			}
			out, err := r.a.Provision(ctx, ProvisionInput{WorkspaceID: ws.ID})
			if err != nil {
				t.Fatal(err)
			}
			// A member's write: new init, AdminWritten false.
			second := filepath.Join(dir, "second")
			tmpl.Backend, tmpl.AdminWritten = json.RawMessage(markerInit(second)), false
			if err := r.store.UpdateTemplate(ctx, tmpl); err != nil {
				t.Fatal(err)
			}
			if step == "replace" {
				_, err = r.a.Replace(ctx, ReplaceInput{WorkspaceID: ws.ID, Handle: &out.Handle})
			} else {
				_, err = r.a.Reset(ctx, ResetInput{WorkspaceID: ws.ID})
			}
			appError(t, err, errs.Forbidden.String(), false)
			if !strings.Contains(err.Error(), "its last write was not an admin's") {
				t.Errorf("%s error %q does not name the host rule", step, err)
			}
			if _, err := os.Stat(second); err == nil {
				t.Errorf("%s ran the rewritten init on the host", step)
			}
		})
	}
}

// TestProvisionQuotaOnTemplateNow: provisioning and replacing read the
// template as it is then, and its limits are checked against the tenant's
// quota then: a template raised to 64 cores after the workspace was made
// is refused (final, Invalid, naming the quota) before anything is made.
func TestProvisionQuotaOnTemplateNow(t *testing.T) {
	for _, step := range []string{"provision", "replace"} {
		t.Run(step, func(t *testing.T) {
			r := hostRig(t)
			ctx := context.Background()
			if _, err := r.store.UpdateTenant(ctx, &wire.Tenant{ID: "acme", Quota: wire.Quota{MaxCPUCores: 2, MaxMemoryBytes: 1 << 30}}); err != nil {
				t.Fatal(err)
			}
			tmpl := &wire.Template{ID: "tmpl-q", TenantID: "acme", ProviderID: "mem", Backend: json.RawMessage(`{"kind":"memory"}`)}
			if err := r.store.CreateTemplate(ctx, tmpl); err != nil {
				t.Fatal(err)
			}
			ws := &wire.Workspace{ID: "ws-q", TenantID: "acme", TemplateID: "tmpl-q", ProviderID: "mem", Backend: memory.Type,
				Phase: wire.PhasePending, CPUCores: 1, MemoryBytes: 256 << 20}
			if err := r.store.CreateWorkspace(ctx, ws); err != nil {
				t.Fatal(err)
			}
			tmpl.Backend = json.RawMessage(`{"kind":"memory","cpu_cores":64,"memory_bytes":268435456}`)
			if err := r.store.UpdateTemplate(ctx, tmpl); err != nil {
				t.Fatal(err)
			}
			var err error
			if step == "provision" {
				_, err = r.a.Provision(ctx, ProvisionInput{WorkspaceID: ws.ID})
			} else {
				_, err = r.a.Replace(ctx, ReplaceInput{WorkspaceID: ws.ID})
			}
			appError(t, err, errs.Invalid.String(), false)
			if want := "quota max_cpu_cores: limit 2, in use 0, requested 64"; !strings.Contains(err.Error(), want) {
				t.Errorf("%s error %q does not say %q", step, err, want)
			}
			if r.mem.Provisioned(ws.ID) {
				t.Errorf("a sandbox was made with the refused limits")
			}
			if got, _ := r.store.GetWorkspace(ctx, ws.ID); got.CPUCores != 1 {
				t.Errorf("recorded cpu = %v after the refusal, want 1", got.CPUCores)
			}
		})
	}
}
