package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/workflows"
)

// This file runs Primer scaled apart the way a deployment does: several
// `primer serve --role api` and `--role worker` processes (the real binary,
// so that one can be killed with SIGKILL) on one PostgreSQL and one real
// Temporal cluster, in a Temporal namespace of the test's own so that
// concurrent tests and runs never pick up each other's workflows.

// clusterClient connects to namespace ns of the Temporal cluster at addr,
// for what the tests check there.
func clusterClient(t *testing.T, addr, ns string) tclient.Client {
	t.Helper()
	c, err := tclient.DialContext(ctxT(t, time.Minute), tclient.Options{HostPort: addr, Namespace: ns, Logger: quietSDK{}})
	if err != nil {
		t.Fatalf("connect to namespace %s at %s: %v", ns, addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// clusterConfig is what a test's Primer cluster is made of.
type clusterConfig struct {
	APIs, Workers int
	// Probe is PRIMER_PROBE_INTERVAL.
	Probe time.Duration
	// Env is more settings (NAME=value) for every process, after the
	// ones above: a name given again here wins.
	Env []string
}

// primerCluster is one test's Primer scaled apart: API and worker
// processes sharing a data dir (the local backend's root, and admin.key),
// a PostgreSQL schema and a Temporal namespace.
type primerCluster struct {
	t         *testing.T
	bin       string
	env       []string // the settings every process shares
	dataDir   string
	root      string // the local backend's workspace root
	namespace string
	temporal  tclient.Client // of the namespace
	key       string         // the first admin key
	apis      []*clusterProc
	workers   []*clusterProc
}

// clusterProc is one `primer serve --role <role>` child process.
type clusterProc struct {
	c    *primerCluster
	role string
	name string // api-0, worker-1, ...
	url  string // the API's base URL (every role listens on its own port)
	log  string
	api  *client.Client // api role only

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan error // receives the exit once; nil once it was received
}

// startCluster starts cfg.APIs API replicas and cfg.Workers workers on the
// Temporal cluster and a fresh PostgreSQL schema, and returns once every
// API answers /readyz and every worker polls the namespace's task queue.
func startCluster(t *testing.T, cfg clusterConfig) *primerCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: runs without -short")
	}
	// The namespace is the test's own; the first API replica adds Primer's
	// search attributes to it before it answers.
	addr, ns := testenv.TemporalNamespace(t)
	tc := clusterClient(t, addr, ns)
	dbURL := testenv.PostgresURL(t)
	dir := t.TempDir()
	c := &primerCluster{
		t:         t,
		bin:       primerBinary(t),
		dataDir:   filepath.Join(dir, "data"),
		namespace: ns,
		temporal:  tc,
	}
	c.root = filepath.Join(c.dataDir, "workspaces")
	// The children take nothing of the test's own PRIMER_* settings.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PRIMER_") {
			c.env = append(c.env, kv)
		}
	}
	level := "info"
	if os.Getenv("PRIMER_TEST_LOG") != "" {
		level = "debug"
	}
	c.env = append(c.env,
		"PRIMER_DATA_DIR="+c.dataDir,
		"PRIMER_DATABASE_URL="+dbURL,
		"PRIMER_TEMPORAL_ADDRESS="+addr,
		"PRIMER_TEMPORAL_NAMESPACE="+ns,
		"PRIMER_TEMPORAL_UI_PORT=-1",
		"PRIMER_PROBE_INTERVAL="+cfg.Probe.String(),
		// A create cut off by a killed API replica leaves a pending row
		// without a workflow; the reconciler adopts it after the grace.
		"PRIMER_RECONCILE_INTERVAL=2s",
		"PRIMER_ORPHAN_GRACE=5s",
		"PRIMER_LOG_LEVEL="+level,
	)
	c.env = append(c.env, cfg.Env...)
	t.Cleanup(func() {
		for _, p := range append(append([]*clusterProc{}, c.apis...), c.workers...) {
			p.stop()
		}
		if t.Failed() {
			for _, p := range append(append([]*clusterProc{}, c.apis...), c.workers...) {
				p.dumpLog()
			}
		}
	})
	t.Logf("cluster: Temporal %s namespace %s, %d API, %d workers, probes every %s", addr, ns, cfg.APIs, cfg.Workers, cfg.Probe)

	// The first API replica alone writes admin.key (the others find a key
	// in the database and write none) before it listens.
	begin := time.Now()
	for i := range cfg.APIs {
		c.apis = append(c.apis, c.newProc("api", i))
	}
	for i := range cfg.Workers {
		c.workers = append(c.workers, c.newProc("worker", i))
	}
	if len(c.apis) > 0 {
		c.apis[0].start()
		c.apis[0].waitReady()
	}
	for _, p := range c.apis[1:] {
		p.start()
	}
	for _, p := range c.workers {
		p.start()
	}
	for _, p := range c.apis[1:] {
		p.waitReady()
	}
	for _, p := range c.workers {
		p.waitPolling()
	}
	t.Logf("cluster ready in %s", time.Since(begin).Round(time.Millisecond))
	return c
}

func (c *primerCluster) newProc(role string, i int) *clusterProc {
	name := role + "-" + strconv.Itoa(i)
	return &clusterProc{
		c:    c,
		role: role,
		name: name,
		url:  "http://127.0.0.1:" + strconv.Itoa(freePort(c.t)),
		log:  filepath.Join(filepath.Dir(c.dataDir), name+".log"),
	}
}

// start starts the process; it returns at once.
func (p *clusterProc) start() {
	t := p.c.t
	t.Helper()
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logf, "---- primer serve --role %s starting at %s\n", p.role, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.c.bin, "serve", "--role", p.role)
	cmd.Env = append(append([]string{}, p.c.env...), "PRIMER_ADDR="+strings.TrimPrefix(p.url, "http://"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s: %v", p.name, err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		logf.Close()
		done <- err
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
}

// pid is the process id of the running process.
func (p *clusterProc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// exited reports (once) whether the process has exited, and how.
func (p *clusterProc) exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return true, nil
	}
	select {
	case err := <-p.done:
		p.done = nil
		return true, err
	default:
		return false, nil
	}
}

// failedEarly fails the test when the process exited while it was coming
// up.
func (p *clusterProc) failedEarly(err error) {
	t := p.c.t
	t.Helper()
	p.dumpLog()
	t.Fatalf("%s exited before it was ready: %v", p.name, err)
}

// waitReady waits until an API replica answers /readyz, and gives it a
// client with the admin key.
func (p *clusterProc) waitReady() {
	t := p.c.t
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if gone, err := p.exited(); gone {
			p.failedEarly(err)
		}
		if resp, err := http.Get(p.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if p.c.key == "" {
					key, err := os.ReadFile(filepath.Join(p.c.dataDir, client.AdminKeyFile))
					if err != nil {
						t.Fatalf("read admin key: %v", err)
					}
					p.c.key = strings.TrimSpace(string(key))
				}
				p.api = client.New(p.url, client.WithPollInterval(200*time.Millisecond), client.WithToken(p.c.key))
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.dumpLog()
	t.Fatalf("%s not ready within 2m", p.name)
}

// waitPolling waits until a worker polls the namespace's workflow and
// activity task queues: the SDK's default identity starts with the pid.
func (p *clusterProc) waitPolling() {
	t := p.c.t
	t.Helper()
	ctx := ctxT(t, 2*time.Minute)
	prefix := strconv.Itoa(p.pid()) + "@"
	for {
		if gone, err := p.exited(); gone {
			p.failedEarly(err)
		}
		n := 0
		for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
			resp, err := p.c.temporal.DescribeTaskQueue(ctx, workflows.TaskQueue, typ)
			if err != nil {
				continue
			}
			for _, pl := range resp.GetPollers() {
				if strings.HasPrefix(pl.GetIdentity(), prefix) {
					n++
					break
				}
			}
		}
		if n == 2 {
			return
		}
		select {
		case <-ctx.Done():
			p.dumpLog()
			t.Fatalf("%s (pid %d) not polling task queue %s within 2m", p.name, p.pid(), workflows.TaskQueue)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// identity is the prefix of the Temporal worker identity of the process.
func (p *clusterProc) identity() string { return strconv.Itoa(p.pid()) + "@" }

// kill sends SIGKILL and waits until the process is gone.
func (p *clusterProc) kill() {
	p.c.t.Helper()
	if cmd, done := p.take(); done != nil {
		killProc(p.c.t, p.name, cmd, done)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *clusterProc) stop() {
	if cmd, done := p.take(); done != nil {
		stopProc(p.c.t, p.name, cmd, done)
	}
}

// take returns the running process and its exit channel, and forgets them;
// done is nil when the process has already been waited for.
func (p *clusterProc) take() (*exec.Cmd, chan error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd, done := p.cmd, p.done
	p.done = nil
	return cmd, done
}

// dumpLog logs the last lines the process wrote.
func (p *clusterProc) dumpLog() { logTail(p.c.t, p.name, p.log, 80) }

// lastWorker returns the identity of the worker that completed the latest
// workflow task of workflow wid (its current run): the worker whose cache
// holds it.
func (c *primerCluster) lastWorker(ctx context.Context, wid string) (string, error) {
	resp, err := c.temporal.WorkflowService().GetWorkflowExecutionHistoryReverse(ctx,
		&workflowservice.GetWorkflowExecutionHistoryReverseRequest{
			Namespace:       c.namespace,
			Execution:       &commonpb.WorkflowExecution{WorkflowId: wid},
			MaximumPageSize: 100,
		})
	if err != nil {
		return "", err
	}
	for _, e := range resp.GetHistory().GetEvents() {
		if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			return a.GetIdentity(), nil
		}
	}
	return "", errs.E(errs.NotFound, "workflow %s: no completed workflow task in its last 100 events", wid)
}

// describeWorkflow says whether workspace id's workflow exists and how it
// stands, for the message of a wait that timed out.
func (c *primerCluster) describeWorkflow(id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := c.temporal.DescribeWorkflowExecution(ctx, workflows.WorkflowID(id), "")
	if err != nil {
		return "workflow: " + err.Error()
	}
	info := d.GetWorkflowExecutionInfo()
	return fmt.Sprintf("workflow %s, %d history events, %d pending activities",
		info.GetStatus(), info.GetHistoryLength(), len(d.GetPendingActivities()))
}
