package workflows

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/wire"
)

// snapFakes are the snapshot, pause and resume activities of version
// vSnapshot, recording what the workflow asked for.
type snapFakes struct {
	mu        sync.Mutex
	snapshots []activities.SnapshotInput
	failed    []activities.FailSnapshotInput
	pauses    []activities.PauseInput
	resumes   []activities.ResumeInput
	// snapshotErr, pauseErr and resumeErr, when set, are the activities'
	// errors.
	snapshotErr, pauseErr, resumeErr error
}

// pausedHandle is the handle a paused sandbox has (a backend may give a
// paused sandbox a new one).
var pausedHandle = backend.Handle{Backend: "local", WorkspaceID: "ws-test", Path: "/tmp/primer/ws-test", Attrs: map[string]string{"paused": "yes"}}

// mockSnapshots mocks the vSnapshot activities on env with s.
func mockSnapshots(env *testsuite.TestWorkflowEnvironment, f *fakes, s *snapFakes) {
	var a *activities.Activities
	env.OnActivity(a.Snapshot, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.SnapshotInput) (activities.SnapshotOutput, error) {
			if err := f.stalled(ctx, "Snapshot"); err != nil {
				return activities.SnapshotOutput{}, err
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.snapshots = append(s.snapshots, in)
			if s.snapshotErr != nil {
				return activities.SnapshotOutput{}, s.snapshotErr
			}
			return activities.SnapshotOutput{Bytes: 4096}, nil
		})
	env.OnActivity(a.FailSnapshot, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.FailSnapshotInput) (activities.FailSnapshotOutput, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.failed = append(s.failed, in)
			return activities.FailSnapshotOutput{}, nil
		})
	env.OnActivity(a.Pause, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.PauseInput) (activities.PauseOutput, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.pauses = append(s.pauses, in)
			if s.pauseErr != nil {
				return activities.PauseOutput{}, s.pauseErr
			}
			return activities.PauseOutput{Handle: pausedHandle}, nil
		})
	env.OnActivity(a.Resume, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ResumeInput) (activities.ResumeOutput, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.resumes = append(s.resumes, in)
			if s.resumeErr != nil {
				return activities.ResumeOutput{}, s.resumeErr
			}
			return activities.ResumeOutput{Handle: testHandle}, nil
		})
}

// signalAt sends signal name with payload at d after the start.
func signalAt(env *testsuite.TestWorkflowEnvironment, d time.Duration, name string, payload any) {
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(name, payload) }, d)
}

// probeClock records when each probe ran (workflow time).
type probeClock struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
}

// clockProbes makes f's probes record their time on env's clock.
func clockProbes(env *testsuite.TestWorkflowEnvironment, f *fakes) *probeClock {
	c := &probeClock{start: env.Now()}
	f.onProbe = func(int) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.at = append(c.at, env.Now().Sub(c.start))
	}
	return c
}

// between counts the probes that ran in [from, to) after the start.
func (c *probeClock) between(from, to time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, at := range c.at {
		if at >= from && at < to {
			n++
		}
	}
	return n
}

func TestWorkspaceSnapshot(t *testing.T) {
	unsupported := temporal.NewNonRetryableApplicationError("workspace ws-test: snapshot snap-1: the local backend cannot take snapshots", "invalid", nil)
	tests := []struct {
		name        string
		err         error
		wantFailed  string // FailSnapshot's reason; "" for none
		wantEvents  []string
		wantSnapped int
	}{
		{name: "taken", wantSnapped: 1},
		{name: "backend cannot", err: unsupported, wantSnapped: 1, wantFailed: "the local backend cannot take snapshots"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakes{}
			env := newEnv(t, f)
			s := &snapFakes{snapshotErr: tt.err}
			mockSnapshots(env, f, s)
			signalAt(env, time.Minute, SignalSnapshot, SnapshotSignal{SnapshotID: "snap-1", Mode: wire.SnapshotModeFilesystem})
			deleteAt(env, 5*time.Minute, "done")
			clock := clockProbes(env, f)
			env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if len(s.snapshots) != tt.wantSnapped {
				t.Fatalf("Snapshot calls = %+v, want %d", s.snapshots, tt.wantSnapped)
			}
			in := s.snapshots[0]
			if in.SnapshotID != "snap-1" || in.Mode != wire.SnapshotModeFilesystem || in.WorkspaceID != "ws-test" || in.Handle == nil || in.Handle.Path != testHandle.Path {
				t.Errorf("Snapshot input = %+v", in)
			}
			switch {
			case tt.wantFailed == "" && len(s.failed) != 0:
				t.Errorf("FailSnapshot calls = %+v, want none", s.failed)
			case tt.wantFailed != "" && (len(s.failed) != 1 || !strings.Contains(s.failed[0].Reason, tt.wantFailed) || s.failed[0].SnapshotID != "snap-1"):
				t.Errorf("FailSnapshot calls = %+v, want one for snap-1 with %q", s.failed, tt.wantFailed)
			}
			// The capture changes nothing of the workspace's life: it
			// stays running and probed until the delete.
			if got, want := f.phaseList(), []string{wire.PhaseRunning, wire.PhaseTerminating}; !slices.Equal(got, want) {
				t.Errorf("phases = %v, want %v", got, want)
			}
			if n := clock.between(2*time.Minute, 5*time.Minute); n < 5 {
				t.Errorf("%d probes between 2 and 5 minutes, want the usual ones", n)
			}
		})
	}
}

// A delete while the snapshot is taken cancels it, fails the snapshot
// with a reason, and destroys the workspace.
func TestDeleteInterruptsSnapshot(t *testing.T) {
	f := &fakes{}
	env := newEnv(t, f)
	s := &snapFakes{}
	mockSnapshots(env, f, s)
	runs := stallUntilDeleted(t, env, f, "Snapshot", "deleted mid-snapshot")
	signalAt(env, time.Minute, SignalSnapshot, SnapshotSignal{SnapshotID: "snap-2"})
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if *runs != 1 {
		t.Errorf("Snapshot ran %d times, want once", *runs)
	}
	if len(s.failed) != 1 || s.failed[0].SnapshotID != "snap-2" || !strings.Contains(s.failed[0].Reason, "deleted") {
		t.Errorf("FailSnapshot calls = %+v, want snap-2 failed as deleted", s.failed)
	}
	if got, want := f.phaseList(), []string{wire.PhaseRunning, wire.PhaseTerminating}; !slices.Equal(got, want) {
		t.Errorf("phases = %v, want %v", got, want)
	}
	if r := f.reasonOf(wire.PhaseTerminating, 0); r != "deleted mid-snapshot" {
		t.Errorf("terminating reason = %q", r)
	}
	if len(f.destroys) != 1 {
		t.Errorf("destroys = %+v, want one", f.destroys)
	}
}

func TestWorkspacePauseResume(t *testing.T) {
	f := &fakes{}
	env := newEnv(t, f)
	s := &snapFakes{}
	mockSnapshots(env, f, s)
	signalAt(env, time.Minute, SignalPause, PauseSignal{Reason: "paused by test"})
	// A snapshot of a paused workspace is allowed and leaves it paused.
	signalAt(env, 30*time.Minute, SignalSnapshot, SnapshotSignal{SnapshotID: "snap-p"})
	signalAt(env, 61*time.Minute, SignalResume, ResumeSignal{Reason: "resumed by test"})
	deleteAt(env, 65*time.Minute, "done")
	clock := clockProbes(env, f)
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{wire.PhaseRunning, wire.PhasePaused, wire.PhasePending, wire.PhaseRunning, wire.PhaseTerminating}
	if got := f.phaseList(); !slices.Equal(got, want) {
		t.Fatalf("phases = %v, want %v", got, want)
	}
	if r := f.reasonOf(wire.PhasePaused, 0); r != "paused by test" {
		t.Errorf("paused reason = %q", r)
	}
	if r := f.reasonOf(wire.PhasePending, 0); r != "resumed by test" {
		t.Errorf("pending reason = %q", r)
	}
	if len(s.pauses) != 1 || s.pauses[0].Mode != "" || s.pauses[0].Handle == nil {
		t.Errorf("Pause calls = %+v", s.pauses)
	}
	// Resume starts from the paused sandbox's handle.
	if len(s.resumes) != 1 || s.resumes[0].Handle == nil || s.resumes[0].Handle.Attrs["paused"] != "yes" {
		t.Errorf("Resume calls = %+v, want one with the paused handle", s.resumes)
	}
	if len(s.snapshots) != 1 || s.snapshots[0].Handle.Attrs["paused"] != "yes" || len(s.failed) != 0 {
		t.Errorf("snapshot while paused: calls %+v, failed %+v", s.snapshots, s.failed)
	}
	// Not probed while paused; probed at once after the resume.
	if n := clock.between(2*time.Minute, 61*time.Minute); n != 0 {
		t.Errorf("%d probes while paused, want none", n)
	}
	if n := clock.between(61*time.Minute, 61*time.Minute+time.Second); n != 1 {
		t.Errorf("%d probes right after the resume, want 1", n)
	}
}

// A delete of a paused workspace destroys it, with the paused sandbox's
// handle.
func TestDeletePausedWorkspace(t *testing.T) {
	f := &fakes{}
	env := newEnv(t, f)
	s := &snapFakes{}
	mockSnapshots(env, f, s)
	signalAt(env, time.Minute, SignalPause, PauseSignal{})
	deleteAt(env, 10*time.Minute, "deleted while paused")
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{wire.PhaseRunning, wire.PhasePaused, wire.PhaseTerminating}
	if got := f.phaseList(); !slices.Equal(got, want) {
		t.Fatalf("phases = %v, want %v", got, want)
	}
	if len(f.destroys) != 1 || f.destroys[0].Handle == nil || f.destroys[0].Handle.Attrs["paused"] != "yes" {
		t.Errorf("destroys = %+v, want one with the paused handle", f.destroys)
	}
}

// A pause the backend refuses leaves the workspace running, probed, with
// the reason; a resume of a workspace that is not paused does nothing.
func TestPauseRefused(t *testing.T) {
	f := &fakes{}
	env := newEnv(t, f)
	s := &snapFakes{pauseErr: temporal.NewNonRetryableApplicationError("workspace ws-test: pause: the local backend cannot pause", "invalid", nil)}
	mockSnapshots(env, f, s)
	signalAt(env, time.Minute, SignalPause, PauseSignal{})
	signalAt(env, 2*time.Minute, SignalResume, ResumeSignal{})
	deleteAt(env, 5*time.Minute, "done")
	clock := clockProbes(env, f)
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got, want := f.phaseList(), []string{wire.PhaseRunning, wire.PhaseRunning, wire.PhaseTerminating}; !slices.Equal(got, want) {
		t.Errorf("phases = %v, want %v (the second a new reason)", got, want)
	}
	if r := f.reasonOf(wire.PhaseRunning, 1); !strings.Contains(r, "pause failed") || !strings.Contains(r, "cannot pause") {
		t.Errorf("reason after the refused pause = %q", r)
	}
	if len(s.resumes) != 0 {
		t.Errorf("Resume calls = %+v, want none", s.resumes)
	}
	if n := clock.between(2*time.Minute, 5*time.Minute); n < 5 {
		t.Errorf("%d probes after the refused pause, want the usual ones", n)
	}
}

// lifetime.idle_action pause: at the idle deadline the workspace is
// paused instead of deleted (and stays so past its idle deadline); where
// it cannot be paused it is deleted, the reason saying why.
func TestIdleActionPause(t *testing.T) {
	tests := []struct {
		name       string
		pauseErr   error
		wantPhases []string
		wantReason string // of terminating
	}{
		{
			name:       "paused",
			wantPhases: []string{wire.PhaseRunning, wire.PhasePaused, wire.PhaseTerminating},
			wantReason: "deleted by test",
		},
		{
			name:       "backend cannot pause: deleted",
			pauseErr:   temporal.NewNonRetryableApplicationError("workspace ws-test: pause: the local backend cannot pause", "invalid", nil),
			wantPhases: []string{wire.PhaseRunning, wire.PhaseTerminating},
			wantReason: "idle; not paused: workspace ws-test: pause: the local backend cannot pause",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakes{}
			row := &fakeRow{}
			f.lifetime = row.get
			env := newEnv(t, f)
			s := &snapFakes{pauseErr: tt.pauseErr}
			mockSnapshots(env, f, s)
			var a *activities.Activities
			checks := 0
			env.OnActivity(a.CheckLifetime, mock.Anything, mock.Anything).Return(
				func(context.Context, activities.CheckLifetimeInput) (activities.CheckLifetimeOutput, error) {
					checks++
					return activities.CheckLifetimeOutput{Lifetime: *row.get(), IdleAction: backend.IdleActionPause}, nil
				})
			clock := clockProbes(env, f)
			start := env.Now()
			row.set(func(l *activities.Lifetime) { *l = activities.Lifetime{IdleDeadline: start.Add(5 * time.Minute)} })
			deleteAt(env, 3*time.Hour, "deleted by test")
			env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if got := f.phaseList(); !slices.Equal(got, tt.wantPhases) {
				t.Fatalf("phases = %v, want %v", got, tt.wantPhases)
			}
			if r := f.reasonOf(wire.PhaseTerminating, 0); r != tt.wantReason {
				t.Errorf("terminating reason = %q, want %q", r, tt.wantReason)
			}
			if len(s.pauses) != 1 || s.pauses[0].Reason != wire.ReasonIdle {
				t.Errorf("Pause calls = %+v, want one for idle", s.pauses)
			}
			if tt.pauseErr == nil {
				if r := f.reasonOf(wire.PhasePaused, 0); r != wire.ReasonIdle {
					t.Errorf("paused reason = %q, want idle", r)
				}
				// Paused at the deadline, then left alone: the passed idle
				// deadline wakes it no more.
				if checks != 1 {
					t.Errorf("CheckLifetime ran %d times, want once", checks)
				}
				if n := clock.between(6*time.Minute, 3*time.Hour); n != 0 {
					t.Errorf("%d probes while paused, want none", n)
				}
			}
		})
	}
}
