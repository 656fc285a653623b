package starter

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// A suite's schedule is a Temporal Schedule whose action starts the run
// workflow with only the suite's id: the run's first activity makes the
// run's row from the suite as it is then, so a schedule never has to
// change when the suite's cases do.

// ScheduleID returns the id of the Temporal Schedule of a suite.
func ScheduleID(suiteID string) string { return "suite-" + suiteID }

// ScheduleTriggeredBy is the TriggeredBy of the runs a suite's schedule
// starts.
func ScheduleTriggeredBy(suiteID string) string { return "schedule " + ScheduleID(suiteID) }

// scheduleTimeout bounds each call to the schedule API, so a Temporal that
// does not answer fails the request instead of hanging it.
const scheduleTimeout = 15 * time.Second

// overlapPolicies maps a document's overlap names to Temporal's.
var overlapPolicies = map[string]enumspb.ScheduleOverlapPolicy{
	"":                    enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
	eval.OverlapSkip:      enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
	eval.OverlapBufferOne: enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE,
	eval.OverlapAllowAll:  enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL,
}

// scheduleSpec returns the Temporal spec of a suite's schedule.
func scheduleSpec(sch *eval.Schedule) client.ScheduleSpec {
	spec := client.ScheduleSpec{TimeZoneName: sch.TimeZone}
	if sch.Cron != "" {
		spec.CronExpressions = []string{sch.Cron}
	}
	if sch.Interval > 0 {
		spec.Intervals = []client.ScheduleIntervalSpec{{Every: sch.Interval.D()}}
	}
	return spec
}

// scheduleAction is what every schedule of a suite does: start a run
// workflow with the suite's id, tagged with the suite's tenant. Temporal
// appends the due time to the id, so each run's workflow id is unique.
func scheduleAction(suiteID, tenantID string) *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		ID:                    "run-" + suiteID,
		Workflow:              workflows.RunWorkflowName,
		Args:                  []any{workflows.RunInput{SuiteID: suiteID, TriggeredBy: ScheduleTriggeredBy(suiteID)}},
		TaskQueue:             workflows.TaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.SearchAttrTenant.ValueSet(workflows.TenantOf(tenantID))),
	}
}

// suiteTenant is the tenant of a suite, for its schedule's runs; a suite
// without a row (not stored yet) is the default tenant's.
func (s *Starter) suiteTenant(ctx context.Context, suiteID string) (string, error) {
	if s.Store == nil {
		return wire.DefaultTenantID, nil
	}
	su, err := s.Store.GetSuite(ctx, suiteID)
	switch {
	case errs.Is(err, errs.NotFound):
		return wire.DefaultTenantID, nil
	case err != nil:
		return "", err
	}
	return workflows.TenantOf(su.TenantID), nil
}

// SyncSchedule makes the Temporal Schedule of a suite match sch: it is
// created when missing, updated when it exists, and deleted when sch is
// nil. The document's paused state is applied too: the suite document is
// the desired state. Errors: Invalid (field spec.schedule) when Temporal
// refuses the spec, Unavailable when it cannot be reached.
func (s *Starter) SyncSchedule(ctx context.Context, suiteID string, sch *eval.Schedule) error {
	ctx, cancel := context.WithTimeout(ctx, scheduleTimeout)
	defer cancel()
	sc := s.Temporal.ScheduleClient()
	id := ScheduleID(suiteID)
	if sch == nil {
		err := sc.GetHandle(ctx, id).Delete(ctx)
		if err == nil {
			s.logger().Info("schedule deleted", "suite_id", suiteID, "schedule_id", id)
		}
		if err != nil && !isNotFound(err) {
			return scheduleError(suiteID, "delete", err)
		}
		return nil
	}
	overlap := overlapPolicies[sch.Overlap]
	tenant, err := s.suiteTenant(ctx, suiteID)
	if err != nil {
		return err
	}
	_, err = sc.Create(ctx, client.ScheduleOptions{
		ID:      id,
		Spec:    scheduleSpec(sch),
		Action:  scheduleAction(suiteID, tenant),
		Overlap: overlap,
		Paused:  sch.Paused,
		Note:    pausedNote(sch.Paused),
	})
	if err == nil {
		s.logger().Info("schedule created", "suite_id", suiteID, "schedule_id", id)
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return scheduleError(suiteID, "create", err)
	}
	err = sc.GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sched := in.Description.Schedule
			spec := scheduleSpec(sch)
			sched.Spec = &spec
			sched.Action = scheduleAction(suiteID, tenant)
			if sched.Policy == nil {
				sched.Policy = &client.SchedulePolicies{}
			}
			sched.Policy.Overlap = overlap
			if sched.State == nil {
				sched.State = &client.ScheduleState{}
			}
			if sched.State.Paused != sch.Paused {
				sched.State.Note = pausedNote(sch.Paused)
			}
			sched.State.Paused = sch.Paused
			return &client.ScheduleUpdate{Schedule: &sched}, nil
		},
	})
	if err != nil {
		return scheduleError(suiteID, "update", err)
	}
	s.logger().Info("schedule updated", "suite_id", suiteID, "schedule_id", id)
	return nil
}

// pausedNote is the note of a schedule paused or resumed by its document.
func pausedNote(paused bool) string {
	if paused {
		return "paused by the suite document"
	}
	return ""
}

// DeleteSchedule deletes a suite's schedule; a suite without one is fine.
func (s *Starter) DeleteSchedule(ctx context.Context, suiteID string) error {
	return s.SyncSchedule(ctx, suiteID, nil)
}

// PauseSchedule stops a suite's schedule from starting runs until resumed.
// Precondition if the suite has no schedule.
func (s *Starter) PauseSchedule(ctx context.Context, suiteID, note string) error {
	return s.onSchedule(ctx, suiteID, "pause", func(ctx context.Context, h client.ScheduleHandle) error {
		return h.Pause(ctx, client.SchedulePauseOptions{Note: note})
	})
}

// ResumeSchedule lets a paused schedule start runs again.
func (s *Starter) ResumeSchedule(ctx context.Context, suiteID, note string) error {
	return s.onSchedule(ctx, suiteID, "resume", func(ctx context.Context, h client.ScheduleHandle) error {
		return h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: note})
	})
}

// TriggerSchedule makes a suite's schedule start a run now, whether paused
// or not, under its overlap policy.
func (s *Starter) TriggerSchedule(ctx context.Context, suiteID string) error {
	return s.onSchedule(ctx, suiteID, "trigger", func(ctx context.Context, h client.ScheduleHandle) error {
		return h.Trigger(ctx, client.ScheduleTriggerOptions{})
	})
}

// DescribeSchedule returns the state of a suite's schedule; Precondition
// if the suite has none.
func (s *Starter) DescribeSchedule(ctx context.Context, suiteID string) (*wire.ScheduleStatus, error) {
	var st *wire.ScheduleStatus
	err := s.onSchedule(ctx, suiteID, "describe", func(ctx context.Context, h client.ScheduleHandle) error {
		d, err := h.Describe(ctx)
		if err != nil {
			return err
		}
		st = scheduleStatus(h.GetID(), d)
		return nil
	})
	return st, err
}

// scheduleStatus is the small view of a schedule's description.
func scheduleStatus(id string, d *client.ScheduleDescription) *wire.ScheduleStatus {
	st := &wire.ScheduleStatus{
		ID:               id,
		NumActions:       d.Info.NumActions,
		NextRunTimes:     append([]time.Time{}, d.Info.NextActionTimes...),
		RecentRuns:       []wire.ScheduledRun{},
		RunningWorkflows: []string{},
	}
	if d.Schedule.State != nil {
		st.Paused, st.Note = d.Schedule.State.Paused, d.Schedule.State.Note
	}
	if st.Paused {
		st.NextRunTimes = []time.Time{}
	}
	for _, a := range d.Info.RecentActions {
		r := wire.ScheduledRun{ScheduledAt: a.ScheduleTime, StartedAt: a.ActualTime}
		if a.StartWorkflowResult != nil {
			r.WorkflowID = a.StartWorkflowResult.WorkflowID
		}
		st.RecentRuns = append(st.RecentRuns, r)
	}
	for _, w := range d.Info.RunningWorkflows {
		st.RunningWorkflows = append(st.RunningWorkflows, w.WorkflowID)
	}
	return st
}

// onSchedule runs fn on the handle of a suite's schedule, with the
// schedule call timeout and the errors mapped to errs kinds.
func (s *Starter) onSchedule(ctx context.Context, suiteID, op string, fn func(context.Context, client.ScheduleHandle) error) error {
	ctx, cancel := context.WithTimeout(ctx, scheduleTimeout)
	defer cancel()
	h := s.Temporal.ScheduleClient().GetHandle(ctx, ScheduleID(suiteID))
	if err := fn(ctx, h); err != nil {
		if isNotFound(err) {
			return errs.E(errs.Precondition, "suite %s has no schedule", suiteID)
		}
		return scheduleError(suiteID, op, err)
	}
	if op != "describe" {
		s.logger().Info("schedule "+op, "suite_id", suiteID, "schedule_id", ScheduleID(suiteID))
	}
	return nil
}

// isNotFound reports whether Temporal said the schedule does not exist.
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// scheduleError gives a schedule API failure its errs kind: a spec Temporal
// refuses is bad input; anything else means Temporal is not usable now.
func scheduleError(suiteID, op string, err error) error {
	var inv *serviceerror.InvalidArgument
	if errors.As(err, &inv) {
		return errs.Field("spec.schedule", "spec.schedule: suite %s: %s schedule: %s", suiteID, op, inv.Message)
	}
	return errs.E(errs.Unavailable, "suite %s: %s schedule: %w", suiteID, op, err)
}
