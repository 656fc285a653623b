//go:build record

package recorder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/activities/evalrun"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker/temporalserver"
	"github.com/primerhq/primer/workflows"
)

const interval = 100 * time.Millisecond

// script is what the fake activities do for one workspace.
type script struct {
	provisionErrs []error // successive Provision attempts, then success
	probes        []bool  // successive probe results, then hits
	replaceErrs   []error // successive Replace attempts, then success
	destroyErrs   []error // successive Destroy attempts, then success
	// hang names the activity (Provision or Replace) that never finishes:
	// it heartbeats until it is cancelled, as one whose init runs
	// `sleep 600` does.
	hang string
	// leaseAfter and expireAfter, when set, are the lease and the expiry
	// deadlines the probes report (workflow version vLifetime), counted
	// from the first probe; a lease taken back reports none.
	leaseAfter, expireAfter time.Duration
	lifeFrom                time.Time
	leaseTaken              bool
	// idleAfter, when set, is the idle deadline the probes report,
	// counted from the first probe, with idle_action pause (version
	// vSnapshot).
	idleAfter time.Duration
	// pauseAtExpiry gives the expiry expire_action pause, with a
	// max_expires_at an hour out (version vExpirePause).
	pauseAtExpiry bool
}

// lifetime is the deadlines s reports; nil when it has none.
func (s *script) lifetime() *activities.Lifetime {
	if s == nil || (s.leaseAfter == 0 && s.expireAfter == 0 && s.idleAfter == 0) {
		return nil
	}
	if s.lifeFrom.IsZero() {
		s.lifeFrom = time.Now()
	}
	l := &activities.Lifetime{}
	if s.leaseAfter > 0 && !s.leaseTaken {
		l.LeaseExpiresAt = s.lifeFrom.Add(s.leaseAfter)
	}
	if s.expireAfter > 0 {
		l.ExpiresAt = s.lifeFrom.Add(s.expireAfter)
	}
	if s.idleAfter > 0 {
		l.IdleDeadline = s.lifeFrom.Add(s.idleAfter)
	}
	if s.pauseAtExpiry {
		l.ExpireAction = wire.ExpireActionPause
		l.MaxExpiresAt = s.lifeFrom.Add(time.Hour)
	}
	return l
}

// fakes are activities with the real names and signatures whose results
// follow a script per workspace. Histories only record what activities
// returned, so fakes make histories as good as real ones, with exact
// control over misses and failures.
type fakes struct {
	mu       sync.Mutex
	scripts  map[string]*script
	provs    map[string]int
	probes   map[string]int
	repls    map[string]int
	dests    map[string]int
	passes   int
	acquired int
	// hanging receives the workspace id of each activity that hangs.
	hanging chan string
}

// hang heartbeats until ctx is cancelled, when s says activity hangs.
func (f *fakes) hang(ctx context.Context, s *script, id, activityName string) error {
	if s == nil || s.hang != activityName {
		return nil
	}
	f.hanging <- id
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			activity.RecordHeartbeat(ctx)
		}
	}
}

func (f *fakes) Provision(ctx context.Context, in activities.ProvisionInput) (activities.ProvisionOutput, error) {
	if err := f.hang(ctx, f.script(in.WorkspaceID), in.WorkspaceID, "Provision"); err != nil {
		return activities.ProvisionOutput{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.provs[in.WorkspaceID]++
	s := f.scripts[in.WorkspaceID]
	if n := f.provs[in.WorkspaceID]; n <= len(s.provisionErrs) {
		return activities.ProvisionOutput{}, s.provisionErrs[n-1]
	}
	return activities.ProvisionOutput{Handle: handle(in.WorkspaceID)}, nil
}

func (f *fakes) script(id string) *script {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.scripts[id]
}

func (f *fakes) Probe(_ context.Context, in activities.ProbeInput) (activities.ProbeOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes[in.WorkspaceID]++
	s := f.scripts[in.WorkspaceID]
	if n := f.probes[in.WorkspaceID]; n <= len(s.probes) && !s.probes[n-1] {
		return activities.ProbeOutput{Reason: "runtime connect: dial ws://127.0.0.1:1/w/" + in.WorkspaceID + ": connection refused"}, nil
	}
	// A probe that asks to watch is watched (version vLiveness): the
	// recording drives the Prober's part with signals.
	out := activities.ProbeOutput{Hit: true, Watched: in.Watch != nil}
	if in.Lifetime {
		out.Lifetime = s.lifetime()
	}
	return out, nil
}

func (f *fakes) CheckLifetime(_ context.Context, in activities.CheckLifetimeInput) (activities.CheckLifetimeOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out activities.CheckLifetimeOutput
	s := f.scripts[in.WorkspaceID]
	if l := s.lifetime(); l != nil {
		out.Lifetime = *l
	}
	if s != nil && s.idleAfter > 0 {
		out.IdleAction = backend.IdleActionPause
	}
	return out, nil
}

func (f *fakes) ExpireLease(_ context.Context, in activities.ExpireLeaseInput) (activities.ExpireLeaseOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.scripts[in.WorkspaceID]
	if s == nil || s.leaseTaken {
		return activities.ExpireLeaseOutput{}, nil
	}
	s.leaseTaken = true
	return activities.ExpireLeaseOutput{TakenBack: true, PoolID: "warm"}, nil
}

func (f *fakes) SetPhase(context.Context, activities.SetPhaseInput) (activities.SetPhaseOutput, error) {
	return activities.SetPhaseOutput{}, nil
}

func (f *fakes) RecordEvent(context.Context, activities.RecordEventInput) (activities.RecordEventOutput, error) {
	return activities.RecordEventOutput{EventID: 1}, nil
}

func (f *fakes) Destroy(_ context.Context, in activities.DestroyInput) (activities.DestroyOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dests[in.WorkspaceID]++
	if s := f.scripts[in.WorkspaceID]; s != nil {
		if n := f.dests[in.WorkspaceID]; n <= len(s.destroyErrs) {
			return activities.DestroyOutput{}, s.destroyErrs[n-1]
		}
	}
	return activities.DestroyOutput{Destroyed: in.Handle != nil, Path: handle(in.WorkspaceID).Path}, nil
}

func (f *fakes) Replace(ctx context.Context, in activities.ReplaceInput) (activities.ProvisionOutput, error) {
	if err := f.hang(ctx, f.script(in.WorkspaceID), in.WorkspaceID, "Replace"); err != nil {
		return activities.ProvisionOutput{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.repls[in.WorkspaceID]++
	f.probes[in.WorkspaceID] = 1000 // the replacement answers
	if s := f.scripts[in.WorkspaceID]; s != nil {
		if n := f.repls[in.WorkspaceID]; n <= len(s.replaceErrs) {
			return activities.ProvisionOutput{}, s.replaceErrs[n-1]
		}
	}
	return activities.ProvisionOutput{Handle: handle(in.WorkspaceID)}, nil
}

// failSnapshotID is the snapshot id whose capture the fake Snapshot fails.
const failSnapshotID = "snap-recordedfail"

func (f *fakes) Snapshot(_ context.Context, in activities.SnapshotInput) (activities.SnapshotOutput, error) {
	if in.SnapshotID == failSnapshotID {
		return activities.SnapshotOutput{}, temporal.NewNonRetryableApplicationError(
			"workspace "+in.WorkspaceID+": snapshot "+in.SnapshotID+": the local backend cannot take full snapshots", "invalid", nil)
	}
	return activities.SnapshotOutput{Bytes: 1 << 20}, nil
}

func (f *fakes) FailSnapshot(context.Context, activities.FailSnapshotInput) (activities.FailSnapshotOutput, error) {
	return activities.FailSnapshotOutput{}, nil
}

func (f *fakes) Pause(_ context.Context, in activities.PauseInput) (activities.PauseOutput, error) {
	h := handle(in.WorkspaceID)
	h.Attrs = map[string]string{"paused": "true"}
	return activities.PauseOutput{Handle: h}, nil
}

func (f *fakes) Resume(_ context.Context, in activities.ResumeInput) (activities.ResumeOutput, error) {
	return activities.ResumeOutput{Handle: handle(in.WorkspaceID)}, nil
}

func (f *fakes) Recovered(_ context.Context, in activities.RecoveredInput) (activities.RecoveredOutput, error) {
	return activities.RecoveredOutput{Sessions: []activities.ResumedSession{{ID: "ses-new", ResumedFrom: "ses-lost"}}}, nil
}

func (f *fakes) NotifyWebhook(context.Context, activities.WebhookInput) (activities.WebhookOutput, error) {
	return activities.WebhookOutput{Status: 204}, nil
}

func (f *fakes) Reset(context.Context, activities.ResetInput) (activities.ResetOutput, error) {
	return activities.ResetOutput{Killed: 2, SessionsEnded: 1}, nil
}

func (f *fakes) ReconcilePool(context.Context, activities.ReconcilePoolInput) (activities.ReconcilePoolOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.passes++
	return activities.ReconcilePoolOutput{Gone: f.passes >= 3, Created: 1}, nil
}

func (f *fakes) Reconcile(context.Context, activities.ReconcileInput) (activities.ReconcileOutput, error) {
	return activities.ReconcileOutput{Removed: []string{"ws-orphan"}}, nil
}

// The eval run's activities: five cases on two slots; case 2 loses its
// workspace once and passes on another, case 3 fails.

func (f *fakes) PrepareRun(_ context.Context, in evalrun.PrepareRunInput) (evalrun.PrepareRunOutput, error) {
	return evalrun.PrepareRunOutput{RunID: in.RunID, Total: 5, Concurrency: 2, Retries: 1, TemplateID: wire.DefaultTemplateID,
		CaseTimeout: time.Minute, StartTimeout: time.Minute}, nil
}

func (f *fakes) AcquireWorkspace(_ context.Context, in evalrun.AcquireWorkspaceInput) (evalrun.AcquireWorkspaceOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acquired++
	return evalrun.AcquireWorkspaceOutput{WorkspaceID: fmt.Sprintf("ws-run-%d", f.acquired)}, nil
}

func (f *fakes) RunCase(_ context.Context, in evalrun.RunCaseInput) (evalrun.RunCaseOutput, error) {
	switch {
	case in.Ordinal == 2 && in.Attempt == 1:
		return evalrun.RunCaseOutput{Verdict: "error", Infra: true, Reason: "workspace " + in.WorkspaceID + ": runtime connect: connection refused"}, nil
	case in.Ordinal == 3:
		return evalrun.RunCaseOutput{Verdict: "fail", Reason: "exit code 1, want 0"}, nil
	}
	return evalrun.RunCaseOutput{Verdict: "pass"}, nil
}

func (f *fakes) ReleaseWorkspace(context.Context, evalrun.ReleaseWorkspaceInput) (evalrun.ReleaseWorkspaceOutput, error) {
	return evalrun.ReleaseWorkspaceOutput{Released: true}, nil
}

func (f *fakes) FailCase(context.Context, evalrun.FailCaseInput) (evalrun.FailCaseOutput, error) {
	return evalrun.FailCaseOutput{Verdict: "error"}, nil
}

func (f *fakes) FinishRun(_ context.Context, in evalrun.FinishRunInput) (evalrun.FinishRunOutput, error) {
	return evalrun.FinishRunOutput{Status: in.Status, Total: 5, Pass: 4, Fail: 1, Released: 2}, nil
}

func handle(id string) backend.Handle {
	return backend.Handle{Backend: wire.BackendLocal, WorkspaceID: id, Path: "/var/lib/primer/workspaces/" + id}
}

// recording is one scripted lifecycle and how to drive it.
type recording struct {
	file   string
	id     string
	script script
	state  *workflows.WorkspaceState
	policy *backend.Policy
	pool   string
	// start starts a workflow other than a workspace's; nil starts the
	// workspace workflow of id.
	start func(t *testing.T) client.WorkflowRun
	// drive acts on the running workflow (signal, cancel) and returns when
	// the history to record is complete.
	drive func(t *testing.T, r *run)
	// lastEvent is the type the recorded history must end with.
	lastEvent enumspb.EventType
}

type run struct {
	ctx   context.Context
	c     client.Client
	wid   string
	runID string
}

// await polls the workflow's state until ok holds.
func (r *run) await(t *testing.T, what string, ok func(workflows.WorkspaceState) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		v, err := r.c.QueryWorkflow(r.ctx, r.wid, r.runID, workflows.QueryState)
		if err == nil {
			var st workflows.WorkspaceState
			if err := v.Get(&st); err != nil {
				t.Fatal(err)
			}
			if ok(st) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: timed out waiting for %s", r.wid, what)
}

func (r *run) delete(t *testing.T, reason string) {
	t.Helper()
	if err := r.c.SignalWorkflow(r.ctx, r.wid, "", workflows.SignalDelete, workflows.DeleteSignal{Reason: reason}); err != nil {
		t.Fatal(err)
	}
}

// signal sends the Prober's liveness signal.
func (r *run) signal(t *testing.T, s activities.LivenessSignal) {
	t.Helper()
	if err := r.c.SignalWorkflow(r.ctx, r.wid, "", workflows.SignalLiveness, s); err != nil {
		t.Fatal(err)
	}
}

// send sends signal name with payload.
func (r *run) send(t *testing.T, name string, payload any) {
	t.Helper()
	if err := r.c.SignalWorkflow(r.ctx, r.wid, "", name, payload); err != nil {
		t.Fatal(err)
	}
}

// result waits for the run to close and returns its error.
func (r *run) result() error {
	return r.c.GetWorkflow(r.ctx, r.wid, r.runID).Get(r.ctx, nil)
}

func TestRecordHistories(t *testing.T) {
	if os.Getenv("PRIMER_RECORD_HISTORY") != "1" {
		t.Skip("records workflows/testdata/*.json against an embedded Temporal server; run with make record-histories")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	c := dial(t, ctx)
	f := &fakes{scripts: map[string]*script{}, provs: map[string]int{}, probes: map[string]int{},
		repls: map[string]int{}, dests: map[string]int{}, hanging: make(chan string, 4)}
	// As primer serve: a delete's cancellation reaches a hanging activity
	// in the answer to its next heartbeat, not 16 s later.
	w := worker.New(c, workflows.TaskQueue, worker.Options{MaxHeartbeatThrottleInterval: activities.CancelCheckInterval})
	w.RegisterWorkflowWithOptions(workflows.WorkspaceWorkflow, workflow.RegisterOptions{Name: workflows.WorkspaceWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.PoolWorkflow, workflow.RegisterOptions{Name: workflows.PoolWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.ReconcilerWorkflow, workflow.RegisterOptions{Name: workflows.ReconcilerWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.RunWorkflow, workflow.RegisterOptions{Name: workflows.RunWorkflowName})
	w.RegisterActivity(f)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	flaky := temporal.NewApplicationError("workspace ws-lifecycle: provision: runtime did not answer", "unavailable")
	bad := temporal.NewNonRetryableApplicationError("workspace ws-provfail: provision: init[0]: exit status 1: boom", "invalid", nil)
	h := handle("ws-continued")
	gone := temporal.NewApplicationError("workspace ws-recovery: destroy: docker engine is not reachable", "unavailable")

	recordings := []recording{
		{
			// provision (one retry), pending -> running, 3 misses -> failed,
			// 3 hits -> running, delete -> terminating -> destroyed.
			file:   "lifecycle.json",
			id:     "ws-lifecycle",
			script: script{provisionErrs: []error{flaky}, probes: []bool{true, true, false, false, false, true, true, true}},
			drive: func(t *testing.T, r *run) {
				r.await(t, "recovery", func(st workflows.WorkspaceState) bool {
					return st.Phase == wire.PhaseRunning && st.Probes >= 9
				})
				r.delete(t, "recorded")
				if err := r.result(); err != nil {
					t.Fatal(err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		},
		{
			file:   "provision_failed.json",
			id:     "ws-provfail",
			script: script{provisionErrs: []error{bad}},
			drive: func(t *testing.T, r *run) {
				r.await(t, "failed", func(st workflows.WorkspaceState) bool { return st.Phase == wire.PhaseFailed })
				r.delete(t, "")
				if err := r.result(); err != nil {
					t.Fatal(err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		},
		{
			file: "cancelled.json",
			id:   "ws-cancelled",
			drive: func(t *testing.T, r *run) {
				r.await(t, "running", func(st workflows.WorkspaceState) bool {
					return st.Phase == wire.PhaseRunning && st.Probes >= 2
				})
				if err := r.c.CancelWorkflow(r.ctx, r.wid, r.runID); err != nil {
					t.Fatal(err)
				}
				var canceled *temporal.CanceledError
				if err := r.result(); !errors.As(err, &canceled) {
					t.Fatalf("result = %v, want cancellation", err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
		},
		{
			// A run started by continue-as-new: no provisioning, carried
			// counters, failed -> running after three hits.
			file:  "continued.json",
			id:    "ws-continued",
			state: &workflows.WorkspaceState{Phase: wire.PhaseFailed, Reason: "gone", Misses: 3, Handle: &h, Probes: 400},
			drive: func(t *testing.T, r *run) {
				r.await(t, "running", func(st workflows.WorkspaceState) bool { return st.Phase == wire.PhaseRunning })
				r.delete(t, "recorded")
				if err := r.result(); err != nil {
					t.Fatal(err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		},
		{
			// The first run, which ends by continuing as new after
			// ProbesPerRun probes.
			file: "continue_as_new.json",
			id:   "ws-can",
			drive: func(t *testing.T, r *run) {
				var can *workflow.ContinueAsNewError
				if err := r.c.GetWorkflow(r.ctx, r.wid, r.runID).GetWithOptions(r.ctx, nil, client.WorkflowRunGetOptions{DisableFollowingRuns: true}); !errors.As(err, &can) {
					t.Fatalf("first run ended with %v, want continue-as-new", err)
				}
				// Clean up the next run.
				r.delete(t, "recorded")
				if err := c.GetWorkflow(r.ctx, r.wid, "").Get(r.ctx, nil); err != nil {
					t.Fatal(err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
		},

		// Version 1 (vRecovery) histories.
		{
			// running, 3 misses -> failed, replaced at once (after 0):
			// pending -> running with the sessions resumed; then a delete
			// whose destroy fails one round and is retried.
			file:   "recovery_v1.json",
			id:     "ws-recovery",
			script: script{probes: []bool{true, false, false, false}, destroyErrs: []error{gone, gone, gone}},
			policy: &backend.Policy{StartTimeout: time.Minute, MaxAttempts: 2},
			drive: func(t *testing.T, r *run) {
				r.await(t, "recovered", func(st workflows.WorkspaceState) bool {
					return st.Phase == wire.PhaseRunning && st.Probes >= 6
				})
				r.delete(t, "recorded")
				if err := r.result(); err != nil {
					t.Fatal(err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		},
		{
			// A failed provisioning, two failed replacements, escalation with
			// the webhook, a recover signal that works, a return (pool), and
			// a delete.
			file:   "escalated_v1.json",
			id:     "ws-escalated",
			script: script{provisionErrs: []error{bad}, replaceErrs: []error{bad, bad}},
			policy: &backend.Policy{StartTimeout: time.Minute, MaxAttempts: 2, Webhook: true},
			pool:   "warm",
			drive: func(t *testing.T, r *run) {
				r.await(t, "escalated", func(st workflows.WorkspaceState) bool { return st.Phase == wire.PhaseEscalated })
				if err := r.c.SignalWorkflow(r.ctx, r.wid, "", workflows.SignalRecover, workflows.RecoverSignal{Reason: "recorded"}); err != nil {
					t.Fatal(err)
				}
				r.await(t, "running", func(st workflows.WorkspaceState) bool { return st.Phase == wire.PhaseRunning })
				if err := r.c.SignalWorkflow(r.ctx, r.wid, "", workflows.SignalReturn, workflows.ReturnSignal{}); err != nil {
					t.Fatal(err)
				}
				r.await(t, "probes after the return", func(st workflows.WorkspaceState) bool { return st.Probes >= 4 })
				r.delete(t, "recorded")
				if err := r.result(); err != nil {
					t.Fatal(err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		},

		{
			file: "pool_v1.json",
			start: func(t *testing.T) client.WorkflowRun {
				wr, err := c.ExecuteWorkflow(ctx, workflows.PoolStartOptions("recorded", wire.DefaultTenantID), workflows.PoolWorkflowName,
					workflows.PoolInput{PoolID: "recorded", Interval: interval})
				if err != nil {
					t.Fatal(err)
				}
				return wr
			},
			drive: func(t *testing.T, r *run) {
				if err := r.c.SignalWorkflow(r.ctx, r.wid, "", workflows.SignalPoolChanged, workflows.PoolChanged{}); err != nil {
					t.Fatal(err)
				}
				if err := r.result(); err != nil {
					t.Fatal(err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		},
		{
			file: "reconciler_v1.json",
			start: func(t *testing.T) client.WorkflowRun {
				wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "recorded-reconciler", TaskQueue: workflows.TaskQueue},
					workflows.ReconcilerWorkflowName, workflows.ReconcilerInput{Interval: interval, Grace: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				return wr
			},
			drive: func(t *testing.T, r *run) {
				time.Sleep(5 * interval)
				if err := r.c.CancelWorkflow(r.ctx, r.wid, r.runID); err != nil {
					t.Fatal(err)
				}
				var canceled *temporal.CanceledError
				if err := r.result(); !errors.As(err, &canceled) {
					t.Fatalf("result = %v, want cancellation", err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
		},

		// Eval run histories.
		{
			// Five cases over two slots, an infrastructure retry on
			// another workspace (the broken one released), a failing case,
			// then FinishRun.
			file: "run_v1.json",
			start: func(t *testing.T) client.WorkflowRun {
				wr, err := c.ExecuteWorkflow(ctx, workflows.RunStartOptions(wire.DefaultTenantID, "recorded", "run-recorded"), workflows.RunWorkflowName,
					workflows.RunInput{RunID: "run-recorded", SuiteID: "recorded", TriggeredBy: "recorder"})
				if err != nil {
					t.Fatal(err)
				}
				return wr
			},
			drive: func(t *testing.T, r *run) {
				if err := r.result(); err != nil {
					t.Fatal(err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		},

		// Version 2 (vSelfHeal) histories.
		{
			// running, 3 misses -> failed, 3 hits -> running with the lost
			// sessions resumed (no replacement: an hour's delay), and again;
			// then a delete.
			file: "selfheal_v2.json",
			id:   "ws-selfheal",
			script: script{probes: []bool{
				true, false, false, false, true, true, true,
				false, false, false, true, true, true,
			}},
			policy: &backend.Policy{StartTimeout: time.Minute, MaxAttempts: 2, RecoverAfter: time.Hour},
			drive: func(t *testing.T, r *run) {
				r.await(t, "second self-heal", func(st workflows.WorkspaceState) bool {
					return st.Phase == wire.PhaseRunning && st.Probes >= 13
				})
				r.delete(t, "recorded")
				if err := r.result(); err != nil {
					t.Fatal(err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		},

		// Version 1 of change "interrupt" histories.
		{
			// A delete while provisioning hangs: the provisioning is
			// cancelled, then the workspace destroyed.
			file:   "interrupt_provision_v1.json",
			id:     "ws-intprov",
			script: script{hang: "Provision"},
			policy: &backend.Policy{StartTimeout: time.Minute, MaxAttempts: 2},
			drive: func(t *testing.T, r *run) {
				awaitHang(t, f.hanging, "ws-intprov")
				r.delete(t, "recorded")
				if err := r.result(); err != nil {
					t.Fatal(err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		},
		{
			// running, 3 misses -> failed, replaced at once; a delete while
			// the replacement hangs cancels it, then the workspace is
			// destroyed.
			file:   "interrupt_replace_v1.json",
			id:     "ws-intrepl",
			script: script{probes: []bool{true, false, false, false}, hang: "Replace"},
			policy: &backend.Policy{StartTimeout: time.Minute, MaxAttempts: 2},
			drive: func(t *testing.T, r *run) {
				awaitHang(t, f.hanging, "ws-intrepl")
				r.delete(t, "recorded")
				if err := r.result(); err != nil {
					t.Fatal(err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		},

		// Version 1 of change lifetime.
		{
			// A leased pool member whose lease runs out (taken back:
			// reset, back in the pool), then whose max runs out: deleted,
			// reason expired, without a delete signal.
			file:   "lifetime_v1.json",
			id:     "ws-lifetime",
			script: script{leaseAfter: time.Second, expireAfter: 2500 * time.Millisecond},
			pool:   "warm",
			drive: func(t *testing.T, r *run) {
				if err := r.result(); err != nil {
					t.Fatal(err)
				}
			},
			lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		},
	}

	recordings = append(recordings, recording{
		// Version 1 of change liveness: running and watched, the Prober's
		// signal of three misses fails it, its own probes (every interval)
		// bring it back and it is watched again; a lifetime signal wakes
		// it; then a delete.
		file: "liveness_v1.json",
		id:   "ws-liveness",
		drive: func(t *testing.T, r *run) {
			r.await(t, "running", func(st workflows.WorkspaceState) bool { return st.Phase == wire.PhaseRunning })
			r.signal(t, activities.LivenessSignal{Misses: 3, Reason: "runtime ping: connection refused", Probes: 3, At: time.Now()})
			r.await(t, "failed then running", func(st workflows.WorkspaceState) bool {
				return st.Phase == wire.PhaseRunning && st.Probes >= 7
			})
			r.signal(t, activities.LivenessSignal{Probes: 1, At: time.Now(), Lifetime: &activities.Lifetime{ExpiresAt: time.Now().Add(time.Hour)}})
			r.delete(t, "recorded")
			if err := r.result(); err != nil {
				t.Fatal(err)
			}
		},
		lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
	})

	recordings = append(recordings, recording{
		// Version 1 of change snapshot: a snapshot taken, one the backend
		// refuses (failed), a pause, a snapshot of the paused workspace,
		// a resume (pending, then running at the probe), then a delete.
		file: "snapshot_v1.json",
		id:   "ws-snapshot",
		drive: func(t *testing.T, r *run) {
			r.await(t, "running", func(st workflows.WorkspaceState) bool { return st.Phase == wire.PhaseRunning })
			r.send(t, workflows.SignalSnapshot, workflows.SnapshotSignal{SnapshotID: "snap-recorded", Mode: wire.SnapshotModeFilesystem})
			r.send(t, workflows.SignalSnapshot, workflows.SnapshotSignal{SnapshotID: failSnapshotID, Mode: wire.SnapshotModeFull})
			r.send(t, workflows.SignalPause, workflows.PauseSignal{Reason: "paused by recorder"})
			r.await(t, "paused", func(st workflows.WorkspaceState) bool { return st.Phase == wire.PhasePaused })
			r.send(t, workflows.SignalSnapshot, workflows.SnapshotSignal{SnapshotID: "snap-recordedpaused"})
			r.send(t, workflows.SignalResume, workflows.ResumeSignal{Reason: "resumed by recorder"})
			r.await(t, "running again", func(st workflows.WorkspaceState) bool {
				return st.Phase == wire.PhaseRunning && st.Handle != nil && st.Handle.Attrs["paused"] == ""
			})
			r.delete(t, "recorded")
			if err := r.result(); err != nil {
				t.Fatal(err)
			}
		},
		lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
	}, recording{
		// Version 1 of change snapshot: lifetime.idle_action pause. At
		// its idle deadline the workspace is paused, not deleted; then a
		// delete of the paused workspace.
		file:   "idle_pause_v1.json",
		id:     "ws-idlepause",
		script: script{idleAfter: time.Second},
		drive: func(t *testing.T, r *run) {
			r.await(t, "paused", func(st workflows.WorkspaceState) bool { return st.Phase == wire.PhasePaused })
			r.delete(t, "recorded")
			if err := r.result(); err != nil {
				t.Fatal(err)
			}
		},
		lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
	}, recording{
		// Version 1 of change expire_pause: expire_action pause. At its
		// expiry the workspace is paused, not deleted; an extend and a
		// resume (an E2B connect) bring it back; then a delete.
		file:   "expire_pause_v1.json",
		id:     "ws-expirepause",
		script: script{expireAfter: time.Second, pauseAtExpiry: true},
		drive: func(t *testing.T, r *run) {
			r.await(t, "paused", func(st workflows.WorkspaceState) bool { return st.Phase == wire.PhasePaused })
			f.mu.Lock()
			f.scripts["ws-expirepause"].expireAfter = 30 * time.Minute
			f.mu.Unlock()
			r.send(t, workflows.SignalResume, workflows.ResumeSignal{Reason: "resumed by recorder"})
			r.await(t, "running again", func(st workflows.WorkspaceState) bool {
				return st.Phase == wire.PhaseRunning && st.Handle != nil && st.Handle.Attrs["paused"] == ""
			})
			r.delete(t, "recorded")
			if err := r.result(); err != nil {
				t.Fatal(err)
			}
		},
		lastEvent: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
	})

	for _, rec := range recordings {
		t.Run(rec.file, func(t *testing.T) {
			path := filepath.Join("..", "testdata", rec.file)
			if _, err := os.Stat(path); err == nil {
				// A recorded history is what an old build did: it is kept
				// as it is, never recorded again by newer code.
				t.Skipf("%s exists; delete it only if no build that recorded it was released", path)
			}
			var wr client.WorkflowRun
			if rec.start != nil {
				wr = rec.start(t)
			} else {
				s := rec.script
				f.mu.Lock()
				f.scripts[rec.id] = &s
				f.mu.Unlock()
				in := workflows.WorkspaceInput{
					WorkspaceID: rec.id, TemplateID: wire.DefaultTemplateID, ProviderID: wire.LocalProviderID,
					Backend: wire.BackendLocal, ProbeInterval: interval, State: rec.state,
					Policy: rec.policy, PoolID: rec.pool,
				}
				var err error
				wr, err = c.ExecuteWorkflow(ctx, workflows.StartOptions(in), workflows.WorkspaceWorkflowName, in)
				if err != nil {
					t.Fatal(err)
				}
			}
			r := &run{ctx: ctx, c: c, wid: wr.GetID(), runID: wr.GetRunID()}
			rec.drive(t, r)
			hist := history(t, r)
			if last := hist.Events[len(hist.Events)-1].GetEventType(); last != rec.lastEvent {
				t.Fatalf("history ends with %s, want %s", last, rec.lastEvent)
			}
			raw, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(hist)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s: %d events, %d bytes", path, len(hist.Events), len(raw))
		})
	}
}

// dial starts an embedded Temporal server (or uses PRIMER_TEMPORAL_ADDRESS,
// whose namespace must have the search attributes) and returns a client.
func dial(t *testing.T, ctx context.Context) client.Client {
	t.Helper()
	addr := os.Getenv("PRIMER_TEMPORAL_ADDRESS")
	if addr == "" {
		srv, err := temporalserver.Start(ctx, temporalserver.Config{
			DataDir:          t.TempDir(),
			Port:             freePort(t),
			UIPort:           temporalserver.UIDisabled,
			SearchAttributes: workflows.SearchAttributes(),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Stop() })
		addr = srv.FrontendAddress()
	}
	c, err := client.Dial(client.Options{
		HostPort:  addr,
		Namespace: temporalserver.DefaultNamespace,
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// awaitHang waits until the activity of workspace id hangs.
func awaitHang(t *testing.T, hanging <-chan string, id string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case got := <-hanging:
			if got == id {
				return
			}
		case <-timeout:
			t.Fatalf("%s: no activity hangs", id)
		}
	}
}

func history(t *testing.T, r *run) *historypb.History {
	t.Helper()
	it := r.c.GetWorkflowHistory(r.ctx, r.wid, r.runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	hist := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, ev)
	}
	if len(hist.Events) == 0 {
		t.Fatal(fmt.Errorf("%s: empty history", r.wid))
	}
	return hist
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
