package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	tclient "go.temporal.io/sdk/client"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker"
	"github.com/primerhq/primer/workflows"
)

// This file proves that Primer survives a kill -9 of `primer serve` at the
// worst moments (while workspaces provision, while they are deleted, while
// one is being recovered) and that the reconciler removes what no workspace
// owns and nothing else, on real engines.
//
// The crash tests run the real `primer` binary as a subprocess, since only a
// process can be killed with SIGKILL: nothing of it (deferred calls, the
// worker's graceful stop, the embedded Temporal server's shutdown) runs.

// runLabel is put on every object the templates of these tests make (a
// template's labels are copied onto its containers and volumes), so a test
// can tell its own objects from those of any other test or platform sharing
// the engine.
const runLabel = "primer_e2e_run"

var (
	primerBinOnce sync.Once
	primerBinPath string
	primerBinErr  error
)

// primerBinary builds the `primer` binary once per test process and returns
// its path: one file in the user's cache directory, replaced atomically,
// like containertest's primer-runtime.
func primerBinary(t *testing.T) string {
	t.Helper()
	primerBinOnce.Do(func() {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		dir = filepath.Join(dir, "primer-test")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			primerBinErr = err
			return
		}
		primerBinPath = filepath.Join(dir, "primer")
		tmp := fmt.Sprintf("%s.%d", primerBinPath, os.Getpid())
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", tmp, "./cmd/primer")
		cmd.Dir = filepath.Join(filepath.Dir(file), "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			primerBinErr = fmt.Errorf("build primer: %v: %s", err, out)
			return
		}
		primerBinErr = os.Rename(tmp, primerBinPath)
	})
	if primerBinErr != nil {
		t.Fatal(primerBinErr)
	}
	return primerBinPath
}

// serveProc is `primer serve` running as a child process on a fixed data
// dir and fixed ports, so that it can be killed and started again where it
// left off.
type serveProc struct {
	t   *testing.T
	bin string
	env []string
	url string
	// temporal is the embedded Temporal server's frontend, for diagnostics.
	temporal string
	log      string // the process's stderr and stdout, across every start
	dataDir  string
	api      *client.Client
	cmd      *exec.Cmd
	done     chan error // receives the process's exit once
}

// startServe starts `primer serve` with the container runtime, a 200ms
// probe interval and a fast reconciler (1s passes, 2s orphan grace), on
// free ports and a fresh data dir, plus env (KEY=value) as a user would
// set it. The process is stopped with SIGTERM when the test ends.
func startServe(t *testing.T, env ...string) *serveProc {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: runs without -short")
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	tport := freePort(t)
	dir := t.TempDir()
	s := &serveProc{
		t:        t,
		bin:      primerBinary(t),
		url:      "http://" + addr,
		temporal: "127.0.0.1:" + strconv.Itoa(tport),
		log:      filepath.Join(dir, "serve.log"),
		dataDir:  filepath.Join(dir, "data"),
	}
	// The child takes nothing of the test's own PRIMER_* settings.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PRIMER_") {
			s.env = append(s.env, kv)
		}
	}
	level := "info"
	if os.Getenv("PRIMER_TEST_LOG") != "" {
		level = "debug"
	}
	s.env = append(s.env,
		"PRIMER_ADDR="+addr,
		"PRIMER_DATA_DIR="+s.dataDir,
		"PRIMER_TEMPORAL_PORT="+strconv.Itoa(tport),
		"PRIMER_TEMPORAL_UI_PORT=-1",
		// The fake model servers the crash tests start (harness_test.go).
		"PRIMER_OUTBOUND_ALLOW="+loopbackFakes,
		"PRIMER_PROBE_INTERVAL=200ms",
		"PRIMER_RUNTIME_BINARY="+containertest.RuntimeBinaryPath(t),
		"PRIMER_RECONCILE_INTERVAL=1s",
		"PRIMER_ORPHAN_GRACE=2s",
		"PRIMER_LOG_LEVEL="+level,
	)
	s.env = append(s.env, env...)
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			s.dumpLog()
		}
	})
	s.start()
	return s
}

// start starts the process and waits until /readyz answers.
func (s *serveProc) start() {
	s.t.Helper()
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	fmt.Fprintf(logf, "---- primer serve starting at %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.bin, "serve")
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		s.t.Fatalf("start primer serve: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		logf.Close()
		done <- err
	}()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			s.done = nil
			s.dumpLog()
			s.t.Fatalf("primer serve exited before it was ready: %v", err)
		default:
		}
		if resp, err := http.Get(s.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				// The first start wrote the admin key before it listened.
				key, err := os.ReadFile(filepath.Join(s.dataDir, client.AdminKeyFile))
				if err != nil {
					s.t.Fatalf("read admin key: %v", err)
				}
				s.api = client.New(s.url, client.WithPollInterval(100*time.Millisecond),
					client.WithToken(strings.TrimSpace(string(key))))
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.dumpLog()
	s.t.Fatalf("primer serve not ready within 2m")
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *serveProc) kill() {
	s.t.Helper()
	if s.done == nil {
		return
	}
	killProc(s.t, "primer serve", s.cmd, s.done)
	s.done = nil
}

// stop sends SIGTERM and waits for a clean exit.
func (s *serveProc) stop() {
	s.t.Helper()
	if s.done == nil {
		return
	}
	stopProc(s.t, "primer serve", s.cmd, s.done)
	s.done = nil
}

// restart starts a new process on the same data dir and ports, and says
// how long it took to be ready.
func (s *serveProc) restart() {
	s.t.Helper()
	begin := time.Now()
	s.start()
	s.t.Logf("primer serve ready again %s after the restart began", time.Since(begin).Round(time.Millisecond))
}

// dumpLog logs the last lines the process wrote.
func (s *serveProc) dumpLog() { logTail(s.t, "primer serve", s.log, 150) }

// pendingActivities describes the activities the workflow of workspace id
// waits on (type, state, attempt, when started, last heartbeat), for the
// message of a wait that timed out.
func (s *serveProc) pendingActivities(id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := tclient.DialContext(ctx, tclient.Options{HostPort: s.temporal, Logger: quietSDK{}})
	if err != nil {
		return "(temporal: " + err.Error() + ")"
	}
	defer c.Close()
	d, err := c.DescribeWorkflowExecution(ctx, workflows.WorkflowID(id), "")
	if err != nil {
		return "(describe: " + err.Error() + ")"
	}
	out := []string{"pending activities:"}
	for _, a := range d.GetPendingActivities() {
		out = append(out, fmt.Sprintf("%s %s attempt %d started %s last heartbeat %s",
			a.GetActivityType().GetName(), a.GetState(), a.GetAttempt(),
			a.GetLastStartedTime().AsTime().Format(time.RFC3339), a.GetLastHeartbeatTime().AsTime().Format(time.RFC3339)))
	}
	if len(out) == 1 {
		return "no pending activities"
	}
	return strings.Join(out, " ")
}

// quietSDK drops the Temporal SDK's log lines.
type quietSDK struct{}

func (quietSDK) Debug(string, ...any) {}
func (quietSDK) Info(string, ...any)  {}
func (quietSDK) Warn(string, ...any)  {}
func (quietSDK) Error(string, ...any) {}

// rig is one test's view of an engine: the backend to look at and clean up
// with, the run label its templates put on every object, and the workspace
// ids it made. Make it before the platform: its cleanup, which removes every
// object of the run whatever happened, must run after the platform stopped
// (cleanups run last-registered first), or the platform could make them
// again.
type rig struct {
	t   *testing.T
	e   containertest.Engine
	eng *container.Backend
	run string

	mu  sync.Mutex
	ids []string
}

func newRig(t *testing.T, e containertest.Engine) *rig {
	t.Helper()
	r := &rig{t: t, e: e, eng: containertest.Backend(t, e), run: models.NewID("run")}
	t.Cleanup(r.cleanup)
	return r
}

// track records a workspace id whose objects the cleanup removes.
func (r *rig) track(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, id)
}

// cleanup destroys every tracked workspace and every object of the run,
// through the backend's Destroy (which finds them by the workspace label).
func (r *rig) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := map[string]bool{}
	r.mu.Lock()
	for _, id := range r.ids {
		ids[id] = true
	}
	r.mu.Unlock()
	for id := range r.runObjects(ctx) {
		ids[id] = true
	}
	for id := range ids {
		if err := r.eng.Destroy(ctx, backend.Handle{Backend: container.Type, WorkspaceID: id}); err != nil {
			r.t.Errorf("cleanup %s: %v", id, err)
		}
	}
}

// template creates the engine's provider (once) and a busybox template
// labelled with the run, with extra backend fields, through api.
func (r *rig) template(api *client.Client, id string, extra map[string]any) {
	r.t.Helper()
	ctx := ctxT(r.t, time.Minute)
	pid := r.e.Name + "-local"
	if _, err := api.GetProvider(ctx, pid); errs.Is(err, errs.NotFound) {
		if _, err := api.CreateProvider(ctx, wire.ProviderSpec{ID: pid, Provider: "container", Config: containertest.ProviderConfig(r.e)}); err != nil {
			r.t.Fatalf("create provider: %v", err)
		}
	}
	doc, err := json.Marshal(r.doc(extra))
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := api.CreateTemplate(ctx, wire.TemplateSpec{ID: id, ProviderID: pid, Backend: doc}); err != nil {
		r.t.Fatalf("create template %s: %v", id, err)
	}
}

// doc is a busybox template document labelled with the run.
func (r *rig) doc(extra map[string]any) map[string]any {
	d := map[string]any{
		"kind":   "container",
		"image":  containertest.BusyboxImage,
		"labels": map[string]string{runLabel: r.run},
	}
	for k, v := range extra {
		d[k] = v
	}
	return d
}

// create creates a workspace of template through api and tracks it.
func (r *rig) create(ctx context.Context, api *client.Client, template string) string {
	r.t.Helper()
	ws, err := api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: template})
	if err != nil {
		r.t.Fatalf("create workspace of %s: %v", template, err)
	}
	r.track(ws.ID)
	return ws.ID
}

// containers lists the containers (any state) labelled as workspace id's.
func (r *rig) containers(ctx context.Context, id string) []dcontainer.Summary {
	r.t.Helper()
	cs, err := r.eng.Client().ContainerList(ctx, dcontainer.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", container.LabelWorkspace+"="+id))})
	if err != nil {
		r.t.Fatalf("list containers of %s: %v", id, err)
	}
	return cs
}

// volumes lists the names of the volumes labelled as workspace id's.
func (r *rig) volumes(ctx context.Context, id string) []string {
	r.t.Helper()
	vs, err := r.eng.Client().VolumeList(ctx, volume.ListOptions{
		Filters: filters.NewArgs(filters.Arg("label", container.LabelWorkspace+"="+id))})
	if err != nil {
		r.t.Fatalf("list volumes of %s: %v", id, err)
	}
	var out []string
	for _, v := range vs.Volumes {
		out = append(out, v.Name)
	}
	return out
}

// runObjects lists the containers and volumes labelled primer.managed and
// with this run, by workspace id. The labels are checked here, not by the
// engine: given two label filters, Podman's volume list returns what has
// either label, where Docker's returns what has both.
func (r *rig) runObjects(ctx context.Context) map[string][]string {
	f := filters.NewArgs(filters.Arg("label", runLabel+"="+r.run))
	ours := func(labels map[string]string) bool {
		return labels[runLabel] == r.run && labels[container.LabelManaged] == "true"
	}
	out := map[string][]string{}
	cs, err := r.eng.Client().ContainerList(ctx, dcontainer.ListOptions{All: true, Filters: f})
	if err != nil {
		r.t.Errorf("list containers of the run: %v", err)
		return out
	}
	for _, c := range cs {
		if ours(c.Labels) {
			id := c.Labels[container.LabelWorkspace]
			out[id] = append(out[id], "container "+strings.TrimPrefix(firstOr(c.Names, c.ID), "/"))
		}
	}
	vs, err := r.eng.Client().VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		r.t.Errorf("list volumes of the run: %v", err)
		return out
	}
	for _, v := range vs.Volumes {
		if ours(v.Labels) {
			id := v.Labels[container.LabelWorkspace]
			out[id] = append(out[id], "volume "+v.Name)
		}
	}
	return out
}

// firstOr returns s's first element, or def when s is empty.
func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

// checkOneSandbox asserts that workspace id has exactly one container,
// running, and one volume, and returns the container's id.
func (r *rig) checkOneSandbox(ctx context.Context, id string) string {
	r.t.Helper()
	cs := r.containers(ctx, id)
	if len(cs) != 1 {
		var names []string
		for _, c := range cs {
			names = append(names, fmt.Sprintf("%s %v (%s)", c.ID[:12], c.Names, c.State))
		}
		r.t.Errorf("workspace %s has %d containers %v, want exactly one", id, len(cs), names)
		if len(cs) == 0 {
			return ""
		}
	}
	if cs[0].State != "running" {
		r.t.Errorf("container of %s is %s (%s), want running", id, cs[0].State, cs[0].Status)
	}
	if vs := r.volumes(ctx, id); len(vs) != 1 {
		r.t.Errorf("workspace %s has volumes %v, want exactly one", id, vs)
	}
	return cs[0].ID
}

// checkNoOrphans asserts that every object of the run belongs to a
// workspace the platform still has.
func (r *rig) checkNoOrphans(ctx context.Context, api *client.Client) {
	r.t.Helper()
	for id, objs := range r.runObjects(ctx) {
		if _, err := api.GetWorkspace(ctx, id); errs.Is(err, errs.NotFound) {
			r.t.Errorf("engine objects %v of %s, which has no workspace", objs, id)
		} else if err != nil {
			r.t.Errorf("get workspace %s: %v", id, err)
		}
	}
}

// eventTypes lists the types of a workspace's events, in order.
func eventTypes(t *testing.T, ctx context.Context, api *client.Client, id string) []string {
	t.Helper()
	evs, err := api.Events(ctx, id, 0)
	if err != nil {
		t.Fatalf("events of %s: %v", id, err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

// waitRunning waits until workspace id is running, for at most d, and
// fails on a phase it does not leave by itself (terminating, escalated).
// A failed workspace may still be recovered, so it is waited through.
func waitRunning(t *testing.T, api *client.Client, id string, d time.Duration, diag ...func(id string) string) *wire.Workspace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var last *wire.Workspace
	for {
		ws, err := api.GetWorkspace(ctx, id)
		if err == nil {
			if last == nil || last.Phase != ws.Phase || last.Reason != ws.Reason {
				t.Logf("%s: %s (%s)", id, ws.Phase, ws.Reason)
			}
			last = ws
			switch ws.Phase {
			case wire.PhaseRunning:
				return ws
			case wire.PhaseTerminating, wire.PhaseEscalated:
				t.Fatalf("workspace %s is %s (%s), want running", id, ws.Phase, ws.Reason)
			}
		} else if k := errs.KindOf(err); k != errs.Unavailable && k != errs.Timeout && ctx.Err() == nil {
			t.Fatalf("get workspace %s: %v", id, err)
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("workspace %s not running within %s", id, d)
			if last != nil {
				msg += fmt.Sprintf("; last %s (%s)", last.Phase, last.Reason)
			}
			for _, f := range diag {
				msg += "; " + f(id)
			}
			t.Fatal(msg)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Bounds of the crash tests. Long activities heartbeat (every 5 s, with a
// 20 s heartbeat timeout), so an activity the killed worker had started is
// retried within about 20 s of the kill by the restarted one: a
// provisioning or a replacement cut off resumes (no provision_failed, no
// recovery_failed), and a Destroy cut off is run again.
const (
	// crashConverge bounds how long after the restart a workspace takes to
	// run again: the heartbeat timeout, the rest of the work, slack.
	crashConverge = 75 * time.Second
	// crashGone bounds how long after the restart a delete takes.
	crashGone = 75 * time.Second
)

// The crash tests, and their engines' subtests, run in parallel with each
// other: they mostly wait out these bounds, and their platforms are apart
// (own processes, data dirs, ports and installations, so no reconciler
// touches another's sandboxes).

// crashPolicy is the crash templates' start timeout and recovery policy.
func crashPolicy(extra map[string]any) map[string]any {
	d := map[string]any{
		"recovery": map[string]any{"after": "0s", "max_attempts": 3},
	}
	for k, v := range extra {
		d[k] = v
	}
	return d
}

// TestCrashDuringProvision kills `primer serve` with SIGKILL while three
// workspaces are being provisioned (every one has its container and its
// init is still sleeping), and starts it again on the same data dir: every
// workspace ends running, with exactly one container and one volume, its
// runtime answering, and the engine holds nothing of the test that no
// workspace owns. Docker and Podman.
func TestCrashDuringProvision(t *testing.T) {
	t.Parallel() // the crash tests run together, see above crashPolicy
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		t.Parallel()
		r := newRig(t, e)
		s := startServe(t)
		ctx := ctxT(t, 4*time.Minute)
		r.template(s.api, "slow", crashPolicy(map[string]any{"init": []string{"sleep 3"}}))

		const n = 3
		var ids []string
		for range n {
			ids = append(ids, r.create(ctx, s.api, "slow"))
		}
		// Kill once every workspace has its container: the provision
		// activities are in flight, in the init.
		eventually(t, time.Minute, "a container for every workspace", func() bool {
			for _, id := range ids {
				if len(r.containers(ctx, id)) == 0 {
					return false
				}
			}
			return true
		})
		for _, id := range ids {
			ws, err := s.api.GetWorkspace(ctx, id)
			if err != nil || ws.Phase != wire.PhasePending {
				t.Fatalf("before the kill: %s = %+v, %v; want pending (the init sleeps 3s)", id, ws, err)
			}
		}
		killed := time.Now()
		s.kill()
		s.restart()

		for _, id := range ids {
			waitRunning(t, s.api, id, crashConverge, s.pendingActivities)
		}
		t.Logf("all %d running %s after the kill", n, time.Since(killed).Round(time.Millisecond))
		for _, id := range ids {
			r.checkOneSandbox(ctx, id)
			res, err := s.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"echo", "ok"}})
			if err != nil || res.Stdout != "ok\n" {
				t.Errorf("exec in %s after the crash = %+v, %v", id, res, err)
			}
			evs := eventTypes(t, ctx, s.api, id)
			t.Logf("%s events: %v", id, evs)
			// The cut-off provisioning was resumed, not failed and rebuilt.
			if slices.Contains(evs, wire.EventProvisionFailed) || slices.Contains(evs, wire.EventRecoveryStarted) {
				t.Errorf("%s: events %v, want the provisioning resumed without a failure", id, evs)
			}
		}
		r.checkNoOrphans(ctx, s.api)
	})
}

// TestCrashDuringDelete deletes three running workspaces and kills `primer
// serve` as soon as the deletes are accepted: after the restart, every
// workspace is gone (GET is 404) and the engine holds nothing of any of
// them. Docker and Podman. Where the kill lands varies: before the
// workflows ran the delete (they do it after the restart, in about 10s),
// or in a Destroy (retried after its heartbeat timeout, crashGone).
func TestCrashDuringDelete(t *testing.T) {
	t.Parallel() // the crash tests run together, see above crashPolicy
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		t.Parallel()
		r := newRig(t, e)
		s := startServe(t)
		ctx := ctxT(t, 5*time.Minute)
		r.template(s.api, "bb", nil)

		const n = 3
		var ids []string
		for range n {
			ids = append(ids, r.create(ctx, s.api, "bb"))
		}
		for _, id := range ids {
			waitRunning(t, s.api, id, time.Minute)
		}
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Go(func() {
				if _, err := s.api.DeleteWorkspace(ctx, id); err != nil {
					t.Errorf("delete %s: %v", id, err)
				}
			})
		}
		wg.Wait()
		killed := time.Now()
		s.kill()
		left := 0
		for _, id := range ids {
			if len(r.containers(ctx, id)) > 0 || len(r.volumes(ctx, id)) > 0 {
				left++
			}
		}
		t.Logf("at the kill, %d of %d workspaces still had engine objects", left, n)
		s.restart()

		for _, id := range ids {
			wctx, cancel := context.WithTimeout(ctx, crashGone)
			err := s.api.WaitGone(wctx, id, func(ws *wire.Workspace) { t.Logf("%s: %s (%s)", id, ws.Phase, ws.Reason) })
			cancel()
			if err != nil {
				t.Errorf("workspace %s not gone after the restart: %v; %s", id, err, s.pendingActivities(id))
			}
		}
		t.Logf("all %d gone %s after the kill", n, time.Since(killed).Round(time.Millisecond))
		for _, id := range ids {
			if objs := containertest.Objects(t, r.eng, id); len(objs) > 0 {
				t.Errorf("engine objects left of deleted %s: %v", id, objs)
			}
		}
		r.checkNoOrphans(ctx, s.api)
	})
}

// TestCrashDuringRecovery kills a workspace's container from outside, waits
// until stale recovery is replacing it (phase pending, reason recovering;
// the template's init sleeps, so a replacement takes seconds), kills
// `primer serve` with SIGKILL and starts it again: the workspace ends
// running on a new container, the only one it has, with the files it had
// (the volume is kept), and its events tell of the recovery. Docker only:
// it is the slowest of the crash tests, and what is engine-specific in it
// (tear down, keep the volume, provision again) the container backend's
// own tests cover on both engines.
func TestCrashDuringRecovery(t *testing.T) {
	t.Parallel() // the crash tests run together, see above crashPolicy
	e := containertest.Known()[0]
	containertest.Require(t, e)
	r := newRig(t, e)
	s := startServe(t)
	ctx := ctxT(t, 4*time.Minute)
	r.template(s.api, "rec", crashPolicy(map[string]any{"init": []string{"sleep 3"}}))
	id := r.create(ctx, s.api, "rec")
	waitRunning(t, s.api, id, time.Minute)
	if _, err := s.api.WriteFile(ctx, id, "keep.txt", strings.NewReader("kept across the crash")); err != nil {
		t.Fatal(err)
	}
	old := r.checkOneSandbox(ctx, id)

	if err := r.eng.Client().ContainerKill(ctx, old, "KILL"); err != nil {
		t.Fatal(err)
	}
	// The replacement's init sleeps 3s: polling sees it under way.
	var seen *wire.Workspace
	eventually(t, 30*time.Second, "recovery under way (pending, recovering)", func() bool {
		ws, err := s.api.GetWorkspace(ctx, id)
		if err != nil {
			return false
		}
		seen = ws
		return ws.Phase == wire.PhasePending && strings.HasPrefix(ws.Reason, "recovering")
	})
	t.Logf("at the kill: %s (%s)", seen.Phase, seen.Reason)
	killed := time.Now()
	s.kill()
	s.restart()

	waitRunning(t, s.api, id, crashConverge, s.pendingActivities)
	t.Logf("running %s after the kill", time.Since(killed).Round(time.Millisecond))
	if cid := r.checkOneSandbox(ctx, id); cid == old {
		t.Errorf("container after recovery is the killed one (%s), want a new one", old[:12])
	}
	if got, err := s.api.ReadFile(ctx, id, "keep.txt"); err != nil || string(got) != "kept across the crash" {
		t.Errorf("keep.txt after recovery = %q, %v; want the file kept", got, err)
	}
	types := eventTypes(t, ctx, s.api, id)
	t.Logf("events: %v", types)
	if !subsequence(types, []string{wire.EventRecoveryStarted, wire.EventRecovered}) {
		t.Errorf("events %v lack %s then %s", types, wire.EventRecoveryStarted, wire.EventRecovered)
	}
	r.checkNoOrphans(ctx, s.api)
}

// withReconciler runs the reconciler every interval with the given orphan
// grace.
func withReconciler(interval, grace time.Duration) option {
	return func(c *worker.Config) { c.ReconcileInterval, c.OrphanGrace = interval, grace }
}

// orphansRemoved reads primer_orphans_removed_total from /metrics.
func orphansRemoved(t *testing.T, p *primer) float64 {
	t.Helper()
	resp, err := http.Get(p.srv.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "primer_orphans_removed_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no primer_orphans_removed_total")
	return 0
}

// TestReconcilerRemovesOrphans makes orphans the way real ones happen: a
// sandbox on the engine, labelled as the platform's installation's, whose
// workspace has no row (provisioned through the backend directly, while
// the platform runs), one whole and one torn down to its kept volume. The
// reconciler removes both, container and volume, within a few seconds of
// the grace. It removes nothing else: neither look-alikes of another
// installation or of none sharing the engine, nor anything of the
// platform's own workspaces: a running one, one still provisioning (pending
// longer than the grace) and an escalated one whose container is stopped.
// Docker and Podman.
func TestReconcilerRemovesOrphans(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newRig(t, e)
		// The grace must outlast the provisioning of an orphan (about a
		// second on a quiet machine, over 5 s on a loaded one), or the
		// reconciler removes it half-made, and Docker stamps objects to the
		// second, which can age them by up to one.
		const grace = 15 * time.Second
		p := startPrimer(t, withContainers(t), withReconciler(500*time.Millisecond, grace))
		ctx := ctxT(t, 3*time.Minute)
		r.template(p.api, "bb", nil)
		// Provisioning for longer than the grace.
		r.template(p.api, "slow", map[string]any{"init": []string{"sleep 20"}})
		r.template(p.api, "no-recovery", map[string]any{"recovery": map[string]any{"after": "0s", "max_attempts": 0}})

		// The platform's own: one running, one escalated with its container
		// stopped, one provisioning.
		running := r.create(ctx, p.api, "bb")
		waitRunning(t, p.api, running, time.Minute)
		runningCtr := r.checkOneSandbox(ctx, running)
		escalated := r.create(ctx, p.api, "no-recovery")
		waitRunning(t, p.api, escalated, time.Minute)
		if err := r.eng.Client().ContainerKill(ctx, container.Name(escalated), "KILL"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.api.WaitWorkspace(ctx, escalated, wire.PhaseEscalated, nil); err != nil {
			t.Fatalf("wait escalated: %v", err)
		}
		slow := r.create(ctx, p.api, "slow")

		// The orphans, and sandboxes of another installation and of none
		// (made before installations were labelled) that look the same.
		doc, err := json.Marshal(r.doc(nil))
		if err != nil {
			t.Fatal(err)
		}
		mine := containertest.BackendOf(t, e, p.srv.Installation())
		whole, kept, other, unlabelled := models.NewID("ws"), models.NewID("ws"), models.NewID("ws"), models.NewID("ws")
		for id, b := range map[string]*container.Backend{
			other:      containertest.BackendOf(t, e, models.NewID("pri")),
			unlabelled: containertest.Backend(t, e),
		} {
			r.track(id)
			if _, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: doc, Token: models.NewToken()}); err != nil {
				t.Fatalf("provision %s: %v", id, err)
			}
		}
		// Each orphan is checked right after it is made, well within the
		// grace.
		made := time.Now()
		r.track(kept)
		if _, err := mine.Provision(ctx, backend.ProvisionRequest{WorkspaceID: kept, Template: doc, Token: models.NewToken()}); err != nil {
			t.Fatalf("provision orphan %s: %v", kept, err)
		}
		if err := mine.Teardown(ctx, backend.Handle{Backend: container.Type, WorkspaceID: kept}); err != nil {
			t.Fatal(err)
		}
		if objs := containertest.Objects(t, r.eng, kept); len(objs) != 1 {
			t.Fatalf("torn-down orphan %s objects = %v, want its volume", kept, objs)
		}
		r.track(whole)
		if _, err := mine.Provision(ctx, backend.ProvisionRequest{WorkspaceID: whole, Template: doc, Token: models.NewToken()}); err != nil {
			t.Fatalf("provision orphan %s: %v", whole, err)
		}
		if objs := containertest.Objects(t, r.eng, whole); len(objs) != 2 {
			t.Fatalf("orphan %s objects = %v, want its container and volume", whole, objs)
		}
		t.Logf("orphans made in %s", time.Since(made).Round(time.Millisecond))
		slowCtr := ""
		eventually(t, grace+15*time.Second, "both orphans removed from the engine", func() bool {
			if slowCtr == "" {
				if cs := r.containers(ctx, slow); len(cs) == 1 {
					slowCtr = cs[0].ID
				}
			}
			return len(containertest.Objects(t, r.eng, whole)) == 0 && len(containertest.Objects(t, r.eng, kept)) == 0
		})
		t.Logf("orphans removed %s after they were made", time.Since(made).Round(time.Millisecond))
		// The reconciler counts a removal once the backend's call returns,
		// a moment after the engine shows the objects gone.
		eventually(t, 30*time.Second, "primer_orphans_removed_total at least 2", func() bool {
			return orphansRemoved(t, p) >= 2
		})
		if slowCtr == "" {
			t.Fatal("the provisioning workspace had no container while the orphans were removed")
		}

		// Passes after the grace are over for everything else: the
		// platform's workspaces and the other installations' sandboxes are
		// untouched.
		time.Sleep(time.Second)
		waitRunning(t, p.api, slow, time.Minute)
		if cid := r.checkOneSandbox(ctx, slow); cid != slowCtr {
			t.Errorf("the provisioning workspace's container changed from %s to %s: something removed it", slowCtr[:12], cid[:12])
		}
		if cid := r.checkOneSandbox(ctx, running); cid != runningCtr {
			t.Errorf("the running workspace's container changed from %s to %s", runningCtr[:12], cid[:12])
		}
		for _, id := range []string{other, unlabelled} {
			if objs := containertest.Objects(t, r.eng, id); len(objs) != 2 {
				t.Errorf("sandbox %s of another installation: objects %v, want its container and volume left alone", id, objs)
			}
		}
		if got, err := p.api.GetWorkspace(ctx, escalated); err != nil || got.Phase != wire.PhaseEscalated {
			t.Errorf("escalated workspace = %+v, %v; want still escalated", got, err)
		}
		if cs, vs := r.containers(ctx, escalated), r.volumes(ctx, escalated); len(cs) != 1 || len(vs) != 1 {
			t.Errorf("escalated workspace's objects: containers %d, volumes %v; want its stopped container and its volume kept", len(cs), vs)
		}
		for _, id := range []string{running, slow} {
			res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"echo", "ok"}})
			if err != nil || res.Stdout != "ok\n" {
				t.Errorf("exec in %s = %+v, %v", id, res, err)
			}
		}
	})
}

// TestReconcilerSandboxMissing removes a running workspace's container and
// volume behind the platform's back. The reconciler reports it
// (workspace.sandbox_missing, naming the provider) while the workspace is
// still running: the probe interval here is long enough that the
// reconciler's pass comes first. Then the probes fail it and stale recovery
// provisions a new sandbox under the same id, on a new, empty volume (the
// old one is gone): the reconciler reports; it does not repair. Docker and
// Podman.
func TestReconcilerSandboxMissing(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newRig(t, e)
		p := startPrimer(t, withContainers(t), withProbeInterval(2*time.Second), withReconciler(500*time.Millisecond, time.Second))
		ctx := ctxT(t, 3*time.Minute)
		r.template(p.api, "rec", map[string]any{"recovery": map[string]any{"after": "0s", "max_attempts": 3}})
		id := r.create(ctx, p.api, "rec")
		waitRunning(t, p.api, id, time.Minute)
		if _, err := p.api.WriteFile(ctx, id, "lost.txt", strings.NewReader("on the removed volume")); err != nil {
			t.Fatal(err)
		}
		old := r.checkOneSandbox(ctx, id)
		// The reconciler skips rows changed within the grace.
		time.Sleep(time.Second)

		if err := r.eng.Destroy(ctx, backend.Handle{Backend: container.Type, WorkspaceID: id}); err != nil {
			t.Fatal(err)
		}
		removed := time.Now()
		var missing *wire.Event
		eventually(t, 10*time.Second, "a workspace.sandbox_missing event", func() bool {
			evs, err := p.api.Events(ctx, id, 0)
			if err != nil {
				return false
			}
			for i := range evs {
				if evs[i].Type == wire.EventSandboxMissing {
					missing = &evs[i]
					return true
				}
			}
			return false
		})
		t.Logf("sandbox_missing %s after the removal: %s", time.Since(removed).Round(time.Millisecond), missing.Data)
		if !strings.Contains(string(missing.Data), e.Name+"-local") {
			t.Errorf("sandbox_missing data %s does not name the provider", missing.Data)
		}

		// The probes fail it, and recovery replaces it.
		eventually(t, time.Minute, "workspace.recovered", func() bool {
			return slices.Contains(eventTypes(t, ctx, p.api, id), wire.EventRecovered)
		})
		ws := waitRunning(t, p.api, id, time.Minute)
		types := eventTypes(t, ctx, p.api, id)
		t.Logf("events: %v", types)
		want := []string{wire.EventSandboxMissing, wire.EventRecoveryStarted, wire.EventRecovered}
		if !subsequence(types, want) {
			t.Errorf("events %v do not hold %v in that order", types, want)
		}
		if ws.Phase != wire.PhaseRunning {
			t.Errorf("phase %s, want running", ws.Phase)
		}
		if cid := r.checkOneSandbox(ctx, id); cid == old {
			t.Errorf("container after recovery is the removed one")
		}
		if _, err := p.api.ReadFile(ctx, id, "lost.txt"); !errs.Is(err, errs.NotFound) {
			t.Errorf("lost.txt after its volume was removed: %v, want not found", err)
		}
	})
}
