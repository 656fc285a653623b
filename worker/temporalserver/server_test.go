package temporalserver

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/errs"
)

const taskQueue = "temporalserver-test"

// PhaseInput names a keyword search attribute and the value to upsert.
type PhaseInput struct {
	Attribute string
	Value     string
}

// PhaseOutput echoes what was upserted.
type PhaseOutput struct {
	Greeting string
}

// phaseWorkflow upserts a keyword search attribute and completes.
func phaseWorkflow(ctx workflow.Context, in PhaseInput) (PhaseOutput, error) {
	key := temporal.NewSearchAttributeKeyKeyword(in.Attribute)
	if err := workflow.UpsertTypedSearchAttributes(ctx, key.ValueSet(in.Value)); err != nil {
		return PhaseOutput{}, err
	}
	return PhaseOutput{Greeting: "hello " + in.Value}, nil
}

// TestServer runs the whole life of an embedded server: a cold start on an
// empty data dir, a workflow, a search attribute query, the UI, a stop, and
// a warm restart on the same dir and ports that still has the workflow and
// registers a search attribute added since.
func TestServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server (10-30 s); run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	ports, err := freePorts("127.0.0.1", 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		DataDir:          filepath.Join(t.TempDir(), "temporal"), // not there yet: Start creates it
		Port:             ports[0],
		UIPort:           ports[1],
		Namespace:        "primer-test",
		SearchAttributes: map[string]enumspb.IndexedValueType{"PrimerPhase": enumspb.INDEXED_VALUE_TYPE_KEYWORD},
		Logger:           testLogger(t),
	}

	begin := time.Now()
	srv, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("cold start: %v", err)
	}
	t.Logf("cold start: %s, rss after start: %s", time.Since(begin).Round(time.Millisecond), rss())
	stopped := false
	defer func() {
		if !stopped {
			_ = srv.Stop()
		}
	}()

	if got, want := srv.FrontendAddress(), "127.0.0.1:"+strconv.Itoa(cfg.Port); got != want {
		t.Errorf("FrontendAddress() = %q, want %q", got, want)
	}
	if got, want := srv.UIAddress(), "http://127.0.0.1:"+strconv.Itoa(cfg.UIPort); got != want {
		t.Errorf("UIAddress() = %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "temporal.db")); err != nil {
		t.Errorf("database file: %v", err)
	}

	c := dial(ctx, t, srv, cfg.Namespace)
	ns, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: cfg.Namespace})
	if err != nil {
		t.Fatalf("describe namespace: %v", err)
	}
	if got := ns.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != DefaultRetention {
		t.Errorf("namespace retention = %s, want %s", got, DefaultRetention)
	}

	first := runPhaseWorkflow(ctx, t, c, "first", PhaseInput{Attribute: "PrimerPhase", Value: "running"})
	waitListed(ctx, t, c, `PrimerPhase = 'running'`, first)

	t.Run("ui serves html", func(t *testing.T) {
		resp, err := http.Get(srv.UIAddress() + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s/: status %d", srv.UIAddress(), resp.StatusCode)
		}
		if !bytes.Contains(bytes.ToLower(body), []byte("<html")) {
			t.Errorf("GET %s/: no <html in %d bytes", srv.UIAddress(), len(body))
		}

		// The UI's API proxies to this server's frontend.
		api := srv.UIAddress() + "/api/v1/namespaces/" + cfg.Namespace
		resp, err = http.Get(api)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		var ns struct {
			NamespaceInfo struct{ Name string } `json:"namespaceInfo"`
		}
		if err := json.Unmarshal(body, &ns); resp.StatusCode != http.StatusOK || err != nil || ns.NamespaceInfo.Name != cfg.Namespace {
			t.Errorf("GET %s: status %d, body %.300s", api, resp.StatusCode, body)
		}
	})

	c.Close()
	if err := srv.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
	stopped = true
	if resp, err := http.Get(srv.UIAddress() + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("ui still answers after Stop")
	}

	// Restart on the same dir and ports, with a search attribute that the
	// namespace does not have yet.
	cfg.SearchAttributes = map[string]enumspb.IndexedValueType{
		"PrimerPhase":    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"PrimerTemplate": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
	begin = time.Now()
	srv2, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("warm start: %v", err)
	}
	t.Logf("warm start (registers PrimerTemplate, so includes the 3 s namespace refresh wait): %s, rss after start: %s", time.Since(begin).Round(time.Millisecond), rss())
	defer func() {
		if err := srv2.Stop(); err != nil {
			t.Errorf("stop after restart: %v", err)
		}
		if err := srv2.Stop(); err != nil {
			t.Errorf("second stop after restart: %v", err)
		}
	}()

	c2 := dial(ctx, t, srv2, cfg.Namespace)
	defer c2.Close()
	desc, err := c2.DescribeWorkflowExecution(ctx, first.GetID(), first.GetRunID())
	if err != nil {
		t.Fatalf("describe the first workflow after restart: %v", err)
	}
	if got := desc.GetWorkflowExecutionInfo().GetStatus(); got != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("first workflow status after restart = %s, want COMPLETED", got)
	}
	var out PhaseOutput
	if err := c2.GetWorkflow(ctx, first.GetID(), first.GetRunID()).Get(ctx, &out); err != nil || out.Greeting != "hello running" {
		t.Errorf("first workflow result after restart = %+v, %v; want hello running", out, err)
	}
	waitListed(ctx, t, c2, `PrimerPhase = 'running'`, first)

	second := runPhaseWorkflow(ctx, t, c2, "second", PhaseInput{Attribute: "PrimerTemplate", Value: "code-sandbox"})
	waitListed(ctx, t, c2, `PrimerTemplate = 'code-sandbox'`, second)
}

// TestTwoServers starts two servers side by side in one process, as two
// Primers in one test binary do, and checks that each serves its own
// namespace.
func TestTwoServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two Temporal servers; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var servers [2]*Server
	for i := range servers {
		// A port is picked right before its server starts: the first
		// server's own internal ports (and any other process) may take one
		// picked earlier. A port taken between the pick and the listen is
		// picked again.
		var srv *Server
		var err error
		for try := 0; try < 3; try++ {
			var ports []int
			if ports, err = freePorts("127.0.0.1", 1); err != nil {
				t.Fatal(err)
			}
			srv, err = Start(ctx, Config{
				DataDir:   t.TempDir(),
				Port:      ports[0],
				UIPort:    UIDisabled,
				Namespace: fmt.Sprintf("ns-%d", i),
				Logger:    testLogger(t),
			})
			if err == nil || !strings.Contains(err.Error(), "address already in use") {
				break
			}
		}
		if err != nil {
			t.Fatalf("start server %d: %v", i, err)
		}
		defer srv.Stop()
		servers[i] = srv
	}
	for i, srv := range servers {
		if srv.UIAddress() != "" {
			t.Errorf("server %d: UIAddress() = %q with the UI disabled", i, srv.UIAddress())
		}
		c := dial(ctx, t, srv, fmt.Sprintf("ns-%d", i))
		_, err := c.WorkflowService().DescribeNamespace(ctx,
			&workflowservice.DescribeNamespaceRequest{Namespace: fmt.Sprintf("ns-%d", 1-i)})
		if err == nil {
			t.Errorf("server %d has the other server's namespace ns-%d", i, 1-i)
		}
		c.Close()
	}
}

func TestConfigDefaults(t *testing.T) {
	got, err := Config{DataDir: "d"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if got.Host != "127.0.0.1" || got.Port != 7233 || got.UIPort != 8233 ||
		got.Namespace != "default" || got.Retention != 72*time.Hour || got.Logger == nil {
		t.Errorf("defaults = %+v", got)
	}
	local, err := Config{DataDir: "d", Host: "localhost", UIPort: UIDisabled}.withDefaults()
	if err != nil || local.Host != "127.0.0.1" || local.UIPort != UIDisabled {
		t.Errorf("localhost, ui disabled = %+v, %v", local, err)
	}
	if h := (Config{Host: "0.0.0.0"}).dialHost(); h != "127.0.0.1" {
		t.Errorf("dialHost of 0.0.0.0 = %q, want 127.0.0.1", h)
	}
}

func TestConfigInvalid(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no data dir", Config{}, "data_dir"},
		{"host name", Config{DataDir: "d", Host: "example.com"}, "host"},
		{"port too big", Config{DataDir: "d", Port: 70000}, "port"},
		{"negative port", Config{DataDir: "d", Port: -5}, "port"},
		{"ui port too big", Config{DataDir: "d", UIPort: 65536}, "ui_port"},
		{"ui port -2", Config{DataDir: "d", UIPort: -2}, "ui_port"},
		{"same ports", Config{DataDir: "d", Port: 9000, UIPort: 9000}, "ui_port"},
		{"short retention", Config{DataDir: "d", Retention: time.Minute}, "retention"},
		{"empty attribute", Config{DataDir: "d", SearchAttributes: map[string]enumspb.IndexedValueType{"": enumspb.INDEXED_VALUE_TYPE_KEYWORD}}, "search_attributes"},
		{"unspecified type", Config{DataDir: "d", SearchAttributes: map[string]enumspb.IndexedValueType{"A": enumspb.INDEXED_VALUE_TYPE_UNSPECIFIED}}, "search_attributes"},
		{"unknown type", Config{DataDir: "d", SearchAttributes: map[string]enumspb.IndexedValueType{"A": 99}}, "search_attributes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.withDefaults()
			if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tc.field {
				t.Errorf("withDefaults() = %v (kind %s, field %q), want invalid %s",
					err, errs.KindOf(err), errs.FieldOf(err), tc.field)
			}
		})
	}
}

func TestStartPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := filepath.Join(t.TempDir(), "data")

	_, err = Start(context.Background(), Config{DataDir: dir, Port: port, UIPort: UIDisabled})
	if !errs.Is(err, errs.Conflict) || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Fatalf("Start on a taken port = %v, want a conflict naming port %d", err, port)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data dir created although the start failed early: %v", err)
	}
}

func TestPrepareFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "temporal.db")
	for i := range 2 { // the second run finds the schema and leaves it
		if err := prepareFile(context.Background(), path); err != nil {
			t.Fatalf("prepareFile run %d: %v", i+1, err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"namespaces", "executions", "history_node", "executions_visibility", "cluster_metadata_info"} {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil || n != 1 {
			t.Errorf("table %s: count %d, %v", table, n, err)
		}
	}
	var version int64
	if err := db.QueryRow(`SELECT notification_version FROM namespace_metadata`).Scan(&version); err != nil || version != 1 {
		t.Errorf("namespace_metadata seeded once: version %d, %v", version, err)
	}

	// A member left by a previous run is forgotten at the next start.
	if _, err := db.Exec(`INSERT INTO cluster_membership (membership_partition, host_id, rpc_address, rpc_port, role)
		VALUES (0, x'00112233445566778899aabbccddeeff', '127.0.0.1', 40000, 1)`); err != nil {
		t.Fatal(err)
	}
	if err := prepareFile(context.Background(), path); err != nil {
		t.Fatalf("prepareFile run 3: %v", err)
	}
	var members int
	if err := db.QueryRow(`SELECT count(*) FROM cluster_membership`).Scan(&members); err != nil || members != 0 {
		t.Errorf("cluster members after prepareFile = %d, %v; want 0", members, err)
	}
}

func TestFreePorts(t *testing.T) {
	ports, err := freePorts("127.0.0.1", 7, 7233, 8233)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] || p == 7233 || p == 8233 || p <= 0 {
			t.Errorf("port %d: duplicate or reserved in %v", p, ports)
		}
		seen[p] = true
	}
}

// dial connects an SDK client to srv and closes it when the test ends.
func dial(ctx context.Context, t *testing.T, srv *Server, namespace string) client.Client {
	t.Helper()
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  srv.FrontendAddress(),
		Namespace: namespace,
		Logger:    sdklog.NewStructuredLogger(testLogger(t)),
	})
	if err != nil {
		t.Fatalf("dial %s: %v", srv.FrontendAddress(), err)
	}
	t.Cleanup(c.Close)
	return c
}

// runPhaseWorkflow runs phaseWorkflow on a worker to completion.
func runPhaseWorkflow(ctx context.Context, t *testing.T, c client.Client, id string, in PhaseInput) client.WorkflowRun {
	t.Helper()
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(phaseWorkflow, workflow.RegisterOptions{Name: "PhaseWorkflow"})
	if err := w.Start(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	defer w.Stop()

	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(runCtx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue}, "PhaseWorkflow", in)
	if err != nil {
		t.Fatalf("start workflow %s: %v", id, err)
	}
	var out PhaseOutput
	if err := run.Get(runCtx, &out); err != nil {
		t.Fatalf("workflow %s: %v", id, err)
	}
	if want := "hello " + in.Value; out.Greeting != want {
		t.Fatalf("workflow %s = %q, want %q", id, out.Greeting, want)
	}
	return run
}

// waitListed polls ListWorkflow until query finds run: visibility is written
// after the workflow task, so it can lag.
func waitListed(ctx context.Context, t *testing.T, c client.Client, query string, run client.WorkflowRun) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := poll(ctx, func() error {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return err
		}
		for _, e := range resp.GetExecutions() {
			if e.GetExecution().GetRunId() == run.GetRunID() {
				return nil
			}
		}
		return fmt.Errorf("%d executions, none is %s", len(resp.GetExecutions()), run.GetID())
	})
	if err != nil {
		t.Fatalf("list %q: %v", query, err)
	}
}

// testLogger logs Warn and up to the test log until the test ends; the
// server's goroutines may outlive a failed test, and testing panics on a
// late Log.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// rss reads this process's resident set size (Linux only).
func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
