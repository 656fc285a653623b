package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tclient "go.temporal.io/sdk/client"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/starter"
	"github.com/primerhq/primer/wire"
)

// apiError is the error envelope of a refused request.
type apiError struct {
	Error struct {
		Code    string            `json:"code"`
		Message string            `json:"message"`
		Details map[string]string `json:"details"`
	} `json:"error"`
}

// refused asserts a refusal's code, field (when not empty) and message.
func (e apiError) refused(t *testing.T, what, code, field, msg string) {
	t.Helper()
	if e.Error.Code != code || (field != "" && e.Error.Details["field"] != field) || !strings.Contains(e.Error.Message, msg) {
		t.Errorf("%s: refused with %+v; want code %s, field %q, a message saying %q", what, e.Error, code, field, msg)
	}
}

// storedKey makes a key of tenant with role straight in the store.
func storedKey(t *testing.T, store *models.Store, tenant, role string) string {
	t.Helper()
	id, key, hash := models.NewAPIKey()
	if err := store.CreateAPIKey(context.Background(), &wire.APIKey{ID: id, TenantID: tenant, Role: role, Hash: hash, Name: role + " of " + tenant}); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestAttackTemplates is issue 21's holes 1 and 7 driven through the real
// platform (Temporal, Docker, the local backend) with member keys:
//
//   - hole 1, at the API: a member moving its docker template onto a local
//     provider, or editing the reserved default template's init, is
//     refused (403) and the template stays as it was;
//   - hole 1, underneath: with the member's template row forced onto local
//     in the store (a row from before the rule, or written by any other
//     path), the member's pool refill, the schedule of its eval suite and a
//     recovery of its workspace never run the template's init on the host:
//     the marker file never appears, and each fails saying the host rule;
//   - hole 7: a member raising its template's CPU over the tenant's quota
//     is refused (429 naming spec.backend.cpu_cores); with the raise forced
//     in the store, `recover` is refused by the quota and no container runs
//     with 64 cores (docker inspect).
//
// Fails on main before the rule: the PUTs answer 200 and the recovery, the
// pool and the run provision from the local template (the marker appears).
func TestAttackTemplates(t *testing.T) {
	e := containertest.Known()[0]
	containertest.Require(t, e)
	p := startPrimer(t, withContainers(t), withProbeInterval(200*time.Millisecond))
	ctx := ctxT(t, 10*time.Minute)
	store := p.srv.Store()
	eng := containertest.Backend(t, e)
	h := &recorder{t: t, url: p.srv.URL()}

	if err := store.CreateTenant(ctx, &wire.Tenant{ID: "acme", Quota: wire.Quota{MaxCPUCores: 3, MaxMemoryBytes: 4 << 30}}); err != nil {
		t.Fatal(err)
	}
	// acme has a quota (hole 7); beta none, so its workspaces are refused
	// by the host rule alone (hole 1).
	if err := store.CreateTenant(ctx, &wire.Tenant{ID: "beta"}); err != nil {
		t.Fatal(err)
	}
	member := storedKey(t, store, "acme", wire.RoleMember)
	betaMember := storedKey(t, store, "beta", wire.RoleMember)
	defaultMember := storedKey(t, store, wire.DefaultTenantID, wire.RoleMember)
	api := client.New(p.srv.URL(), client.WithToken(member), p.checked)
	betaAPI := client.New(p.srv.URL(), client.WithToken(betaMember), p.checked)

	// The admin's shared providers: Docker, and a local one whose root is
	// on this machine.
	hostRoot := t.TempDir()
	h.do(p.key, "POST", "/v1/providers", map[string]any{"id": "docker-shared", "provider": "container",
		"config": containertest.ProviderConfig(e), "shared": true}, 201, nil)
	h.do(p.key, "POST", "/v1/providers", map[string]any{"id": "host-shared", "provider": "local",
		"config": map[string]string{"kind": "local", "root_path": hostRoot}, "shared": true}, 201, nil)
	markers := t.TempDir()
	marker := func(name string) string { return filepath.Join(markers, name) }
	onHost := func(name string) json.RawMessage {
		return raw(`{"kind":"local","init":["touch ` + marker(name) + `"]}`)
	}
	box := func(cpu string) json.RawMessage {
		return raw(`{"kind":"container","image":"` + containertest.BusyboxImage + `","cpu_cores":` + cpu + `,"memory_bytes":268435456}`)
	}
	cleanupContainer := func(id string) {
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, _ = p.api.DeleteWorkspace(cctx, id)
			_ = p.api.WaitGone(cctx, id, nil)
		})
	}
	running := func(api *client.Client, template string) *wire.Workspace {
		t.Helper()
		ws, err := api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: template})
		if err != nil {
			t.Fatalf("member create from %s: %v", template, err)
		}
		cleanupContainer(ws.ID)
		if ws, err = api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil); err != nil {
			t.Fatalf("wait %s running: %v", ws.ID, err)
		}
		return ws
	}
	// killAndRecover kills ws's container from outside, waits for it to
	// fail, asks for a recovery with the member's key and returns the
	// workspace once the recovery gave up (escalated).
	killAndRecover := func(api *client.Client, ws *wire.Workspace) *wire.Workspace {
		t.Helper()
		if err := eng.Client().ContainerKill(ctx, container.Name(ws.ID), "KILL"); err != nil {
			t.Fatal(err)
		}
		if _, err := api.WaitWorkspace(ctx, ws.ID, wire.PhaseFailed, nil); err != nil {
			t.Fatalf("wait %s failed: %v", ws.ID, err)
		}
		if _, err := api.RecoverWorkspace(ctx, ws.ID); err != nil {
			t.Fatalf("recover %s: %v", ws.ID, err)
		}
		got, err := api.WaitWorkspace(ctx, ws.ID, wire.PhaseEscalated, nil)
		if err != nil {
			t.Fatalf("wait %s escalated after the refused recovery: %v", ws.ID, err)
		}
		return got
	}
	// eventsSay reports whether one of ws's events carries msg.
	eventsSay := func(id, msg string) bool {
		evs, err := store.ListEvents(ctx, id, 0, 0)
		if err != nil {
			return false
		}
		for _, ev := range evs {
			if strings.Contains(string(ev.Data), msg) {
				return true
			}
		}
		return false
	}
	const hostRule = "on host backend local and its last write was not an admin's"

	t.Run("QuotaRaiseThenRecover", func(t *testing.T) {
		h := &recorder{t: t, url: p.srv.URL()}
		if _, err := api.CreateTemplate(ctx, wire.TemplateSpec{ID: "q", ProviderID: "docker-shared", Backend: box("1")}); err != nil {
			t.Fatal(err)
		}
		ws := running(api, "q")
		var refusal apiError
		h.do(member, "PUT", "/v1/templates/q", map[string]any{"provider_id": "docker-shared", "backend": box("64")}, 429, &refusal)
		refusal.refused(t, "member raises cpu_cores to 64", "resource_exhausted", "spec.backend.cpu_cores", "quota max_cpu_cores: limit 3")
		if got, err := api.GetTemplate(ctx, "q"); err != nil || got.Generation != 1 {
			t.Fatalf("template after the refused raise: %+v, %v; want generation 1", got, err)
		}
		// The raise forced underneath: a recovery reads the template as it
		// is now, and the quota refuses it.
		if err := store.UpdateTemplate(ctx, &wire.Template{ID: "q", ProviderID: "docker-shared", Backend: box("64")}); err != nil {
			t.Fatal(err)
		}
		got := killAndRecover(api, ws)
		if !strings.Contains(got.Reason, "quota max_cpu_cores") && !eventsSay(ws.ID, "quota max_cpu_cores: limit 3") {
			t.Errorf("escalated %s (%q) without the quota's reason in its reason or events", ws.ID, got.Reason)
		}
		if info, err := eng.Client().ContainerInspect(ctx, container.Name(ws.ID)); err == nil && info.HostConfig.NanoCPUs >= 64e9 {
			t.Errorf("container %s runs with %d nano CPUs after the refused recovery", info.ID, info.HostConfig.NanoCPUs)
		}
		if w, err := store.GetWorkspace(ctx, ws.ID); err != nil || w.CPUCores != 1 {
			t.Errorf("recorded limits after the refusal: %+v, %v; want 1 core", w, err)
		}
		if _, err := api.DeleteWorkspace(ctx, ws.ID); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("PutOntoLocal", func(t *testing.T) {
		h := &recorder{t: t, url: p.srv.URL()}
		if _, err := api.CreateTemplate(ctx, wire.TemplateSpec{ID: "put", ProviderID: "docker-shared", Backend: box("0.5")}); err != nil {
			t.Fatal(err)
		}
		var refusal apiError
		h.do(member, "PUT", "/v1/templates/put", map[string]any{"provider_id": "host-shared", "backend": onHost("put")}, 403, &refusal)
		refusal.refused(t, "member moves its template onto local", "forbidden", "spec.provider_id", "only an admin may put a template on it")
		if got, err := api.GetTemplate(ctx, "put"); err != nil || got.ProviderID != "docker-shared" || got.Generation != 1 {
			t.Errorf("template after the refused move: %+v, %v", got, err)
		}
	})

	t.Run("DefaultTemplateInit", func(t *testing.T) {
		h := &recorder{t: t, url: p.srv.URL()}
		before, err := p.api.GetTemplate(ctx, wire.DefaultTemplateID)
		if err != nil {
			t.Fatal(err)
		}
		var refusal apiError
		h.do(defaultMember, "PUT", "/v1/templates/"+wire.DefaultTemplateID,
			map[string]any{"provider_id": wire.LocalProviderID, "backend": onHost("default")}, 403, &refusal)
		refusal.refused(t, "member edits the default template's init", "forbidden", "", "template default: reserved")
		after, err := p.api.GetTemplate(ctx, wire.DefaultTemplateID)
		if err != nil || after.Generation != before.Generation || string(after.Backend) != string(before.Backend) {
			t.Errorf("default template after the refused edit: %+v, %v; was %+v", after, err, before)
		}
		// An admin's workspace of it still runs: the seed is the admin's.
		ws, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil); err != nil {
			t.Errorf("admin's workspace of the default template: %v", err)
		}
		_, _ = p.api.DeleteWorkspace(ctx, ws.ID)
	})

	t.Run("RowForcedOntoLocal", func(t *testing.T) {
		h := &recorder{t: t, url: p.srv.URL()}
		if _, err := betaAPI.CreateTemplate(ctx, wire.TemplateSpec{ID: "box", ProviderID: "docker-shared", Backend: box("0.25")}); err != nil {
			t.Fatal(err)
		}
		ws := running(betaAPI, "box")
		if _, err := betaAPI.CreatePool(ctx, wire.PoolSpec{ID: "boxpool", TemplateID: "box", Size: 1}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "the member's pool has a running member", func() bool {
			ms, err := store.ListWorkspaces(ctx, models.WorkspaceFilter{PoolID: "boxpool", Phase: wire.PhaseRunning})
			return err == nil && len(ms) == 1
		})
		h.do(betaMember, "POST", "/v1/suites", map[string]any{"id": "boxsuite", "template_id": "box",
			"schedule": map[string]any{"cron": "0 0 1 1 *"}, "cases": []map[string]any{{"id": "a", "command": "true"}}}, 201, nil)

		// The member's template, moved onto the local provider underneath
		// the API with an init that leaves a marker on this machine.
		if err := store.UpdateTemplate(ctx, &wire.Template{ID: "box", ProviderID: "host-shared", Backend: onHost("box")}); err != nil {
			t.Fatal(err)
		}

		// Recover: the replacement is refused.
		got := killAndRecover(betaAPI, ws)
		if !strings.Contains(got.Reason, hostRule) && !eventsSay(ws.ID, hostRule) {
			t.Errorf("escalated %s (%q) without the host rule in its reason or events", ws.ID, got.Reason)
		}

		// Pool refill: the template changed, so the pool makes a member
		// of the new one, whose provisioning is refused.
		eventually(t, 2*time.Minute, "a refill on the forced template refused by the host rule", func() bool {
			ms, err := store.ListWorkspaces(ctx, models.WorkspaceFilter{PoolID: "boxpool", Backend: wire.BackendLocal})
			if err != nil {
				return false
			}
			for _, m := range ms {
				if eventsSay(m.ID, hostRule) {
					return true
				}
			}
			return false
		})

		// The suite's schedule fires (as its cron would): the run's
		// workspace is refused and the run fails.
		if err := p.srv.TemporalClient().ScheduleClient().GetHandle(ctx, starter.ScheduleID("boxsuite")).Trigger(ctx, tclient.ScheduleTriggerOptions{}); err != nil {
			t.Fatal(err)
		}
		var run wire.Run
		eventually(t, 4*time.Minute, "the scheduled run ends", func() bool {
			runs, err := store.ListRuns(ctx, models.RunFilter{SuiteID: "boxsuite"})
			if err != nil || len(runs) == 0 {
				return false
			}
			run = runs[0]
			return run.Status == wire.RunFailed || run.Status == wire.RunSucceeded
		})
		results, err := store.ListCaseResults(ctx, run.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		// The run ends (its status says it ran to its end); its one case
		// never ran: an infrastructure error naming the host rule.
		if len(results) != 1 || results[0].Verdict != "error" || !strings.Contains(results[0].Reason, hostRule) {
			t.Errorf("scheduled run %s (%s): results %+v; want the case errored by the host rule", run.ID, run.Status, results)
		}

		_, _ = betaAPI.DeletePool(ctx, "boxpool")
	})

	// Nothing ran on the host: no init of a forced template left its
	// marker, and no workspace directory was made under the local root.
	for _, name := range []string{"put", "default", "box"} {
		if _, err := os.Stat(marker(name)); err == nil {
			t.Errorf("the %s template's init ran on the Primer host (%s exists)", name, marker(name))
		}
	}
	if entries, _ := os.ReadDir(hostRoot); len(entries) > 0 {
		t.Errorf("workspaces were made on the host under %s: %v", hostRoot, entries)
	}
}
