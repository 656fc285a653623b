package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/backend/vm/vmtest"
	"github.com/primerhq/primer/wire"
)

// vmSnippet is the recipe's snippet with paths relative to the workspace
// (a vm workspace lives at <root>/<id>, not /workspace).
const vmSnippet = `import socket, os
print('RESULT', 6 * 7)
open('out.txt', 'w').write(str(6 * 7))
open('sandbox_host.txt', 'w').write(socket.gethostname())
`

// vmProviderJSON is a vm provider's config on hosts, with conn.
func vmProviderJSON(t *testing.T, conn vm.Connection, hosts ...*vmtest.Host) string {
	t.Helper()
	var hs []map[string]any
	for _, h := range hosts {
		hs = append(hs, map[string]any{"address": h.Addr, "max_workspaces": 4})
	}
	raw, err := json.Marshal(map[string]any{"kind": "vm", "connection": conn, "hosts": hs})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// vmRecipeManifest is the code-interpreter recipe's provider (host) and
// template (code-sandbox) as a primectl document.
func vmRecipeManifest(t *testing.T, host *vmtest.Host) string {
	t.Helper()
	return fmt.Sprintf(`kind: workspace_provider
spec:
  id: fleet
  provider: vm
  config: %s
---
kind: workspace_template
spec:
  id: code-sandbox
  provider_id: fleet
  backend:
    kind: vm
    root: /srv/primer
    user: primer-sandbox
    config_toml: %s
`, vmProviderJSON(t, host.Connection(t), host), recipeConfigJSON)
}

// TestVMRecipe is the code-interpreter recipe on a vm workspace, through
// primectl and the REST API: a python snippet runs on the host as a user
// Primer made, harness.toml is there with mode 0600, and delete leaves
// nothing on the host: no process, directory or user.
func TestVMRecipe(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	p := startPrimer(t, withContainers(t))
	ctx := ctxT(t, 5*time.Minute)
	manifest := vmRecipeManifest(t, host)
	out, errOut, code := p.primectl(manifest, "create", "-f", "-")
	if code != 0 || !strings.Contains(out, "workspace_template/code-sandbox created") {
		t.Fatalf("create -f: code %d\n%s\n%s", code, out, errOut)
	}
	start := time.Now()
	out, errOut, code = p.primectl("", "create", "workspace", "--set", "template_id=code-sandbox", "--wait")
	m := regexp.MustCompile(`workspace/(ws-[0-9a-f]+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("create workspace --wait: code %d\n%s\n%s", code, out, errOut)
	}
	id := m[1]
	t.Logf("vm workspace %s running %s after create", id, time.Since(start).Round(time.Millisecond))

	if _, err := p.api.WriteFile(ctx, id, "snippet.py", strings.NewReader(vmSnippet)); err != nil {
		t.Fatalf("write snippet.py: %v", err)
	}
	out, errOut, code = p.primectl("", "workspace", "exec", id, "--", "python", "snippet.py")
	if code != 0 || out != "RESULT 42\n" {
		t.Fatalf("primectl exec python snippet.py: code %d stdout %q stderr %q; want RESULT 42", code, out, errOut)
	}
	res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"sh", "-c", "id -un; pwd"}})
	if err != nil || res.Stdout != "primer-sandbox\n/srv/primer/"+id+"\n" {
		t.Fatalf("API exec id -un; pwd = %+v, %v; want the template's user in the workspace directory", res, err)
	}
	if out, _, code := p.primectl("", "workspace", "files", "get", id, "out.txt", "--content"); code != 0 || strings.TrimSpace(out) != "42" {
		t.Errorf("files get out.txt --content = %q (code %d), want 42", out, code)
	}
	hostname, _ := os.Hostname()
	if got, err := p.api.ReadFile(ctx, id, "sandbox_host.txt"); err != nil || strings.TrimSpace(string(got)) != host.Name || host.Name == hostname {
		t.Errorf("sandbox_host.txt = %q, %v; want the host's name %q", got, err, host.Name)
	}
	checkHarnessTOML(t, p, ctx, id)

	if _, _, code := p.primectl("", "delete", "workspace", id, "--wait"); code != 0 {
		t.Fatalf("delete workspace --wait: code %d", code)
	}
	left := host.Exec(t, "ls -A /srv/primer /var/lib/primer/ws; ps -eo user:20,args | grep -e primer-sandbox -e "+id+" | grep -v grep; id primer-sandbox 2>/dev/null; true")
	if strings.TrimSpace(left) != "/srv/primer:\n\n/var/lib/primer/ws:" {
		t.Errorf("on the host after delete:\n%s", left)
	}
}

// TestVMFaults breaks vm workspaces from outside: a host restarted (its
// runtime gone; failed, then recovered on the same host with its files)
// and sshd killed (failed, with the SSH error as its reason).
func TestVMFaults(t *testing.T) {
	a, b := vmtest.Start(t, vmtest.Options{}), vmtest.Start(t, vmtest.Options{})
	p := startPrimer(t, withContainers(t), withProbeInterval(300*time.Millisecond))
	ctx := ctxT(t, 5*time.Minute)
	for _, f := range []struct {
		id   string
		host *vmtest.Host
	}{{"vm-a", a}, {"vm-b", b}} {
		if _, err := p.api.CreateProvider(ctx, wire.ProviderSpec{ID: f.id, Provider: "vm", Config: raw(vmProviderJSON(t, f.host.Connection(t), f.host))}); err != nil {
			t.Fatalf("create provider %s: %v", f.id, err)
		}
	}
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "recovers", ProviderID: "vm-a", Backend: raw(`{"kind":"vm","root":"/srv/primer","user":"primer-ws","recovery":{"after":"1s"}}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "stays", ProviderID: "vm-b", Backend: raw(`{"kind":"vm","root":"/srv/primer","user":"primer-ws","recovery":{"after":"10m"}}`)}); err != nil {
		t.Fatal(err)
	}

	t.Run("HostRestart", func(t *testing.T) {
		ws := createRunning(t, p, "recovers")
		if _, err := p.api.WriteFile(ctx, ws.ID, "notes.txt", strings.NewReader("must survive a reboot\n")); err != nil {
			t.Fatal(err)
		}
		a.Restart(t)
		failed := waitPhase(t, p.api, ws.ID, wire.PhaseFailed, time.Minute)
		t.Logf("failed: %s", failed.Reason)
		waitEvent(t, p.api, ws.ID, wire.EventRecovered, 2*time.Minute)
		waitPhase(t, p.api, ws.ID, wire.PhaseRunning, time.Minute)
		if got, err := p.api.ReadFile(ctx, ws.ID, "notes.txt"); err != nil || string(got) != "must survive a reboot\n" {
			t.Errorf("notes.txt after recovery = %q, %v", got, err)
		}
	})

	t.Run("SSHDKilled", func(t *testing.T) {
		ws := createRunning(t, p, "stays")
		b.KillSSHD(t)
		t.Cleanup(func() { b.Restart(t) })
		failed := waitPhase(t, p.api, ws.ID, wire.PhaseFailed, time.Minute)
		if !strings.Contains(strings.ToLower(failed.Reason), "ssh") {
			t.Errorf("failed reason = %q, want the SSH error", failed.Reason)
		}
		t.Logf("failed: %s", failed.Reason)
	})
}

// TestVMBadInput: each bad provider or template is a 400 naming its field;
// a workspace on a host that cannot be reached fails with the SSH error.
func TestVMBadInput(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	p := startPrimer(t, withContainers(t))
	ctx := ctxT(t, 3*time.Minute)
	conn := host.Connection(t)
	with := func(f func(c *vm.Connection)) vm.Connection { c := conn; f(&c); return c }
	for _, tc := range []struct {
		name, config, field string
	}{
		{"no known_hosts", vmProviderJSON(t, with(func(c *vm.Connection) { c.KnownHosts = "" }), host), "spec.config.connection.known_hosts_data"},
		{"unreadable key file", vmProviderJSON(t, with(func(c *vm.Connection) { c.PrivateKeyFile = "/no/such/key" }), host), "spec.config.connection.private_key_file"},
		{"empty host list", strings.Replace(vmProviderJSON(t, conn, host), `"hosts":[{"address":"`+host.Addr+`","max_workspaces":4}]`, `"hosts":[]`, 1), "spec.config.hosts"},
	} {
		_, err := p.api.CreateProvider(ctx, wire.ProviderSpec{ID: "bad", Provider: "vm", Config: raw(tc.config)})
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || ce.Field != tc.field {
			t.Errorf("%s: create provider = %v, want 400 naming %s", tc.name, err, tc.field)
		}
	}

	if _, err := p.api.CreateProvider(ctx, wire.ProviderSpec{ID: "fleet", Provider: "vm", Config: raw(vmProviderJSON(t, conn, host))}); err != nil {
		t.Fatal(err)
	}
	_, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "gpu", ProviderID: "fleet", Backend: raw(`{"kind":"vm","user":"primer-ws","selector":{"gpu":"a100"}}`)})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || ce.Field != "spec.backend.selector" {
		t.Errorf("template whose selector matches no host = %v, want 400 naming spec.backend.selector", err)
	}

	// A host that cannot be reached: the workspace fails with the SSH error.
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "box", ProviderID: "fleet", Backend: raw(`{"kind":"vm","user":"primer-ws","start_timeout":"15s"}`)}); err != nil {
		t.Fatal(err)
	}
	host.Stop(t)
	ws := createInPhase(t, p, "box", wire.PhaseFailed)
	if !strings.Contains(ws.Reason, "ssh") || !strings.Contains(ws.Reason, host.Addr) {
		t.Errorf("failed reason = %q, want the SSH error naming %s", ws.Reason, host.Addr)
	}
	t.Logf("failed: %s", ws.Reason)
}

// TestVMHostKeyChanged: a host whose key changed since it was put in
// known_hosts fails the workspace at once, its reason naming the host and
// the key mismatch, instead of leaving it pending while the provision is
// retried (the template's start_timeout, 10 minutes, is far beyond the
// wait).
func TestVMHostKeyChanged(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	p := startPrimer(t, withContainers(t))
	ctx := ctxT(t, 3*time.Minute)
	if _, err := p.api.CreateProvider(ctx, wire.ProviderSpec{ID: "rotated", Provider: "vm", Config: raw(vmProviderJSON(t, host.Connection(t), host))}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "rotated", ProviderID: "rotated", Backend: raw(`{"kind":"vm","user":"primer-ws","start_timeout":"10m"}`)}); err != nil {
		t.Fatal(err)
	}
	// Re-imaged: a new host key, and the connections the platform held
	// (it surveyed the host when the template was stored) are gone.
	host.RotateHostKey(t)
	host.Restart(t)
	ws := createInPhase(t, p, "rotated", wire.PhaseFailed)
	if !strings.Contains(ws.Reason, host.Addr) || !strings.Contains(ws.Reason, "host key") || !strings.Contains(ws.Reason, "does not match known_hosts") {
		t.Errorf("failed reason = %q, want it to name %s and the host key mismatch", ws.Reason, host.Addr)
	}
	// One prefix per layer: the workspace and the step once each.
	if strings.Count(ws.Reason, ws.ID) != 1 || strings.Count(ws.Reason, "provision: ") != 1 {
		t.Errorf("failed reason = %q, want the workspace and its step named once each", ws.Reason)
	}
	t.Logf("failed: %s", ws.Reason)
}
