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
	"github.com/primerhq/primer/models"
)

// holdUseradd puts a useradd in front of the host's (root's PATH has
// /usr/local/sbin first) that marks /tmp/primer-gate/reached and waits for
// /tmp/primer-gate/open before it makes the user: a start script whose
// user is new stops there until the test opens the gate.
const holdUseradd = `mkdir -p /tmp/primer-gate
cat > /usr/local/sbin/useradd <<'EOF'
#!/bin/sh
: > /tmp/primer-gate/reached
while [ ! -e /tmp/primer-gate/open ]; do sleep 0.05; done
exec /usr/sbin/useradd "$@"
EOF
chmod 0755 /usr/local/sbin/useradd`

// hostHas polls cmd on host until it prints something, for at most d.
func hostHas(t *testing.T, host *vmtest.Host, d time.Duration, what, cmd string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for strings.TrimSpace(host.Exec(t, cmd+"; true")) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRetryWhileCutOffStartRunsOn: a platform dies (its backend closed)
// while a start script runs on the host (held in useradd); the script runs
// on. A second platform's retry of the same provision starts while it
// still runs. The retry waits for it (one start of a workspace at a time)
// and then owns the workspace: exactly one runtime, the one its handle and
// the host's record name, answering to the token.
func TestRetryWhileCutOffStartRunsOn(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	host.Exec(t, holdUseradd)
	config := providerConfig(t, host.Connection(t), host)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	id, token := models.NewID("ws"), backendtest.NewToken(t)
	req := backend.ProvisionRequest{WorkspaceID: id, Token: token,
		Template: json.RawMessage(`{"kind":"vm","root":"` + testRoot + `","user":"primer-cut"}`)}

	dead := newBackend(t, config, nil)
	cutOff := make(chan error, 1)
	go func() {
		_, err := dead.Provision(ctx, req)
		cutOff <- err
	}()
	hostHas(t, host, time.Minute, "the first start script in useradd", "ls /tmp/primer-gate/reached 2>/dev/null")
	_ = dead.Close() // the platform dies: its SSH connections go
	if err := <-cutOff; err == nil {
		t.Fatal("the cut-off provision succeeded, want an error (its connection closed)")
	}

	b := newBackend(t, config, nil)
	retried := make(chan error, 1)
	var h backend.Handle
	go func() {
		var err error
		h, err = b.Provision(ctx, req)
		retried <- err
	}()
	// The retry's start script waits on a lock the cut-off one holds.
	hostHas(t, host, time.Minute, "the retry's start script waiting", "ps -eo args | grep -x 'flock [0-9]' | grep -v grep")
	host.Exec(t, ": > /tmp/primer-gate/open")
	if err := <-retried; err != nil {
		t.Fatalf("retried provision: %v", err)
	}
	runtimes := strings.TrimSpace(host.Exec(t, "ps -eo pid,args | grep -F -- '--root="+h.Path+"' | grep -v grep; true"))
	if runtimes == "" || strings.Contains(runtimes, "\n") {
		t.Fatalf("runtimes of %s on the host:\n%s\nwant exactly one", id, runtimes)
	}
	if f := strings.Fields(runtimes); f[0] != h.Attrs["pid"] {
		t.Errorf("the running runtime is pid %s, the handle names %s", f[0], h.Attrs["pid"])
	}
	if rec := strings.TrimSpace(host.Exec(t, "cat /var/lib/primer/ws/"+id+"/pid 2>/dev/null; true")); rec != h.Attrs["pid"] {
		t.Errorf("the host's record names pid %q, the handle %s", rec, h.Attrs["pid"])
	}
	c := backendtest.Dial(ctx, t, b, h, token)
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Destroy(ctx, h); err != nil {
		t.Fatal(err)
	}
	if !gone(t, host, id) {
		t.Errorf("workspace %s left on the host after destroy", id)
	}
}
