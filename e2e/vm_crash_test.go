package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/backend/vm/vmtest"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// gateUseradd puts a useradd in front of the host's (root's PATH has
// /usr/local/sbin first) that marks /tmp/primer-gate/reached and waits for
// /tmp/primer-gate/open before it makes the user: a provision whose
// template names a new user stops there, in the middle of its start
// script, for as long as the test wants.
const gateUseradd = `mkdir -p /tmp/primer-gate
cat > /usr/local/sbin/useradd <<'EOF'
#!/bin/sh
: > /tmp/primer-gate/reached
while [ ! -e /tmp/primer-gate/open ]; do sleep 0.05; done
exec /usr/sbin/useradd "$@"
EOF
chmod 0755 /usr/local/sbin/useradd`

// TestVMCrashDuringProvision kills `primer serve` with SIGKILL while a vm
// workspace's Provision is in its start script on the host (held in
// useradd by the test), lets the cut-off script run on, and makes an
// orphan while the platform is down: a workspace of the platform's
// installation on the host with no row (as one deleted while the platform
// was down leaves when its Destroy never ran). After the restart on the
// same data dir the workspace ends running with exactly one runtime on the
// host, the reconciler removes the orphan (directory, record, runtime,
// user), and deleting the workspace leaves nothing on the host: no
// process, directory, record or user Primer made.
func TestVMCrashDuringProvision(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	s := startServe(t)
	ctx := ctxT(t, 5*time.Minute)
	host.Exec(t, gateUseradd)
	conn := host.Connection(t)
	if _, err := s.api.CreateProvider(ctx, wire.ProviderSpec{ID: "fleet", Provider: "vm", Config: raw(vmProviderJSON(t, conn, host))}); err != nil {
		t.Fatal(err)
	}
	const tmpl = `{"kind":"vm","root":"/srv/primer","user":"primer-crash","recovery":{"after":"0s","max_attempts":3}}`
	if _, err := s.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "crash", ProviderID: "fleet", Backend: raw(tmpl)}); err != nil {
		t.Fatal(err)
	}
	ws, err := s.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	id := ws.ID
	eventually(t, time.Minute, "the start script of "+id+" in useradd", func() bool {
		return strings.TrimSpace(host.Exec(t, "test -e /tmp/primer-gate/reached && echo yes; true")) == "yes"
	})
	if got, err := s.api.GetWorkspace(ctx, id); err != nil || got.Phase != wire.PhasePending {
		t.Fatalf("before the kill: %+v, %v; want pending (its start script waits in useradd)", got, err)
	}
	killed := time.Now()
	s.kill()
	// The host's script outlives the SSH session it came on: it makes the
	// user and starts a runtime the platform never heard of.
	host.Exec(t, ": > /tmp/primer-gate/open")
	eventually(t, time.Minute, "the cut-off start script's runtime of "+id+" listening", func() bool {
		return strings.TrimSpace(host.Exec(t, "cat /var/lib/primer/ws/"+id+"/port 2>/dev/null; true")) != ""
	})
	strayPID := strings.TrimSpace(host.Exec(t, "cat /var/lib/primer/ws/"+id+"/pid"))
	if n := runtimes(t, host, id); n != 1 {
		t.Fatalf("workspace %s has %d runtimes on the host while the platform is down, want the cut-off script's one", id, n)
	}

	// The orphan, made with the platform's installation, read from the
	// host's record of the workspace.
	inst := strings.TrimSpace(host.Exec(t, "cat /var/lib/primer/ws/"+id+"/installation"))
	orphanConfig, err := json.Marshal(map[string]any{"kind": "vm", "connection": conn, "hosts": []map[string]any{{"address": host.Addr}}})
	if err != nil {
		t.Fatal(err)
	}
	ob, err := vm.New(orphanConfig, vm.Options{Runtime: containertest.RuntimeBinary(t), Installation: inst})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ob.Close() })
	orphan := models.NewID("ws")
	oh, err := ob.Provision(ctx, backend.ProvisionRequest{WorkspaceID: orphan, Token: models.NewToken(),
		Template: raw(`{"kind":"vm","root":"/srv/primer","user":"primer-orphan"}`)})
	if err != nil {
		t.Fatalf("provision the orphan %s: %v", orphan, err)
	}
	t.Cleanup(func() { _ = ob.Destroy(ctxT(t, time.Minute), oh) })
	if n := runtimes(t, host, orphan); n != 1 {
		t.Fatalf("orphan %s has %d runtimes on the host, want 1", orphan, n)
	}

	s.restart()
	eventually(t, time.Minute, "the reconciler removes orphan "+orphan, func() bool {
		return strings.TrimSpace(host.Exec(t, leftOnHost(orphan, "primer-orphan"))) == ""
	})
	t.Logf("orphan removed %s after the kill", time.Since(killed).Round(time.Millisecond))
	waitRunning(t, s.api, id, crashConverge, s.pendingActivities)
	t.Logf("%s running %s after the kill", id, time.Since(killed).Round(time.Millisecond))
	if n := runtimes(t, host, id); n != 1 {
		t.Errorf("workspace %s has %d runtimes on the host, want exactly 1:\n%s", id, n, host.Exec(t, "ps -eo pid,user:20,args"))
	}
	res, err := s.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"id", "-un"}})
	if err != nil || res.Stdout != "primer-crash\n" {
		t.Errorf("exec id -un after the crash = %+v, %v; want primer-crash", res, err)
	}
	pid := strings.TrimSpace(host.Exec(t, "cat /var/lib/primer/ws/"+id+"/pid"))
	t.Logf("runtime after the restart: pid %s (the cut-off script started pid %s)", pid, strayPID)
	// The cut-off provisioning was resumed, not failed and rebuilt.
	evs := eventTypes(t, ctx, s.api, id)
	t.Logf("%s events: %v", id, evs)
	if slices.Contains(evs, wire.EventProvisionFailed) || slices.Contains(evs, wire.EventRecoveryStarted) {
		t.Errorf("%s: events %v, want the provisioning resumed without a failure", id, evs)
	}

	if _, err := s.api.DeleteWorkspace(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := s.api.WaitGone(ctx, id, nil); err != nil {
		t.Fatalf("wait gone: %v", err)
	}
	if left := strings.TrimSpace(host.Exec(t, leftOnHost(id, "primer-crash"))); left != "" {
		t.Errorf("on the host after delete:\n%s", left)
	}
}

// runtimes counts the primer-runtime processes of workspace id on host
// (their command line holds --root=/srv/primer/<id>).
func runtimes(t *testing.T, host *vmtest.Host, id string) int {
	t.Helper()
	out := strings.TrimSpace(host.Exec(t, "ps -eo args | grep -F -- '--root=/srv/primer/"+id+"' | grep -v grep; true"))
	if out == "" {
		return 0
	}
	return strings.Count(out, "\n") + 1
}

// leftOnHost is a command printing what is left on the host of workspace
// id made under /srv/primer with user: its directory, its record, its
// processes, the user and Primer's note of it. Nothing is an empty output.
func leftOnHost(id, user string) string {
	return "ls -d /srv/primer/" + id + " /var/lib/primer/ws/" + id + " /var/lib/primer/users/" + user + " 2>/dev/null;" +
		" ps -eo user:20,args | grep -e " + user + " -e " + id + " | grep -v grep;" +
		" id " + user + " 2>/dev/null; true"
}
