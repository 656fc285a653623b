package vm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/backend/vm/vmtest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

const testRoot = "/srv/primer"

// providerConfig is a fleet of hosts reached with conn.
func providerConfig(t *testing.T, conn vm.Connection, hosts ...*vmtest.Host) json.RawMessage {
	t.Helper()
	type host struct {
		Address string `json:"address"`
	}
	doc := map[string]any{"connection": conn}
	var hs []host
	for _, h := range hosts {
		hs = append(hs, host{h.Addr})
	}
	doc["hosts"] = hs
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// newBackend builds a vm backend on config, closed at cleanup.
func newBackend(t *testing.T, config json.RawMessage, logger *slog.Logger) *vm.Backend {
	t.Helper()
	b, err := vm.New(config, vm.Options{Runtime: containertest.RuntimeBinary(t), Installation: "test-installation", Logger: logger})
	if err != nil {
		t.Fatalf("vm.New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// gone reports whether nothing of workspace id is left on host: its
// directory, its record, its runtime.
func gone(t *testing.T, host *vmtest.Host, id string) bool {
	t.Helper()
	out := host.Exec(t, "ls -d "+testRoot+"/"+id+" /var/lib/primer/ws/"+id+" 2>/dev/null; ps -eo args | grep -F -- '"+id+"' | grep -v grep; true")
	return strings.TrimSpace(out) == ""
}

func TestConformance(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	config := providerConfig(t, host.Connection(t), host)
	parent := t
	backendtest.Run(t, backendtest.Harness{
		New:      func(t *testing.T) backend.Backend { return newBackend(t, config, nil) },
		Template: json.RawMessage(`{"kind":"vm","root":"` + testRoot + `","user":"primer-ws"}`),
		Gone:     func(t *testing.T, h backend.Handle) bool { return gone(t, host, h.WorkspaceID) },
		Timeout:  time.Minute,
		// Paused: no process of the workspace is left on the host (none
		// runs with its directory as the runtime's root, none carries its id).
		Stopped: func(t *testing.T, h backend.Handle) bool {
			// -x: whole NUL-separated words, so the command line of this
			// check's own shell, which holds them inside its script, does
			// not match.
			return strings.TrimSpace(host.Exec(t, "grep -lzxF -- '--root="+testRoot+"/"+h.WorkspaceID+"' /proc/[0-9]*/cmdline 2>/dev/null; "+
				"grep -lzxF -- 'PRIMER_WORKSPACE_ID="+h.WorkspaceID+"' /proc/[0-9]*/environ 2>/dev/null; true")) == ""
		},
		SnapshotGone: func(t *testing.T, ref backend.SnapshotRef) bool {
			return strings.TrimSpace(host.Exec(t, "ls -a /var/lib/primer/snapshots | grep -F -- '"+ref.SnapshotID+"'; true")) == ""
		},
		Restart: func(_ *testing.T, old backend.Backend) backend.Backend {
			_ = old.(*vm.Backend).Close()
			// Closed after the subtest's cleanups, which destroy with it.
			return newBackend(parent, config, nil)
		},
	})
}

// provision provisions a workspace of tmpl and destroys it at cleanup.
func provision(t *testing.T, b *vm.Backend, tmpl, token string, env map[string]string) backend.Handle {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	id := backendtest.NewID(t)
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: json.RawMessage(tmpl), Token: token, Env: env})
	if err != nil {
		t.Fatalf("provision %s: %v", id, err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
	return h
}

// TestDestroyLeavesNothing: a workspace whose user Primer made, with a
// daemon that left the runtime's session, is gone from the host after
// Destroy: processes, directory, record and user. A user the host had
// stays, and a made user stays while another workspace uses it.
func TestDestroyLeavesNothing(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	b := newBackend(t, providerConfig(t, host.Connection(t), host), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	host.Exec(t, "useradd --no-create-home builder")

	made := `{"kind":"vm","root":"` + testRoot + `","user":"primer-made"}`
	h1 := provision(t, b, made, backendtest.NewToken(t), nil)
	h2 := provision(t, b, made, backendtest.NewToken(t), nil)
	hb := provision(t, b, `{"kind":"vm","root":"`+testRoot+`","user":"builder"}`, backendtest.NewToken(t), nil)
	if h1.Attrs["created_user"] != "true" || hb.Attrs["created_user"] != "false" || h1.Attrs["user"] != "primer-made" {
		t.Fatalf("handles: made user %+v, host's user %+v", h1.Attrs, hb.Attrs)
	}
	token := backendtest.NewToken(t)
	h := provision(t, b, made, token, nil)
	c := backendtest.Dial(ctx, t, b, h, token)
	// A daemon in a session of its own, which a kill of the runtime's
	// process group does not reach.
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo started"}}, nil, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("start daemon: %+v, %v", res, err)
	}
	if ps := host.Exec(t, "ps -eo user:20,args"); !strings.Contains(ps, "sleep 1000") {
		t.Fatalf("the daemon is not running:\n%s", ps)
	}
	if out := host.Exec(t, "stat -c '%U %a' "+h.Path); strings.TrimSpace(out) != "primer-made 700" {
		t.Errorf("workspace directory owner and mode = %q, want primer-made 700", out)
	}

	for _, hh := range []backend.Handle{h, h1} {
		if err := b.Destroy(ctx, hh); err != nil {
			t.Fatalf("destroy %s: %v", hh.WorkspaceID, err)
		}
	}
	if ps := host.Exec(t, "ps -eo args"); strings.Contains(ps, "sleep 1000") || strings.Contains(ps, h.WorkspaceID) {
		t.Errorf("processes of %s left after destroy:\n%s", h.WorkspaceID, ps)
	}
	if !gone(t, host, h.WorkspaceID) || !gone(t, host, h1.WorkspaceID) {
		t.Errorf("after destroy the host still has:\n%s", host.Exec(t, "ls -la "+testRoot+" /var/lib/primer/ws"))
	}
	if out := host.Exec(t, "id primer-made >/dev/null 2>&1 && echo present || echo absent"); strings.TrimSpace(out) != "present" {
		t.Errorf("user primer-made is %s while workspace %s still uses it", out, h2.WorkspaceID)
	}
	if err := b.Destroy(ctx, h2); err != nil {
		t.Fatal(err)
	}
	if out := host.Exec(t, "id primer-made >/dev/null 2>&1 && echo present || echo absent; ps -eo user:20 | grep -c primer-made || true"); strings.TrimSpace(out) != "absent\n0" {
		t.Errorf("after its last workspace: user primer-made and its process count = %q, want absent and 0", out)
	}
	if err := b.Destroy(ctx, hb); err != nil {
		t.Fatal(err)
	}
	host.Exec(t, "id builder") // the host's own user stays
}

// TestTokenHidden: the runtime token is never on the host's process list,
// nor left in a file, nor in the platform's log.
func TestTokenHidden(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := newBackend(t, providerConfig(t, host.Connection(t), host), logger)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	token := backendtest.NewToken(t)
	h := provision(t, b, `{"kind":"vm","root":"`+testRoot+`","user":"primer-ws"}`, token, map[string]string{"SECRET_ENV": "env-value-" + token[:8]})
	c := backendtest.Dial(ctx, t, b, h, token)
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $SECRET_ENV $PRIMER_RUNTIME_TOKEN"}}, nil, nil)
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "env-value-"+token[:8] {
		t.Fatalf("exec = %q, %v; want the env and no token", res.Stdout, err)
	}
	ps := host.Exec(t, "ps -eo args; cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '")
	if strings.Contains(ps, token) || strings.Contains(ps, "env-value-") {
		t.Errorf("the host's process list shows the token or an env value:\n%s", ps)
	}
	if out := host.Exec(t, "grep -rlF "+token+" /var/lib/primer "+testRoot+" /tmp 2>/dev/null; true"); strings.TrimSpace(out) != "" {
		t.Errorf("files on the host hold the token: %s", out)
	}
	if err := b.Destroy(ctx, h); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the platform's log holds the token:\n%s", logs.String())
	}
}

// TestCapsRefused: a host with neither systemd nor a writable cgroup v2
// hierarchy (the test hosts: a container) refuses a template with caps,
// naming the host, and leaves nothing behind.
func TestCapsRefused(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	if strings.TrimSpace(host.Exec(t, "test -w /sys/fs/cgroup/cgroup.subtree_control && echo yes || echo no")) == "yes" {
		t.Skip("this host has a writable cgroup v2 hierarchy: caps are supported")
	}
	b := newBackend(t, providerConfig(t, host.Connection(t), host), nil)
	id := backendtest.NewID(t)
	_, err := b.Provision(t.Context(), backend.ProvisionRequest{WorkspaceID: id, Token: backendtest.NewToken(t),
		Template: json.RawMessage(`{"kind":"vm","root":"` + testRoot + `","user":"primer-ws","cpu":0.5,"memory":"256Mi"}`)})
	if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "supports no CPU/memory caps") || !strings.Contains(err.Error(), host.Addr) {
		t.Fatalf("provision with caps = %v (kind %v), want invalid naming the host and the caps", err, errs.KindOf(err))
	}
	if !gone(t, host, id) {
		t.Errorf("a refused provision left something:\n%s", host.Exec(t, "ls -la "+testRoot+" /var/lib/primer/ws"))
	}
}

// TestProvisionOnChangedHostKeyFails: a host whose key no longer matches
// known_hosts refuses the provision at once, with a Forbidden error (not
// retried) naming the host and the key mismatch, and nothing is run there.
func TestProvisionOnChangedHostKeyFails(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	conn := host.Connection(t)
	b := newBackend(t, providerConfig(t, conn, host), nil)
	host.RotateHostKey(t)
	id := backendtest.NewID(t)
	start := time.Now()
	_, err := b.Provision(t.Context(), backend.ProvisionRequest{WorkspaceID: id, Token: backendtest.NewToken(t),
		Template: json.RawMessage(`{"kind":"vm","root":"` + testRoot + `","user":"primer-ws"}`)})
	if !errs.Is(err, errs.Forbidden) || !strings.Contains(err.Error(), host.Addr) || !strings.Contains(err.Error(), "does not match known_hosts") {
		t.Fatalf("provision on a host whose key changed = %v (kind %v); want forbidden naming %s and the key mismatch", err, errs.KindOf(err), host.Addr)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the refusal took %s; want it at once", d)
	}
	if !gone(t, host, id) {
		t.Errorf("a refused provision left something:\n%s", host.Exec(t, "ls -la "+testRoot+" /var/lib/primer/ws"))
	}
}
