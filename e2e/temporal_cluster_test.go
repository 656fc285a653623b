package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/wire"
)

// TestServeOnTemporalCluster is the `primer serve --role all` binary on a
// real Temporal cluster (deploy/temporal: its own process, PostgreSQL
// persistence and visibility) and PostgreSQL, configured as an operator
// would, by environment variables: a workspace is created, runs a command
// and is deleted, and SIGTERM stops the process with exit status 0.
func TestServeOnTemporalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary on a Temporal cluster; run without -short")
	}
	addr, ns := testenv.TemporalNamespace(t)
	dbURL := testenv.PostgresURL(t)
	bin := filepath.Join(t.TempDir(), "primer")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/primer").CombinedOutput(); err != nil {
		t.Fatalf("build primer: %v\n%s", err, out)
	}
	listen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	dataDir := t.TempDir()
	cmd := exec.Command(bin, "serve", "--role", "all")
	cmd.Env = append(os.Environ(),
		"PRIMER_ADDR="+listen,
		"PRIMER_DATA_DIR="+dataDir,
		"PRIMER_DATABASE_URL="+dbURL,
		"PRIMER_TEMPORAL_ADDRESS="+addr,
		"PRIMER_TEMPORAL_NAMESPACE="+ns,
		"PRIMER_PROBE_INTERVAL=1s",
	)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	waitReadyz(t, "http://"+listen, "primer serve --role all")
	key, err := os.ReadFile(filepath.Join(dataDir, client.AdminKeyFile))
	if err != nil {
		t.Fatalf("admin key: %v", err)
	}
	api := client.New("http://"+listen, client.WithToken(strings.TrimSpace(string(key))))
	ctx := ctxT(t, 3*time.Minute)

	ws, err := api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
	if err != nil {
		t.Fatalf("create workspace: %v", err)
	}
	if ws, err = api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil); err != nil {
		t.Fatalf("workspace %s: %v", ws.ID, err)
	}
	res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: ws.ID, Command: []string{"sh", "-c", "echo on the cluster; exit 5"}})
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	if res.ExitCode != 5 || res.Stdout != "on the cluster\n" {
		t.Errorf("exec = exit %d stdout %q stderr %q, want 5 and %q", res.ExitCode, res.Stdout, res.Stderr, "on the cluster\n")
	}
	// The workflow's phase reaches the cluster's SQL visibility through
	// Primer's search attributes, which the cluster did not have before.
	tc, err := temporalclient.Dial(temporalclient.Options{HostPort: addr, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	eventually(t, 30*time.Second, "the running workspace in the cluster's visibility", func() bool {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: ns, Query: "PrimerPhase = 'running'",
		})
		return err == nil && len(resp.GetExecutions()) == 1
	})
	if _, err := api.DeleteWorkspace(ctx, ws.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := api.WaitGone(ctx, ws.ID, nil); err != nil {
		t.Fatalf("wait gone: %v", err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("primer serve after SIGTERM: %v, want exit status 0", err)
		}
	case <-time.After(60 * time.Second):
		t.Error("primer serve did not stop within 60s of SIGTERM")
	}
}
