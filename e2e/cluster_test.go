package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// This file proves that Primer scales apart (issue 14): two API replicas and
// two workers, separate processes on one PostgreSQL and one real Temporal
// cluster, serve 200 local workspaces and an eval suite; a worker and an API
// replica die by kill -9 in the middle of the work and nothing is lost,
// failed or left behind.

// clusterProbe is the probe interval of the cluster tests: short enough
// that the survivor's first probe of a dead worker's workspace comes well
// within the 30 s the issue allows (a watched workspace's workflow wakes
// every workflows.BackstopProbes intervals), long enough that 200
// workspaces do not swamp a two-core machine.
const clusterProbe = 2 * time.Second

// clusterResume is how soon after a worker's death its workspaces must be
// probed by the survivor (issue 14). A broken workspace is seen failed
// MissesToFail-1 intervals after that first probe, by the phase rules.
const clusterResume = 30 * time.Second

// clusterDetect bounds the failure of a broken workspace the dead worker
// held, counted from the kill.
const clusterDetect = clusterResume + (workflows.MissesToFail-1)*clusterProbe

// settledEvents are the events a healthy workspace has no reason to get:
// any of them after a worker or replica died is a spurious failure.
var settledEvents = []string{
	wire.EventPhaseChanged, wire.EventRecoveryStarted, wire.EventRecoveryFailed,
	wire.EventEscalated, wire.EventProvisionFailed, wire.EventDestroyed,
}

// inParallel runs f(0..n-1) on k goroutines.
func inParallel(n, k int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// TestClusterScaleApart runs two API replicas and two workers on the
// Temporal cluster and PostgreSQL:
//   - 200 local workspaces created through the replicas in turn all become
//     running, and each answers exec (in its own directory) through the
//     replica that did not create it: the replicas hold no state;
//   - an eval suite runs to the end through them;
//   - one worker is killed (SIGKILL) while half the workspaces are being
//     deleted: the deletes complete, the workspaces the dead worker held are
//     probed by the survivor within 30 s (five of them, whose directories
//     are removed right after the kill, fail within clusterDetect), and
//     every other workspace stays running without a single phase change,
//     recovery or failure;
//   - one API replica is killed in a burst of creates and execs, one exec
//     surely in flight on it: a client that retries on the other replica
//     loses nothing and makes nothing twice (every create carries a label
//     of its request); every acknowledged create runs. A create cut off
//     between its row and its workflow leaves a pending row that nothing
//     moves: a known defect, reported by the skipped subtest
//     "cut-off creates run" until it is fixed;
//   - deleting everything leaves no row, no directory under the local root
//     and no open workflow of a workspace.
func TestClusterScaleApart(t *testing.T) {
	c := startCluster(t, clusterConfig{APIs: 2, Workers: 2, Probe: clusterProbe})
	ctx := ctxT(t, 8*time.Minute)
	lb := newBalancer(c.apis)

	// 200 workspaces through the replicas in turn.
	const n = 200
	ids, by := make([]string, n), make([]int, n)
	begin := time.Now()
	inParallel(n, 16, func(i int) {
		r, err := lb.do(ctx, func(a *client.Client) error {
			ws, err := a.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{
				TemplateID: wire.DefaultTemplateID, Labels: map[string]string{"e2e": "scale"}})
			if err == nil {
				ids[i] = ws.ID
			}
			return err
		})
		by[i] = r
		if err != nil {
			t.Errorf("create %d: %v", i, err)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	waitAllRunning(t, ctx, c.apis[1].api, ids, 3*time.Minute)
	t.Logf("%d workspaces running %s after the first create", n, time.Since(begin).Round(time.Millisecond))
	for r := range c.apis {
		t.Logf("%s created %d", c.apis[r].name, countOf(by, r))
	}

	// Exec in each through the other replica, in its own directory.
	inParallel(n, 16, func(i int) {
		other := c.apis[(by[i]+1)%len(c.apis)]
		res, err := other.api.Exec(ctx, client.ExecRequest{WorkspaceID: ids[i], Command: []string{"pwd"}})
		if err != nil || res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != filepath.Join(c.root, ids[i]) {
			t.Errorf("exec pwd in %s through %s = %+v, %v; want exit 0 in %s", ids[i], other.name, res, err, filepath.Join(c.root, ids[i]))
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	clusterEval(t, ctx, c)

	keep, del := ids[:n/2], ids[n/2:]
	broken, marks := clusterKillWorker(t, ctx, c, lb, keep, del)
	burst := clusterKillAPI(t, ctx, c, lb, keep, broken)
	// The healthy workspaces went through both deaths untouched.
	checkSettled(t, ctx, lb, without(keep, broken), marks, "a worker and an API replica died")
	waitAllRunning(t, ctx, c.apis[1].api, without(keep, broken), 5*time.Second)

	// Delete everything left; nothing may remain anywhere.
	rest := append(slices.Clone(keep), burst...)
	deleteAll(t, ctx, lb, rest)
	left, err := c.apis[1].api.ListWorkspaces(ctx, client.WorkspaceListOptions{})
	if err != nil || len(left) != 0 {
		t.Errorf("workspaces after deleting all = %d, %v; want none", len(left), err)
	}
	entries, err := os.ReadDir(c.root)
	if err != nil || len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("local root %s after deleting all: %v, %v; want empty", c.root, names, err)
	}
	eventually(t, 30*time.Second, "no open workspace workflow in the namespace", func() bool {
		open := openWorkspaceWorkflows(t, ctx, c)
		if len(open) > 0 {
			t.Logf("open workspace workflows: %d, e.g. %s", len(open), open[0])
		}
		return len(open) == 0
	})
}

// countOf counts the elements of s equal to v.
func countOf(s []int, v int) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// waitAllRunning waits until every workspace of ids is running, listing
// them through api. On a timeout it names those that are not, each with
// what diag (when not nil) says of it.
func waitAllRunning(t *testing.T, ctx context.Context, api *client.Client, ids []string, d time.Duration, diag ...func(id string) string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var phases map[string]int
	var late []string
	deadline := time.Now().Add(d)
	for {
		list, err := api.ListWorkspaces(ctx, client.WorkspaceListOptions{})
		if err == nil {
			phases, late = map[string]int{}, nil
			seen := 0
			for _, ws := range list {
				if !want[ws.ID] {
					continue
				}
				seen++
				phases[ws.Phase]++
				if ws.Phase != wire.PhaseRunning {
					late = append(late, ws.ID+" "+ws.Phase+" ("+ws.Reason+")")
				}
			}
			if seen < len(want) {
				phases["missing"] = len(want) - seen
			}
			if len(late) == 0 && seen == len(want) {
				return
			}
		}
		if time.Now().After(deadline) {
			for i, w := range late {
				for _, f := range diag {
					late[i] = w + ": " + f(strings.Fields(w)[0])
				}
			}
			t.Fatalf("not all %d workspaces running within %s: phases %v (last error %v); not running: %v", len(want), d, phases, err, late)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// clusterEval runs a small suite through the replicas: created through
// one, run and followed through the other.
func clusterEval(t *testing.T, ctx context.Context, c *primerCluster) {
	t.Helper()
	spec := eval.SuiteSpec{
		ID:          "cluster",
		TemplateID:  wire.DefaultTemplateID,
		Concurrency: 4,
		Cases: []eval.Case{
			{ID: "echo", Command: script("echo hello from $(basename $PWD)"), Expect: eval.Expect{StdoutContains: []string{"hello from ws-"}}},
			{ID: "file", Files: map[string]eval.File{"in.txt": eval.Text("42")}, Command: script("grep -qx 42 in.txt")},
			{ID: "exit", Command: script("exit 3"), Expect: eval.Expect{ExitCode: intp(3)}},
			{ID: "fails", Command: script("false")},
		},
	}
	if _, err := c.apis[0].api.CreateSuite(ctx, spec); err != nil {
		t.Fatalf("create suite through %s: %v", c.apis[0].name, err)
	}
	run, err := c.apis[1].api.CreateRun(ctx, spec.ID, wire.RunRequest{TriggeredBy: "e2e"})
	if err != nil {
		t.Fatalf("create run through %s: %v", c.apis[1].name, err)
	}
	done := waitRun(t, c.apis[0].api, run.ID, 2*time.Minute)
	if done.Status != wire.RunSucceeded || done.Progress.Pass != 3 || done.Progress.Fail != 1 || done.Progress.Error != 0 {
		t.Fatalf("run %s = %s %+v; want succeeded with 3 pass, 1 fail", run.ID, done.Status, done.Progress)
	}
	got := verdicts(t, c.apis[1].api, run.ID)
	if got["echo"] != eval.VerdictPass || got["file"] != eval.VerdictPass || got["exit"] != eval.VerdictPass || got["fails"] != eval.VerdictFail {
		t.Errorf("verdicts = %v", got)
	}
	noWorkspaceLeft(t, c.apis[0].api, run.ID)
}

// lastEvents returns the id of the latest event of each workspace.
func lastEvents(t *testing.T, ctx context.Context, lb *balancer, ids []string) map[string]uint64 {
	t.Helper()
	var mu sync.Mutex
	out := map[string]uint64{}
	inParallel(len(ids), 8, func(i int) {
		var evs []wire.Event
		_, err := lb.again(ctx, func(a *client.Client) error {
			var err error
			evs, err = a.Events(ctx, ids[i], 0)
			return err
		})
		if err != nil {
			t.Errorf("events of %s: %v", ids[i], err)
			return
		}
		var last uint64
		for _, e := range evs {
			last = max(last, e.ID)
		}
		mu.Lock()
		out[ids[i]] = last
		mu.Unlock()
	})
	return out
}

// eventsSince lists the types of workspace id's events after event after.
func eventsSince(ctx context.Context, lb *balancer, id string, after uint64) ([]string, error) {
	var evs []wire.Event
	_, err := lb.again(ctx, func(a *client.Client) error {
		var err error
		evs, err = a.Events(ctx, id, after)
		return err
	})
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	return types, err
}

// clusterKillWorker kills the first worker while the workspaces of del are
// being deleted. Right after the kill, up to five workspaces of keep that
// the dead worker held lose their directory: the survivor's probes must
// find that out within clusterDetect, which they can only if they probe
// them. Every other workspace of keep gets no phase change at all, and
// every one of del is gone. It returns the broken workspaces and the last
// event of each of keep before the kill.
func clusterKillWorker(t *testing.T, ctx context.Context, c *primerCluster, lb *balancer, keep, del []string) (broken []string, marks map[string]uint64) {
	t.Helper()
	victim, survivor := c.workers[0], c.workers[1]
	marks = lastEvents(t, ctx, lb, keep)
	held := map[string]int{}
	for _, id := range keep {
		who, err := c.lastWorker(ctx, workflows.WorkflowID(id))
		if err != nil {
			t.Logf("last worker of %s: %v", id, err)
			continue
		}
		held[strings.SplitN(who, "@", 2)[0]]++
		if strings.HasPrefix(who, victim.identity()) && len(broken) < 5 {
			broken = append(broken, id)
		}
	}
	t.Logf("workflows of the kept workspaces by worker pid: %v (%s is pid %d)", held, victim.name, victim.pid())
	if len(broken) == 0 {
		t.Fatalf("%s held none of the %d kept workspaces' workflows: nothing to prove about its death", victim.name, len(keep))
	}

	var deleting sync.WaitGroup
	deleting.Go(func() { deleteAll(t, ctx, lb, del) })
	killed := time.Now()
	victim.kill()
	for _, id := range broken {
		if err := os.RemoveAll(filepath.Join(c.root, id)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("killed %s (pid %d) and removed the directories of %d workspaces it held", victim.name, victim.pid(), len(broken))

	// The survivor finds every broken workspace.
	pending := slices.Clone(broken)
	for len(pending) > 0 && time.Since(killed) < clusterDetect {
		var still []string
		for _, id := range pending {
			types, err := eventsSince(ctx, lb, id, marks[id])
			if err != nil || !slices.Contains(types, wire.EventPhaseChanged) {
				still = append(still, id)
			}
		}
		pending = still
		if len(pending) > 0 {
			time.Sleep(250 * time.Millisecond)
		}
	}
	if len(pending) > 0 {
		t.Errorf("no phase change within %s of the kill (probes resumed within %s, then %d misses) for workspaces %s held and whose directories were removed: %v; their probes did not resume on %s",
			clusterDetect, clusterResume, workflows.MissesToFail, victim.name, pending, survivor.name)
	} else {
		t.Logf("the survivor detected all %d broken workspaces %s after the kill", len(broken), time.Since(killed).Round(time.Millisecond))
	}
	deleting.Wait()
	t.Logf("%d workspaces deleted %s after the kill", len(del), time.Since(killed).Round(time.Millisecond))

	// Two more probe intervals after the last detection: nothing else moved.
	time.Sleep(2 * clusterProbe)
	checkSettled(t, ctx, lb, without(keep, broken), marks, victim.name+" died")
	waitAllRunning(t, ctx, c.apis[1].api, without(keep, broken), 5*time.Second)
	return broken, marks
}

// checkSettled fails t for every workspace of ids that got an event of
// settledEvents after its mark: after what happened, it should not have.
func checkSettled(t *testing.T, ctx context.Context, lb *balancer, ids []string, marks map[string]uint64, what string) {
	t.Helper()
	inParallel(len(ids), 8, func(i int) {
		id := ids[i]
		types, err := eventsSince(ctx, lb, id, marks[id])
		if err != nil {
			t.Errorf("events of %s: %v", id, err)
			return
		}
		for _, typ := range types {
			if slices.Contains(settledEvents, typ) {
				t.Errorf("workspace %s got %v after %s; want no phase change", id, types, what)
				return
			}
		}
	})
}

// without returns s without the elements of drop.
func without(s, drop []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

// deleteAll deletes every workspace of ids through lb and waits until each
// is gone.
func deleteAll(t *testing.T, ctx context.Context, lb *balancer, ids []string) {
	t.Helper()
	inParallel(len(ids), 16, func(i int) {
		if _, err := lb.do(ctx, func(a *client.Client) error {
			_, err := a.DeleteWorkspace(ctx, ids[i])
			return err
		}); err != nil {
			t.Errorf("delete %s: %v", ids[i], err)
			return
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if _, err := lb.do(wctx, func(a *client.Client) error { return a.WaitGone(wctx, ids[i], nil) }); err != nil {
			t.Errorf("workspace %s not gone: %v", ids[i], err)
		}
	})
}

// clusterKillAPI kills the first API replica in the middle of a burst of
// creates (each labelled with its request) and execs, one of them surely
// in flight on it: it runs until the replica is dead. A create cut off
// under the client is looked up by its label before it is sent again, as
// a careful client does with a request that is not idempotent; an exec of
// a command safe to repeat is sent again. It returns the workspaces the
// burst made.
func clusterKillAPI(t *testing.T, ctx context.Context, c *primerCluster, lb *balancer, keep, broken []string) []string {
	t.Helper()
	const creates = 100
	victim := c.apis[0]
	burst := "b" + strconv.FormatInt(time.Now().UnixNano(), 36)
	healthy := without(keep, broken)

	var acked atomic.Int64
	killNow := make(chan struct{})
	var killOnce sync.Once
	var killed time.Time
	// The second half of the burst is sent after the kill, so the
	// balancer meets the dead replica.
	afterKill := make(chan struct{})
	var killing sync.WaitGroup
	killing.Go(func() {
		defer close(afterKill)
		select {
		case <-killNow:
		case <-ctx.Done():
			return
		}
		// An exec that is running on the victim when it dies: it has
		// written its marker and sleeps.
		id := healthy[0]
		marker := "inflight-" + burst
		cmd := []string{"sh", "-c", "echo started > " + marker + "; sleep 3; echo done"}
		cut := make(chan error, 1)
		go func() {
			_, err := victim.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: cmd})
			cut <- err
		}()
		// (Not eventually: t.Fatal belongs to the test's goroutine.)
		for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(c.root, id, marker)); err == nil {
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Errorf("the long exec did not start on %s within 30s", victim.name)
				break
			}
		}
		killed = time.Now()
		victim.kill()
		if err := <-cut; !cutOff(err) {
			t.Errorf("exec in flight on %s when it was killed: %v; want the connection cut", victim.name, err)
		}
		res, err := lb.doFrom(ctx, 1, func(a *client.Client) error {
			var err error
			_, err = a.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: cmd})
			return err
		})
		if err != nil || res != 1 {
			t.Errorf("exec sent again after the cut = replica %d, %v; want answered by %s", res, err, c.apis[1].name)
		}
	})

	var cutoffs, retriedExecs atomic.Int64
	made := make([]string, creates)
	adopted := make([]bool, creates) // cut off, then found by its label
	var wg sync.WaitGroup
	wg.Go(func() {
		inParallel(creates, 12, func(i int) {
			if i >= creates/2 {
				<-afterKill
			}
			label := map[string]string{"burst": burst, "req": strconv.Itoa(i)}
			for {
				_, err := lb.do(ctx, func(a *client.Client) error {
					ws, err := a.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID, Labels: label})
					if err == nil {
						made[i] = ws.ID
					}
					return err
				})
				if err == nil {
					if acked.Add(1) == creates/4 {
						killOnce.Do(func() { close(killNow) })
					}
					return
				}
				if !cutOff(err) {
					t.Errorf("create %d: %v", i, err)
					killOnce.Do(func() { close(killNow) }) // nothing waits forever
					return
				}
				// Cut off: the replica may have made it. Look before
				// sending it again.
				cutoffs.Add(1)
				found := labelled(t, ctx, lb, "burst", burst, "req", strconv.Itoa(i))
				if len(found) > 0 {
					made[i] = found[0]
					adopted[i] = true
					return
				}
			}
		})
	})
	wg.Go(func() {
		inParallel(2*creates, 4, func(i int) {
			if i >= creates {
				<-afterKill
			}
			id := healthy[i%len(healthy)]
			for {
				var res *wire.ExecResponse
				_, err := lb.do(ctx, func(a *client.Client) error {
					var err error
					res, err = a.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"echo", id}})
					return err
				})
				if err == nil && res.ExitCode == 0 && res.Stdout == id+"\n" {
					return
				}
				if err == nil || !cutOff(err) {
					t.Errorf("exec in %s = %+v, %v", id, res, err)
					return
				}
				retriedExecs.Add(1) // echo is safe to run again
			}
		})
	})
	wg.Wait()
	killOnce.Do(func() { close(killNow) })
	killing.Wait()
	t.Logf("killed %s in the burst, which ended %s later; %d creates and %d execs besides the long one were cut off and retried on the other replica",
		victim.name, time.Since(killed).Round(time.Millisecond), cutoffs.Load(), retriedExecs.Load())

	// One workspace per request, none twice; every acknowledged one runs.
	all := labelled(t, ctx, lb, "burst", burst, "", "")
	if len(all) != creates {
		t.Errorf("the burst's %d create requests made %d workspaces; want exactly one each", creates, len(all))
	}
	var answered, found []string
	for i, id := range made {
		switch {
		case id == "":
			t.Errorf("create request %d: no workspace", i)
		case adopted[i]:
			found = append(found, id)
		default:
			answered = append(answered, id)
		}
	}
	waitAllRunning(t, ctx, c.apis[1].api, answered, time.Minute, c.describeWorkflow)
	t.Run("cut-off creates run", func(t *testing.T) {
		clusterCutOffCreates(t, ctx, c, found)
	})
	return all
}

// clusterCutOffCreates checks that the workspaces of creates cut off by a
// replica's death, which the client found by their labels, run too. A
// replica killed between storing the row and starting the workflow
// (starter.Starter.CreateWorkspace) leaves a pending row without a
// workflow: the reconciler adopts it (activities/reconcile_adopt.go) once
// it is older than the grace, so every one of them must run too.
func clusterCutOffCreates(t *testing.T, ctx context.Context, c *primerCluster, ids []string) {
	deadline := time.Now().Add(30 * time.Second)
	var stuck, late []string
	for _, id := range ids {
		for {
			ws, err := c.apis[1].api.GetWorkspace(ctx, id)
			if err == nil && ws.Phase == wire.PhaseRunning {
				break
			}
			if time.Now().After(deadline) {
				if d := c.describeWorkflow(id); strings.Contains(d, "not found") {
					stuck = append(stuck, id)
				} else {
					late = append(late, fmt.Sprintf("%s (%v; %s)", id, err, d))
				}
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	t.Logf("%d creates were cut off and found by their labels; %d run", len(ids), len(ids)-len(stuck)-len(late))
	if len(late) > 0 {
		t.Errorf("cut-off creates not running within 30s: %v", late)
	}
	if len(stuck) > 0 {
		t.Errorf("%d of %d creates cut off by the kill left a pending row that never got a workflow (the reconciler did not adopt them): %v",
			len(stuck), len(ids), stuck)
	}
}

// labelled lists the ids of the workspaces labelled k1=v1 (and k2=v2 when
// k2 is not empty); on an error it fails t (not at once: it runs on the
// burst's goroutines) and returns none.
func labelled(t *testing.T, ctx context.Context, lb *balancer, k1, v1, k2, v2 string) []string {
	t.Helper()
	var list []wire.Workspace
	if _, err := lb.again(ctx, func(a *client.Client) error {
		var err error
		list, err = a.ListWorkspaces(ctx, client.WorkspaceListOptions{})
		return err
	}); err != nil {
		t.Errorf("list workspaces: %v", err)
		return nil
	}
	var out []string
	for _, ws := range list {
		if ws.Labels[k1] == v1 && (k2 == "" || ws.Labels[k2] == v2) {
			out = append(out, ws.ID)
		}
	}
	return out
}

// openWorkspaceWorkflows lists the workspace workflows still open in the
// cluster's namespace.
func openWorkspaceWorkflows(t *testing.T, ctx context.Context, c *primerCluster) []string {
	t.Helper()
	var out []string
	var token []byte
	for {
		resp, err := c.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: "ExecutionStatus = 'Running'", NextPageToken: token})
		if err != nil {
			t.Fatalf("list open workflows: %v", err)
		}
		for _, e := range resp.GetExecutions() {
			if id := e.GetExecution().GetWorkflowId(); strings.HasPrefix(id, workflows.WorkflowID("")) {
				out = append(out, fmt.Sprintf("%s (%s)", id, e.GetType().GetName()))
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out
		}
	}
}
