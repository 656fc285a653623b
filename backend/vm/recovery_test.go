package vm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/vm/vmtest"
	"github.com/primerhq/primer/errs"
)

// TestHostRestart is stale recovery on a rebooted host: the runtime is
// gone, so Endpoint fails Unavailable (the probes' misses); Teardown and a
// Provision of the same id with a new token start a runtime on the same
// host that finds the files.
func TestHostRestart(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	other := vmtest.Start(t, vmtest.Options{})
	conn := host.Connection(t)
	conn.KnownHosts = vmtest.KnownHostsFile(t, host, other)
	b := newBackend(t, providerConfig(t, conn, host, other), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	token := backendtest.NewToken(t)
	h := provision(t, b, `{"kind":"vm","root":"`+testRoot+`","user":"primer-ws"}`, token, nil)
	c := backendtest.Dial(ctx, t, b, h, token)
	if err := c.WriteFile(ctx, "kept.txt", []byte("survives a reboot"), 0o600); err != nil {
		t.Fatal(err)
	}
	restarted := host
	if h.Attrs["host"] == other.Addr {
		restarted = other
	}
	restarted.Restart(t)
	if _, err := b.Endpoint(ctx, h, token); !errs.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("endpoint after the host restarted = %v (kind %v), want unavailable: runtime not running", err, errs.KindOf(err))
	}
	if err := b.Teardown(ctx, h); err != nil {
		t.Fatalf("teardown: %v", err)
	}
	newToken := backendtest.NewToken(t)
	h2, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: h.WorkspaceID, Token: newToken, Template: json.RawMessage(`{"kind":"vm","root":"` + testRoot + `","user":"primer-ws"}`)})
	if err != nil {
		t.Fatalf("provision after the restart: %v", err)
	}
	if h2.Attrs["host"] != h.Attrs["host"] {
		t.Errorf("replacement on %s, want the same host %s (its directory survived)", h2.Attrs["host"], h.Attrs["host"])
	}
	c2 := backendtest.Dial(ctx, t, b, h2, newToken)
	if got, err := c2.ReadFile(ctx, "kept.txt"); err != nil || string(got) != "survives a reboot" {
		t.Errorf("kept.txt after the restart = %q, %v", got, err)
	}
}

// TestSSHDKilled: a host whose sshd died fails Endpoint with the SSH
// error, which is what the workspace's failed reason says.
func TestSSHDKilled(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	b := newBackend(t, providerConfig(t, host.Connection(t), host), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	token := backendtest.NewToken(t)
	h := provision(t, b, `{"kind":"vm","root":"`+testRoot+`","user":"primer-ws"}`, token, nil)
	host.KillSSHD(t)
	_, err := b.Endpoint(ctx, h, token)
	if !errs.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), host.Addr) {
		t.Fatalf("endpoint with sshd killed = %v (kind %v), want unavailable naming %s", err, errs.KindOf(err), host.Addr)
	}
	t.Logf("endpoint with sshd killed: %v", err)
	host.Restart(t)
}

// TestOneRuntimeAfterCutOffStart: a platform killed while the start
// script ran leaves a runtime whose pid and port were never recorded (here
// the record is removed by hand). The retried provision ends it and
// starts one: exactly one runtime of the workspace runs on the host.
func TestOneRuntimeAfterCutOffStart(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	b := newBackend(t, providerConfig(t, host.Connection(t), host), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	token := backendtest.NewToken(t)
	tmpl := `{"kind":"vm","root":"` + testRoot + `","user":"primer-ws"}`
	h := provision(t, b, tmpl, token, nil)
	host.Exec(t, "rm /var/lib/primer/ws/"+h.WorkspaceID+"/pid /var/lib/primer/ws/"+h.WorkspaceID+"/port")
	h2, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: h.WorkspaceID, Token: token, Template: json.RawMessage(tmpl)})
	if err != nil {
		t.Fatalf("retried provision: %v", err)
	}
	runtimes := host.Exec(t, "ps -eo pid,args | grep -F -- '--root="+h.Path+"' | grep -v grep; true")
	if n := strings.Count(strings.TrimSpace(runtimes), "\n") + 1; strings.TrimSpace(runtimes) == "" || n != 1 {
		t.Fatalf("runtimes of %s on the host:\n%s\nwant exactly one", h.WorkspaceID, runtimes)
	}
	if !strings.Contains(runtimes, h2.Attrs["pid"]+" ") || h2.Attrs["pid"] == h.Attrs["pid"] {
		t.Errorf("running runtime:\n%s\nwant the new one, pid %s (the stray was %s)", runtimes, h2.Attrs["pid"], h.Attrs["pid"])
	}
	c := backendtest.Dial(ctx, t, b, h2, token)
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
