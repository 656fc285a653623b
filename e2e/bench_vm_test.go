//go:build bench

package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/backend/vm/vmtest"
	rtclient "github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// TestBenchVM measures the vm backend's targets (issue 15) on a real sshd
// host against OpenSSH's own client in the same run: create to first exec
// against a fresh `ssh host true`; an exec of `true` through the kept
// tunnel (p50 under 5 ms and at least 10x faster than a fresh ssh); a
// 1 MiB write and read against scp up and back.
func TestBenchVM(t *testing.T) {
	requireBench(t)
	// Only the baselines need OpenSSH's client; make test and .ci/run do not.
	for _, bin := range []string{"ssh", "scp"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("the baseline needs OpenSSH's %s on PATH: apt-get install openssh-client", bin)
		}
	}
	host := vmtest.Start(t, vmtest.Options{})
	p := startPrimer(t, withContainers(t), withProbeInterval(workflows.DefaultProbeInterval))
	ctx := ctxT(t, 20*time.Minute)
	conn := host.Connection(t)
	config := vmProviderJSON(t, conn, host)
	if _, err := p.api.CreateProvider(ctx, wire.ProviderSpec{ID: "fleet", Provider: "vm", Config: raw(config)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "box", ProviderID: "fleet", Backend: raw(`{"kind":"vm","root":"/srv/primer","user":"primer-ws"}`)}); err != nil {
		t.Fatal(err)
	}
	hostName, port, _ := net.SplitHostPort(host.Addr)
	sshArgs := []string{"-q", "-i", conn.PrivateKeyFile, "-o", "UserKnownHostsFile=" + conn.KnownHosts, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes"}
	sshTrue := func() error {
		out, err := exec.Command("ssh", append(sshArgs, "-p", port, "root@"+hostName, "true")...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ssh true: %v: %s", err, out)
		}
		return nil
	}

	// 1. Create to first exec, against a fresh ssh true; removal untimed.
	var created []time.Duration
	for range 10 {
		start := time.Now()
		ws, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "box"})
		if err == nil {
			_, err = p.api.WaitWorkspace(ctx, ws.ID, "running", nil)
		}
		if err == nil {
			err = apiExecTrue(ctx, p, ws.ID)()
		}
		if err != nil {
			t.Fatalf("create to first exec: %v", err)
		}
		created = append(created, time.Since(start))
		if _, err := p.api.DeleteWorkspace(ctx, ws.ID); err != nil {
			t.Fatal(err)
		}
		if err := p.api.WaitGone(ctx, ws.ID, nil); err != nil {
			t.Fatal(err)
		}
	}
	sshFresh := timeN(t, 30, sshTrue)

	// 2. Exec through the tunnel, and 3. 1 MiB up and back, on one workspace.
	ws := createRunning(t, p, "box")
	b, err := vm.New(json.RawMessage(config), vm.Options{Runtime: containertest.RuntimeBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	h := storedHandle(t, p, ctx, ws.ID)
	wsRow, err := p.srv.Store().GetWorkspace(ctx, ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	token := wsRow.RuntimeToken
	ep, err := b.Endpoint(ctx, h, token)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rtclient.Dial(ctx, ep.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	timeN(t, 20, runtimeExecTrue(ctx, rt)) // warm up
	tunnel := timeN(t, 300, runtimeExecTrue(ctx, rt))
	api := timeN(t, 100, apiExecTrue(ctx, p, ws.ID))

	mib := make([]byte, 1<<20)
	if _, err := rand.Read(mib); err != nil {
		t.Fatal(err)
	}
	ours := timeN(t, 20, func() error {
		if err := rt.WriteFile(ctx, "mib.bin", mib, 0o600); err != nil {
			return err
		}
		got, err := rt.ReadFile(ctx, "mib.bin")
		if err == nil && !bytes.Equal(got, mib) {
			err = fmt.Errorf("read back %d bytes, not the 1 MiB written", len(got))
		}
		return err
	})
	dir := t.TempDir()
	local, back := filepath.Join(dir, "mib.bin"), filepath.Join(dir, "back.bin")
	if err := os.WriteFile(local, mib, 0o600); err != nil {
		t.Fatal(err)
	}
	scpArgs := append(append([]string(nil), sshArgs...), "-P", port)
	scp := timeN(t, 20, func() error {
		if out, err := exec.Command("scp", append(scpArgs, local, "root@"+hostName+":/tmp/mib.bin")...).CombinedOutput(); err != nil {
			return fmt.Errorf("scp up: %v: %s", err, out)
		}
		if out, err := exec.Command("scp", append(scpArgs, "root@"+hostName+":/tmp/mib.bin", back)...).CombinedOutput(); err != nil {
			return fmt.Errorf("scp back: %v: %s", err, out)
		}
		return nil
	})

	if r := float64(pct(sshFresh, .5)) / float64(pct(tunnel, .5)); r < 10 {
		t.Errorf("exec through the tunnel is %.1fx faster than a fresh ssh host true, want at least 10x", r)
	}
	printTable(t, "vm backend (issue 15): one sshd host (Docker, loopback)", []row{
		{name: "create to first exec", target: "-", samples: created, baseName: "ssh host true (fresh)", baseline: sshFresh},
		{name: "exec true through the tunnel (runtime client)", target: "p50 < 5 ms, >= 10x ssh", samples: tunnel, baseName: "ssh host true (fresh)", baseline: sshFresh, limit: 5 * time.Millisecond},
		{name: "exec true through the API", target: "-", samples: api, baseName: "ssh host true (fresh)", baseline: sshFresh},
		{name: "1 MiB write + read", target: "-", samples: ours, baseName: "scp up + back", baseline: scp},
	})
}
