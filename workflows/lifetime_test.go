package workflows

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/wire"
)

// fakeRow is a workspace row's lifetime deadlines as the fakes read them;
// a test moves them (an extend, an exec) with a delayed callback.
type fakeRow struct {
	mu sync.Mutex
	l  activities.Lifetime
	// expired counts ExpireLease calls.
	expired int
}

func (r *fakeRow) get() *activities.Lifetime {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.l
	return &l
}

func (r *fakeRow) set(fn func(l *activities.Lifetime)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(&r.l)
}

// TestWorkspaceLifetime runs the lifetime deadlines with a skipped clock:
// the workflow wakes at the nearest deadline (not the next probe), reads
// the deadlines again, and deletes the workspace (expired, idle) or takes
// its lease back; a deadline moved meanwhile (an extend, an exec) is
// honoured.
func TestWorkspaceLifetime(t *testing.T) {
	const deleteAt = 30 * time.Minute
	tests := []struct {
		name   string
		poolID string
		// at returns the row's deadlines from the workflow's start.
		at func(start time.Time) activities.Lifetime
		// move, when set, runs at moveAt and changes the deadlines.
		moveAt time.Duration
		move   func(start time.Time, l *activities.Lifetime)

		wantReason  string        // reason of the delete
		wantElapsed time.Duration // workflow time when it ended
		wantEvent   string        // an event recorded with reason wantEventReason
		wantResets  int
		wantExpired int // ExpireLease calls
	}{
		{
			name: "max: deleted expired at the deadline, between probes",
			at: func(s time.Time) activities.Lifetime {
				return activities.Lifetime{ExpiresAt: s.Add(10*time.Minute + 7*time.Second)}
			},
			wantReason:  wire.ReasonExpired,
			wantElapsed: 10*time.Minute + 7*time.Second,
			wantEvent:   wire.EventExpired,
		},
		{
			name: "idle: deleted idle",
			at: func(s time.Time) activities.Lifetime {
				return activities.Lifetime{IdleDeadline: s.Add(5 * time.Minute)}
			},
			wantReason:  wire.ReasonIdle,
			wantElapsed: 5 * time.Minute,
			wantEvent:   wire.EventExpired,
		},
		{
			name: "idle: activity moves the deadline",
			at: func(s time.Time) activities.Lifetime {
				return activities.Lifetime{IdleDeadline: s.Add(5 * time.Minute)}
			},
			moveAt: 4*time.Minute + 50*time.Second,
			move: func(s time.Time, l *activities.Lifetime) {
				l.IdleDeadline = s.Add(9 * time.Minute)
			},
			wantReason:  wire.ReasonIdle,
			wantElapsed: 9 * time.Minute,
			wantEvent:   wire.EventExpired,
		},
		{
			name: "extend: the later deadline holds",
			at:   func(s time.Time) activities.Lifetime { return activities.Lifetime{ExpiresAt: s.Add(5 * time.Minute)} },
			// After the last probe before the old deadline: the workflow
			// still wakes at it, reads the new one and goes on.
			moveAt: 4*time.Minute + 45*time.Second,
			move: func(s time.Time, l *activities.Lifetime) {
				l.ExpiresAt = s.Add(20 * time.Minute)
			},
			wantReason:  wire.ReasonExpired,
			wantElapsed: 20 * time.Minute,
			wantEvent:   wire.EventExpired,
		},
		{
			name: "expired wins over idle",
			at: func(s time.Time) activities.Lifetime {
				return activities.Lifetime{ExpiresAt: s.Add(time.Minute), IdleDeadline: s.Add(time.Minute)}
			},
			wantReason:  wire.ReasonExpired,
			wantElapsed: time.Minute,
			wantEvent:   wire.EventExpired,
		},
		{
			name:   "lease of a pool member: taken back, reset, kept",
			poolID: "warm",
			at: func(s time.Time) activities.Lifetime {
				return activities.Lifetime{LeaseExpiresAt: s.Add(3 * time.Minute)}
			},
			wantReason:  "deleted by test",
			wantElapsed: deleteAt,
			wantResets:  1,
			wantExpired: 1,
		},
		{
			name: "cold lease: deleted lease_expired",
			at: func(s time.Time) activities.Lifetime {
				return activities.Lifetime{LeaseExpiresAt: s.Add(3 * time.Minute)}
			},
			wantReason:  wire.ReasonLeaseExpired,
			wantElapsed: 3 * time.Minute,
			wantExpired: 1,
		},
		{
			name:   "resting pool member never expires",
			poolID: "warm",
			at: func(s time.Time) activities.Lifetime {
				return activities.Lifetime{ExpiresAt: s.Add(time.Minute), IdleDeadline: s.Add(time.Minute), Resting: true}
			},
			wantReason:  "deleted by test",
			wantElapsed: deleteAt,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakes{}
			row := &fakeRow{}
			f.lifetime = row.get
			env := newEnv(t, f)
			var a *activities.Activities
			env.OnActivity(a.CheckLifetime, mock.Anything, mock.Anything).Return(
				func(context.Context, activities.CheckLifetimeInput) (activities.CheckLifetimeOutput, error) {
					return activities.CheckLifetimeOutput{Lifetime: *row.get()}, nil
				})
			env.OnActivity(a.ExpireLease, mock.Anything, mock.Anything).Return(
				func(context.Context, activities.ExpireLeaseInput) (activities.ExpireLeaseOutput, error) {
					row.set(func(l *activities.Lifetime) {
						row.expired++
						if tt.poolID != "" {
							*l = activities.Lifetime{Resting: true}
						}
					})
					return activities.ExpireLeaseOutput{TakenBack: true, PoolID: tt.poolID}, nil
				})
			start := env.Now()
			row.set(func(l *activities.Lifetime) { *l = tt.at(start) })
			if tt.move != nil {
				env.RegisterDelayedCallback(func() { row.set(func(l *activities.Lifetime) { tt.move(start, l) }) }, tt.moveAt)
			}
			env.RegisterDelayedCallback(func() {
				env.SignalWorkflow(SignalDelete, DeleteSignal{Reason: "deleted by test"})
			}, deleteAt)

			in := testInput()
			in.PoolID = tt.poolID
			env.ExecuteWorkflow(WorkspaceWorkflowName, in)
			if err := env.GetWorkflowError(); err != nil {
				t.Fatalf("workflow error: %v", err)
			}
			if got := env.Now().Sub(start); got < tt.wantElapsed || got > tt.wantElapsed+time.Second {
				t.Errorf("ended after %s, want %s", got, tt.wantElapsed)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			last := f.phases[len(f.phases)-1]
			if last.To != wire.PhaseTerminating || last.Reason != tt.wantReason {
				t.Errorf("last phase %s (%q), want terminating (%q)", last.To, last.Reason, tt.wantReason)
			}
			if len(f.destroys) != 1 {
				t.Errorf("destroys = %d, want 1", len(f.destroys))
			}
			if tt.wantEvent != "" {
				found := false
				for _, e := range f.events {
					if e.Type == tt.wantEvent && e.Data["reason"] == tt.wantReason {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s event with reason %s in %+v", tt.wantEvent, tt.wantReason, f.events)
				}
			}
			if f.resets != tt.wantResets {
				t.Errorf("resets = %d, want %d", f.resets, tt.wantResets)
			}
			if row.expired != tt.wantExpired {
				t.Errorf("ExpireLease calls = %d, want %d", row.expired, tt.wantExpired)
			}
		})
	}
}
