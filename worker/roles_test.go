package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	apiclient "github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// TestRolesOnTemporalCluster splits Primer into an api-role and a
// worker-role process (in one test process) on a real Temporal cluster and
// PostgreSQL: the API alone runs no worker (no pollers on the task queue, no
// reconciler) yet serves /v1; the worker serves no /v1 but its health and
// metrics, makes no admin key, and runs the workspace the API creates.
func TestRolesOnTemporalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Temporal cluster and PostgreSQL; runs without -short")
	}
	addr, ns := testenv.TemporalNamespace(t)
	dbURL := testenv.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := func(role Role) *Server {
		t.Helper()
		srv, err := Start(ctx, Config{
			Role:              role,
			Addr:              "127.0.0.1:0",
			DataDir:           t.TempDir(),
			DatabaseURL:       dbURL,
			TemporalAddress:   addr,
			TemporalNamespace: ns,
			ProbeInterval:     time.Second,
		}, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			t.Fatalf("start --role %s: %v", role, err)
		}
		t.Cleanup(func() { srv.Stop() })
		return srv
	}
	tc := testTemporal(t, addr, ns)

	apiSrv := start(RoleAPI)
	if apiSrv.worker != nil {
		t.Error("api role: a Temporal worker was made")
	}
	if n := pollers(t, tc, ns); n != 0 {
		t.Errorf("api role alone: %d pollers on task queue %s, want 0", n, workflows.TaskQueue)
	}
	_, err := tc.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
		Namespace: ns, Execution: &commonpb.WorkflowExecution{WorkflowId: workflows.ReconcilerWorkflowID},
	})
	var notFound *serviceerror.NotFound
	if !errors.As(err, &notFound) {
		t.Errorf("api role alone: reconciler workflow: %v, want not found (the api role starts no background workflow)", err)
	}
	key, err := os.ReadFile(apiSrv.AdminKeyPath())
	if err != nil {
		t.Fatalf("api role: admin key: %v", err)
	}
	api := apiclient.New(apiSrv.URL(), apiclient.WithToken(strings.TrimSpace(string(key))))
	if _, err := api.ListWorkspaces(ctx, apiclient.WorkspaceListOptions{}); err != nil {
		t.Fatalf("api role: list workspaces: %v", err)
	}

	workerSrv := start(RoleWorker)
	if _, err := os.Stat(workerSrv.AdminKeyPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("worker role: %s: %v, want no admin key file", workerSrv.AdminKeyPath(), err)
	}
	if n, err := countKeys(ctx, apiSrv.Store()); err != nil || n != 1 {
		t.Errorf("api keys after both started = %d (%v), want 1", n, err)
	}
	for path, want := range map[string]int{"/v1/workspaces": 404, "/v1/tenants": 404, "/healthz": 200, "/readyz": 200, "/metrics": 200} {
		if got := status(t, workerSrv.URL()+path, string(key)); got != want {
			t.Errorf("worker role: GET %s = %d, want %d", path, got, want)
		}
	}
	// The positive control: the pollers check sees a worker's pollers.
	deadline := time.Now().Add(30 * time.Second)
	for pollers(t, tc, ns) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("worker role: no pollers on the task queue within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The API starts the workflow, the worker runs it.
	ws, err := api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
	if err != nil {
		t.Fatalf("create workspace through the api role: %v", err)
	}
	if ws, err = api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil); err != nil {
		t.Fatalf("workspace %s: %v", ws.ID, err)
	}
	res, err := api.Exec(ctx, apiclient.ExecRequest{WorkspaceID: ws.ID, Command: []string{"sh", "-c", "echo split; exit 2"}})
	if err != nil || res.ExitCode != 2 || res.Stdout != "split\n" {
		t.Errorf("exec through the api role = %+v, %v; want exit 2, stdout %q", res, err, "split\n")
	}
	if _, err := api.DeleteWorkspace(ctx, ws.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := api.WaitGone(ctx, ws.ID, nil); err != nil {
		t.Fatalf("wait gone: %v", err)
	}
}

// testTemporal is a Temporal client of the test's own namespace.
func testTemporal(t *testing.T, addr, ns string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: ns, Logger: discardLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// pollers counts the workflow and activity pollers on Primer's task queue.
func pollers(t *testing.T, c client.Client, ns string) int {
	t.Helper()
	n := 0
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := c.WorkflowService().DescribeTaskQueue(context.Background(), &workflowservice.DescribeTaskQueueRequest{
			Namespace:     ns,
			TaskQueue:     &taskqueuepb.TaskQueue{Name: workflows.TaskQueue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
			TaskQueueType: typ,
		})
		if err != nil {
			t.Fatalf("describe task queue %s (%s): %v", workflows.TaskQueue, typ, err)
		}
		n += len(resp.GetPollers())
	}
	return n
}

func status(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func countKeys(ctx context.Context, s *models.Store) (int64, error) { return s.CountAPIKeys(ctx) }

type discardLogger struct{}

func (discardLogger) Debug(string, ...any) {}
func (discardLogger) Info(string, ...any)  {}
func (discardLogger) Warn(string, ...any)  {}
func (discardLogger) Error(string, ...any) {}
