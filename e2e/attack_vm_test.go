package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/vm/vmtest"
	"github.com/primerhq/primer/wire"
)

// vmAnswer is a raw API answer: its status and error envelope.
type vmAnswer struct {
	Status int
	Body   string
	Error  struct {
		Code    string            `json:"code"`
		Message string            `json:"message"`
		Details map[string]string `json:"details"`
	} `json:"error"`
}

// vmCall sends body (JSON) with key and returns the answer.
func vmCall(t *testing.T, p *primer, key, method, path string, body any) vmAnswer {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, p.srv.URL()+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := vmAnswer{Status: resp.StatusCode, Body: string(b)}
	_ = json.Unmarshal(b, &a)
	return a
}

// vmTenantMember makes tenant id and a member key of it (as the admin) and
// returns the key.
func vmTenantMember(t *testing.T, p *primer, id string) string {
	t.Helper()
	if a := vmCall(t, p, p.key, "POST", "/v1/tenants", map[string]any{"id": id}); a.Status != http.StatusCreated {
		t.Fatalf("create tenant %s: %d %s", id, a.Status, a.Body)
	}
	a := vmCall(t, p, p.key, "POST", "/v1/apikeys", map[string]any{"tenant_id": id, "role": "member", "name": id + " member"})
	var k struct {
		Key string `json:"key"`
	}
	if a.Status != http.StatusCreated || json.Unmarshal([]byte(a.Body), &k) != nil || k.Key == "" {
		t.Fatalf("create member key: %d", a.Status)
	}
	return k.Key
}

// vmSharedProvider has the admin make a shared vm provider on host (what a
// member may not make: key files and known_hosts are the platform host's)
// with extra config fields.
func vmSharedProvider(t *testing.T, p *primer, id string, host *vmtest.Host, extra map[string]any) map[string]any {
	t.Helper()
	config := map[string]any{"kind": "vm", "connection": host.Connection(t), "hosts": []map[string]any{{"address": host.Addr}}}
	for k, v := range extra {
		config[k] = v
	}
	spec := map[string]any{"id": id, "provider": "vm", "config": config, "shared": true}
	if a := vmCall(t, p, p.key, "POST", "/v1/providers", spec); a.Status != http.StatusCreated {
		t.Fatalf("admin: create shared provider %s: %d %s", id, a.Status, a.Body)
	}
	return spec
}

// vmHostFiles is what root could be made to change through a link: the
// account files and root's home, owners, modes and contents.
const vmHostFiles = `stat -c '%n %U %G %a' /etc/passwd /etc/shadow /root; sha256sum /etc/passwd /etc/shadow; ls -A /root`

// TestAttackVMLinkAsRoot is issue 21 hole 5 (links): a member runs two
// workspaces of one template, so of one user on the shared host, and a
// daemon in the first (its environment cleared, so the second's teardown
// does not take it for the second's) plants a link to /etc/passwd where the
// host's start script, as root, wrote the second's runtime token and
// chowned it to the user (the token directory under
// /var/lib/primer/ws/<id>). The second then kills its own runtime, so it is
// recovered on the same host. /etc/passwd, /etc/shadow and /root stay as
// they were, and the recovery runs: root follows no link the workspace's
// user can make.
func TestAttackVMLinkAsRoot(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	p := startPrimer(t, withContainers(t), withProbeInterval(300*time.Millisecond))
	member := vmTenantMember(t, p, "acme")
	vmSharedProvider(t, p, "fleet", host, nil)
	api := client.New(p.srv.URL(), client.WithToken(member), p.checked)
	ctx := ctxT(t, 6*time.Minute)

	tmpl := map[string]any{"id": "box", "provider_id": "fleet",
		"backend": map[string]any{"kind": "vm", "root": "/srv/primer", "user": "primer-atk", "recovery": map[string]any{"after": "1s"}}}
	if a := vmCall(t, p, member, "POST", "/v1/templates", tmpl); a.Status != http.StatusCreated {
		t.Fatalf("member: create template: %d %s", a.Status, a.Body)
	}
	var ids []string
	for range 2 {
		ws, err := api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "box"})
		if err != nil {
			t.Fatalf("member: create workspace: %v", err)
		}
		ids = append(ids, ws.ID)
		t.Cleanup(func() {
			cctx := ctxT(t, 2*time.Minute)
			if _, err := api.DeleteWorkspace(cctx, ws.ID); err == nil {
				_ = api.WaitGone(cctx, ws.ID, nil)
			}
		})
	}
	planter, victim := ids[0], ids[1]
	for _, id := range ids {
		waitPhase(t, api, id, wire.PhaseRunning, 2*time.Minute)
	}
	before := host.Exec(t, vmHostFiles)

	token := "/var/lib/primer/ws/" + victim + "/tok/token"
	daemon := `while :; do [ -e ` + token + ` ] || [ -L ` + token + ` ] || ln -s /etc/passwd ` + token + `; sleep 0.02; done`
	if _, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: planter, Command: []string{"sh", "-c",
		`env -i setsid sh -c '` + daemon + `' </dev/null >/dev/null 2>&1 &`}}); err != nil {
		t.Fatalf("member: start the planting daemon: %v", err)
	}
	if _, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: victim, Command: []string{"sh", "-c",
		`setsid sh -c 'sleep 1; kill -KILL $(cat /var/lib/primer/ws/` + victim + `/pid)' </dev/null >/dev/null 2>&1 &`}}); err != nil {
		t.Fatalf("member: kill the runtime: %v", err)
	}

	// Until the victim is recovered and running, the host's files must not
	// change (a start that followed the link may never come back).
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if after := host.Exec(t, vmHostFiles); after != before {
			t.Fatalf("the recovery changed the host through the workspace user's link:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		ws, err := api.GetWorkspace(ctx, victim)
		if err != nil {
			t.Fatal(err)
		}
		evs, _ := api.Events(ctx, victim, 0)
		recovered := false
		for _, ev := range evs {
			recovered = recovered || ev.Type == wire.EventRecovered
		}
		if recovered && ws.Phase == wire.PhaseRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workspace %s not recovered within 3m: %s (%s); events: %s", victim, ws.Phase, ws.Reason, describeEvents(evs))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: victim, Command: []string{"id", "-un"}}); err != nil || res.Stdout != "primer-atk\n" {
		t.Errorf("after the recovery id -un = %+v, %v; want primer-atk", res, err)
	}
	if after := host.Exec(t, vmHostFiles); after != before {
		t.Errorf("the host's files changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestAttackVMRootUser is issue 21 hole 5 (root): on a shared fleet
// provider an admin made, a member's template may not run its workspaces
// as root (user root, or no user with root as the connection's user),
// neither at create nor through an update: 403 naming spec.backend.user.
// A template stored while its provider allowed root (a template written
// before the rule) is refused at provision once the provider does not:
// the workspace fails saying so. In all of it nothing runs on the host: no
// runtime is uploaded or started, no record, directory or user is made.
func TestAttackVMRootUser(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	p := startPrimer(t, withContainers(t), withProbeInterval(300*time.Millisecond))
	member := vmTenantMember(t, p, "acme")
	vmSharedProvider(t, p, "fleet", host, nil)
	api := client.New(p.srv.URL(), client.WithToken(member), p.checked)

	refused := func(what string, a vmAnswer, want string) {
		t.Helper()
		if a.Status != http.StatusForbidden || a.Error.Code != "forbidden" || a.Error.Details["field"] != "spec.backend.user" ||
			!strings.HasPrefix(a.Error.Message, "spec.backend.user: ") || !strings.Contains(a.Error.Message, want) ||
			!strings.Contains(a.Error.Message, "allow_root_user") {
			t.Errorf("%s = %d %s; want 403 forbidden on spec.backend.user saying %q and allow_root_user", what, a.Status, a.Body, want)
		}
	}
	backendDoc := func(user string) map[string]any {
		b := map[string]any{"kind": "vm", "root": "/srv/primer"}
		if user != "" {
			b["user"] = user
		}
		return b
	}
	refused("member: create a template with user root",
		vmCall(t, p, member, "POST", "/v1/templates", map[string]any{"id": "as-root", "provider_id": "fleet", "backend": backendDoc("root")}),
		`"root" runs workspaces as root`)
	refused("member: create a template with no user (the connection's, root)",
		vmCall(t, p, member, "POST", "/v1/templates", map[string]any{"id": "no-user", "provider_id": "fleet", "backend": backendDoc("")}),
		"the connection's user, root")
	if a := vmCall(t, p, member, "POST", "/v1/templates", map[string]any{"id": "plain", "provider_id": "fleet", "backend": backendDoc("primer-plain")}); a.Status != http.StatusCreated {
		t.Fatalf("member: create a template with an unprivileged user: %d %s", a.Status, a.Body)
	}
	refused("member: update the template to user root",
		vmCall(t, p, member, "PUT", "/v1/templates/plain", map[string]any{"id": "plain", "provider_id": "fleet", "backend": backendDoc("root")}),
		`"root" runs workspaces as root`)

	// A template written while root was allowed, then the admin takes the
	// permission back: the stored template is refused at provision.
	rootSpec := vmSharedProvider(t, p, "fleet-root", host, map[string]any{"allow_root_user": true})
	if a := vmCall(t, p, member, "POST", "/v1/templates", map[string]any{"id": "was-root", "provider_id": "fleet-root", "backend": backendDoc("root")}); a.Status != http.StatusCreated {
		t.Fatalf("member: create a root template on a provider that allows root: %d %s", a.Status, a.Body)
	}
	cfg := rootSpec["config"].(map[string]any)
	delete(cfg, "allow_root_user")
	if a := vmCall(t, p, p.key, "PUT", "/v1/providers/fleet-root", rootSpec); a.Status != http.StatusOK {
		t.Fatalf("admin: take allow_root_user back: %d %s", a.Status, a.Body)
	}
	ctx := ctxT(t, 3*time.Minute)
	ws, err := api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "was-root"})
	if err != nil {
		t.Fatalf("member: create a workspace of the stored root template: %v", err)
	}
	failed := waitPhase(t, api, ws.ID, wire.PhaseFailed, 2*time.Minute)
	if !strings.Contains(failed.Reason, "spec.backend.user") || !strings.Contains(failed.Reason, "allow_root_user") {
		t.Errorf("the stored root template's workspace failed with %q; want the reason to name spec.backend.user and allow_root_user", failed.Reason)
	}

	// The reconciler surveys the provider's hosts (which makes Primer's
	// empty directories there); a provision would have uploaded the runtime
	// and made the workspace's record, directory and user.
	if left := host.Exec(t, "ls -d /srv/primer 2>/dev/null; ls -A /var/lib/primer/runtime /var/lib/primer/ws /var/lib/primer/users 2>/dev/null | grep -v -e '^/var/lib/primer/' -e '^$'; "+
		"id primer-plain 2>/dev/null; ps -eo user:20,args | grep primer-runtime | grep -v grep; true"); strings.TrimSpace(left) != "" {
		t.Errorf("on the host after the refusals:\n%s", left)
	}
}
