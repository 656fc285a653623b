package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// e2bCall sends one E2B REST request (path under /e2b) with key as
// X-API-KEY and decodes a JSON answer into out when out is not nil.
func e2bCall(t *testing.T, p *primer, key, method, path, body string, out any) (int, http.Header) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, p.srv.URL()+"/e2b"+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-KEY", key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	if res.StatusCode >= 400 && !bytes.Contains(data, []byte(`"code":`)) {
		t.Errorf("%s %s: %d answer %q is not E2B's error body", method, path, res.StatusCode, data)
	}
	return res.StatusCode, res.Header
}

// TestE2BRestDocker drives the E2B REST door on Docker as the SDKs do: a
// member's e2b_ key creates a sandbox (running when answered: a container
// exists, with E2B's default user and the create's envVars), lists it by metadata, routes an envd request to it with its
// access token, another tenant cannot see or kill it, and a kill destroys
// the container. A create on a pooled template answers with the pool's
// idle member.
func TestE2BRestDocker(t *testing.T) {
	e := containertest.Known()[0]
	if e.Name != container.EngineDocker {
		t.Fatalf("first known engine is %s, want docker", e.Name)
	}
	containertest.Require(t, e)
	p := startPrimer(t, withContainers(t))
	ctx := ctxT(t, 5*time.Minute)
	eng := containertest.Backend(t, e)
	bb := `{"kind":"container","image":"` + containertest.BusyboxImage + `","network":{"egress":"deny_all"}}`
	containerTemplate(t, p, e, "base", bb)
	containerTemplate(t, p, e, "pooled", bb)

	newKey := func(tenant string) string {
		t.Helper()
		k, err := p.api.CreateAPIKey(ctx, wire.CreateAPIKeyRequest{TenantID: tenant, Role: wire.RoleMember})
		if err != nil || !strings.HasPrefix(k.E2BKey, "e2b_") {
			t.Fatalf("create key: %+v, %v", k, err)
		}
		return k.E2BKey
	}
	member := newKey(wire.DefaultTenantID)
	if _, err := p.api.CreateTenant(ctx, wire.TenantSpec{ID: "other"}); err != nil {
		t.Fatal(err)
	}
	outsider := newKey("other")

	// Create: the JS SDK's body, no templateID given -> base.
	type sandbox struct {
		SandboxID, TemplateID, EnvdVersion, EnvdAccessToken string
	}
	var sb sandbox
	start := time.Now()
	if st, _ := e2bCall(t, p, member, "POST", "/v2/sandboxes", `{"metadata":{"suite":"e2e"},"timeout":120,"allow_internet_access":false,"envVars":{"E2E_VAR":"from-envvars"}}`, &sb); st != 201 {
		t.Fatalf("create: status %d", st)
	}
	t.Logf("cold create answered in %s", time.Since(start))
	t.Cleanup(func() { _, _ = p.api.DeleteWorkspace(context.Background(), sb.SandboxID) })
	ws, err := p.api.GetWorkspace(ctx, sb.SandboxID)
	if err != nil || ws.Phase != wire.PhaseRunning || ws.TemplateID != "base" || ws.Labels["suite"] != "e2e" || ws.ExpiresAt == nil {
		t.Fatalf("created sandbox %+v: workspace %+v, %v; want running on base with the label and an expiry", sb, ws, err)
	}
	if len(containertest.Objects(t, eng, sb.SandboxID)) == 0 {
		t.Fatalf("no container for sandbox %s", sb.SandboxID)
	}
	// E2B's default user exists (busybox has none of its own), and the
	// create's envVars reach a command.
	res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: sb.SandboxID, Command: []string{"sh", "-c", "id -u user && echo $E2E_VAR"}})
	if err != nil || res.ExitCode != 0 || !strings.HasSuffix(res.Stdout, "\nfrom-envvars\n") {
		t.Fatalf("id -u user; echo $E2E_VAR = %+v, %v; want the user made at create and the env var", res, err)
	}

	// List by metadata as the JS SDK encodes it.
	var listed []struct{ SandboxID string }
	if st, _ := e2bCall(t, p, member, "GET", "/v2/sandboxes?metadata=suite%3De2e&state=running", "", &listed); st != 200 ||
		len(listed) != 1 || listed[0].SandboxID != sb.SandboxID {
		t.Fatalf("list: status %d, %+v", st, listed)
	}

	// The envd router lets the token through to the in-sandbox API (501
	// while none is wired), and nothing else.
	envd := func(tok string) int {
		req, _ := http.NewRequestWithContext(ctx, "GET", p.srv.URL()+"/e2b/envd/health", nil)
		req.Header.Set("E2b-Sandbox-Id", sb.SandboxID)
		req.Header.Set("X-Access-Token", tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if st := envd(sb.EnvdAccessToken); st == 401 || st == 404 {
		t.Fatalf("envd with the sandbox's token: %d", st)
	}
	if st := envd("e2bat_" + strings.Repeat("0", 64)); st != 401 {
		t.Fatalf("envd with a wrong token: %d, want 401", st)
	}

	// Another tenant: 404 on get and kill, an empty list.
	if st, _ := e2bCall(t, p, outsider, "GET", "/sandboxes/"+sb.SandboxID, "", nil); st != 404 {
		t.Fatalf("outsider get: %d, want 404", st)
	}
	if st, _ := e2bCall(t, p, outsider, "DELETE", "/sandboxes/"+sb.SandboxID, "", nil); st != 404 {
		t.Fatalf("outsider kill: %d, want 404", st)
	}
	listed = nil
	if st, _ := e2bCall(t, p, outsider, "GET", "/v2/sandboxes", "", &listed); st != 200 || len(listed) != 0 {
		t.Fatalf("outsider list: %d, %+v", st, listed)
	}

	// Kill: 204, then the token stops working and the container is gone.
	if st, _ := e2bCall(t, p, member, "DELETE", "/sandboxes/"+sb.SandboxID, "", nil); st != 204 {
		t.Fatalf("kill: %d, want 204", st)
	}
	// The workflow records the delete (phase terminating) moments after
	// the kill's answer; from then on the token opens nothing.
	eventually(t, 30*time.Second, "envd refusing the killed sandbox", func() bool { return envd(sb.EnvdAccessToken) == 404 })
	if err := p.api.WaitGone(ctx, sb.SandboxID, nil); err != nil {
		t.Fatal(err)
	}
	if objs := containertest.Objects(t, eng, sb.SandboxID); len(objs) != 0 {
		t.Fatalf("after the kill the engine still holds %v", objs)
	}

	// Warm: a pooled template's create is the pool's idle member.
	if _, err := p.api.CreatePool(ctx, wire.PoolSpec{ID: "e2b-pool", TemplateID: "pooled", Size: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		members, _ := p.api.ListWorkspaces(cctx, client.WorkspaceListOptions{PoolID: "e2b-pool"})
		if _, err := p.api.DeletePool(cctx, "e2b-pool"); err != nil && !errs.Is(err, errs.NotFound) {
			t.Errorf("delete pool: %v", err)
		}
		for _, m := range members {
			_ = p.api.WaitGone(cctx, m.ID, nil)
		}
	})
	var idle []wire.Workspace
	eventually(t, 2*time.Minute, "an idle member in the pool", func() bool {
		idle, err = p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{PoolID: "e2b-pool", PoolState: wire.PoolIdle, Phase: wire.PhaseRunning})
		return err == nil && len(idle) == 1
	})
	var warm sandbox
	start = time.Now()
	if st, _ := e2bCall(t, p, member, "POST", "/sandboxes", `{"templateID":"pooled","timeout":60,"secure":true,"allow_internet_access":true,"metadata":{},"envVars":{}}`, &warm); st != 201 {
		t.Fatalf("warm create: %d", st)
	}
	t.Logf("warm create answered in %s", time.Since(start))
	t.Cleanup(func() { _, _ = p.api.DeleteWorkspace(context.Background(), warm.SandboxID) })
	if warm.SandboxID != idle[0].ID {
		t.Fatalf("warm create = %s, want the pool's idle member %s", warm.SandboxID, idle[0].ID)
	}
}
