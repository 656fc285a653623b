package workflows

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/wire"
)

// TestExpirePause runs expire_action pause (version vExpirePause, E2B's
// autoPause) with a skipped clock: at its expiry the workspace is paused,
// not deleted, and stays paused past the passed deadline; an extend and a
// resume (what an E2B connect does) bring it back with a fresh timeout,
// which pauses it again. lifetime.max still deletes: a paused workspace at
// its max_expires_at, and one whose expiry is its max. Where it cannot be
// paused it is deleted, the reason saying why.
func TestExpirePause(t *testing.T) {
	const deleteTime = 90 * time.Minute
	cannot := temporal.NewNonRetryableApplicationError("workspace ws-test: pause: the local backend cannot pause", "invalid", nil)
	tests := []struct {
		name     string
		expires  time.Duration
		max      time.Duration // 0: none
		pauseErr error
		// resumeAt, when set, extends the expiry to resumeAt+10m and
		// resumes the workspace, as an E2B connect does.
		resumeAt    time.Duration
		wantPhases  []string
		wantReason  string // of terminating
		wantElapsed time.Duration
		wantPauses  int
	}{
		{
			name: "paused at expiry, resumed with a fresh timeout, paused again", expires: 5 * time.Minute, max: 24 * time.Hour,
			resumeAt:    time.Hour,
			wantPhases:  []string{wire.PhaseRunning, wire.PhasePaused, wire.PhasePending, wire.PhaseRunning, wire.PhasePaused, wire.PhaseTerminating},
			wantReason:  "deleted by test",
			wantElapsed: deleteTime,
			wantPauses:  2,
		},
		{
			name: "no max: paused until deleted", expires: 5 * time.Minute,
			wantPhases:  []string{wire.PhaseRunning, wire.PhasePaused, wire.PhaseTerminating},
			wantReason:  "deleted by test",
			wantElapsed: deleteTime,
			wantPauses:  1,
		},
		{
			name: "paused, then deleted at the template's max", expires: 5 * time.Minute, max: 20 * time.Minute,
			wantPhases:  []string{wire.PhaseRunning, wire.PhasePaused, wire.PhaseTerminating},
			wantReason:  wire.ReasonExpired,
			wantElapsed: 20 * time.Minute,
			wantPauses:  1,
		},
		{
			name: "expiry is the max: deleted", expires: 5 * time.Minute, max: 5 * time.Minute,
			wantPhases:  []string{wire.PhaseRunning, wire.PhaseTerminating},
			wantReason:  wire.ReasonExpired,
			wantElapsed: 5 * time.Minute,
		},
		{
			name: "backend cannot pause: deleted", expires: 5 * time.Minute, pauseErr: cannot,
			wantPhases:  []string{wire.PhaseRunning, wire.PhaseTerminating},
			wantReason:  "expired; not paused: workspace ws-test: pause: the local backend cannot pause",
			wantElapsed: 5 * time.Minute,
			wantPauses:  1,
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
			env.OnActivity(a.CheckLifetime, mock.Anything, mock.Anything).Return(
				func(context.Context, activities.CheckLifetimeInput) (activities.CheckLifetimeOutput, error) {
					return activities.CheckLifetimeOutput{Lifetime: *row.get()}, nil
				})
			clock := clockProbes(env, f)
			start := env.Now()
			row.set(func(l *activities.Lifetime) {
				*l = activities.Lifetime{ExpiresAt: start.Add(tt.expires), ExpireAction: wire.ExpireActionPause}
				if tt.max > 0 {
					l.MaxExpiresAt = start.Add(tt.max)
				}
			})
			if tt.resumeAt > 0 {
				env.RegisterDelayedCallback(func() {
					row.set(func(l *activities.Lifetime) { l.ExpiresAt = start.Add(tt.resumeAt + 10*time.Minute) })
					env.SignalWorkflow(SignalResume, ResumeSignal{Reason: "resumed by test"})
				}, tt.resumeAt)
			}
			deleteAt(env, deleteTime, "deleted by test")
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
			if got := env.Now().Sub(start); got < tt.wantElapsed || got > tt.wantElapsed+time.Second {
				t.Errorf("ended after %s, want %s", got, tt.wantElapsed)
			}
			if len(s.pauses) != tt.wantPauses {
				t.Fatalf("Pause calls = %+v, want %d", s.pauses, tt.wantPauses)
			}
			for _, p := range s.pauses {
				if p.Reason != wire.ReasonExpired {
					t.Errorf("pause reason = %q, want %q", p.Reason, wire.ReasonExpired)
				}
			}
			if tt.wantPauses > 0 && tt.pauseErr == nil {
				// Paused at the expiry, then left alone: the passed
				// deadline neither deletes it nor wakes it to probe.
				if n := clock.between(6*time.Minute, min(tt.wantElapsed, max(tt.resumeAt, 20*time.Minute))); n != 0 {
					t.Errorf("%d probes while paused, want none", n)
				}
			}
			if tt.resumeAt > 0 {
				if len(s.resumes) != 1 {
					t.Errorf("Resume calls = %+v, want one", s.resumes)
				}
				if n := clock.between(tt.resumeAt, tt.resumeAt+10*time.Minute); n == 0 {
					t.Errorf("no probe between the resume and the fresh expiry")
				}
			}
		})
	}
}

// Before version vExpirePause an expire_action is not looked at: the
// workspace is deleted at its expiry, as it always was.
func TestExpirePauseOldVersion(t *testing.T) {
	f := &fakes{}
	row := &fakeRow{}
	f.lifetime = row.get
	env := newEnv(t, f)
	env.OnGetVersion(versionExpirePause, workflow.DefaultVersion, vExpirePause).Return(workflow.DefaultVersion)
	s := &snapFakes{}
	mockSnapshots(env, f, s)
	var a *activities.Activities
	env.OnActivity(a.CheckLifetime, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.CheckLifetimeInput) (activities.CheckLifetimeOutput, error) {
			return activities.CheckLifetimeOutput{Lifetime: *row.get()}, nil
		})
	start := env.Now()
	row.set(func(l *activities.Lifetime) {
		*l = activities.Lifetime{ExpiresAt: start.Add(5 * time.Minute), MaxExpiresAt: start.Add(time.Hour), ExpireAction: wire.ExpireActionPause}
	})
	deleteAt(env, 90*time.Minute, "deleted by test")
	env.ExecuteWorkflow(WorkspaceWorkflowName, testInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got, want := f.phaseList(), []string{wire.PhaseRunning, wire.PhaseTerminating}; !slices.Equal(got, want) {
		t.Fatalf("phases = %v, want %v", got, want)
	}
	if r := f.reasonOf(wire.PhaseTerminating, 0); r != wire.ReasonExpired {
		t.Errorf("terminating reason = %q, want expired", r)
	}
	if len(s.pauses) != 0 {
		t.Errorf("Pause calls = %+v, want none", s.pauses)
	}
}
