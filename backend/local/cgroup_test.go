package local_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// daemonScript starts a daemon that leaves the exec's process group and
// session (setsid) and prints its pid once it runs.
const daemonScript = `setsid sh -c 'echo $$ > daemon.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 &
while [ ! -s daemon.pid ]; do sleep 0.01; done; cat daemon.pid`

// TestResetAndDeleteKillSetsidDaemon: a command's setsid daemon does not
// outlive the workspace's reset nor its delete, where the host has a
// writable cgroup v2 (the workspace's cgroup holds it).
func TestResetAndDeleteKillSetsidDaemon(t *testing.T) {
	if local.CgroupBase() == "" {
		t.Skip("no writable cgroup v2 here: a setsid daemon outlives reset and delete (docs/DECISIONS.md, local backend)")
	}
	for _, end := range []string{"reset", "delete"} {
		t.Run(end, func(t *testing.T) {
			b, _ := newBackend(t)
			ctx := t.Context()
			id, token := backendtest.NewID(t), backendtest.NewToken(t)
			h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Token: token, Template: json.RawMessage(`{"kind":"local"}`)})
			if err != nil {
				t.Fatal(err)
			}
			ep, err := b.Endpoint(ctx, h, token)
			if err != nil {
				t.Fatal(err)
			}
			c, err := client.Dial(ctx, ep.URL, token)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var out bytes.Buffer
			res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", daemonScript}}, &out, nil)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("start daemon: %+v, %v", res, err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
			if err != nil {
				t.Fatalf("daemon pid %q: %v", out.String(), err)
			}
			t.Cleanup(func() { _ = killIfAlive(pid) })
			if !alive(pid) {
				t.Fatalf("daemon %d is not running after its exec returned", pid)
			}
			switch end {
			case "reset":
				if _, err := c.Reset(ctx); err != nil {
					t.Fatal(err)
				}
			case "delete":
				if err := b.Destroy(ctx, h); err != nil {
					t.Fatal(err)
				}
			}
			// Reset and delete wait for the cgroup to be empty: no wait here.
			if alive(pid) {
				t.Errorf("the setsid daemon %d outlived the workspace's %s", pid, end)
			}
			if end == "reset" {
				// The workspace works on after its reset.
				res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo again"}}, nil, nil)
				if err != nil || res.ExitCode != 0 || string(res.Stdout) != "again\n" {
					t.Errorf("exec after reset = %+v, %v; want exit 0 and its output", res, err)
				}
			}
		})
	}
}

// alive reports whether pid runs (a zombie has ended).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func killIfAlive(pid int) error {
	if !alive(pid) {
		return nil
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
