package api

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// fakeSchedules is an in-memory Temporal schedule client: enough of
// Create, Update, Describe, Pause, Unpause, Trigger and Delete for the API
// tests to see what the Starter asked for. e2e/suite_schedule_test.go runs
// the same calls against a real server.
type fakeSchedules struct {
	mu     sync.Mutex
	byID   map[string]*fakeSchedule
	fail   error // when set, every call but Describe fails with it
	failDe error // when set, Describe fails with it
}

// fakeSchedule is one schedule's state.
type fakeSchedule struct {
	opts     client.ScheduleOptions
	paused   bool
	note     string
	triggers int
}

var _ client.ScheduleClient = (*fakeSchedules)(nil)

func newFakeSchedules() *fakeSchedules {
	return &fakeSchedules{byID: map[string]*fakeSchedule{}}
}

// get returns a copy of a schedule's state, nil if it does not exist.
func (f *fakeSchedules) get(id string) *fakeSchedule {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.byID[id]
	if !ok {
		return nil
	}
	c := *s
	return &c
}

func (f *fakeSchedules) setFail(err, describe error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail, f.failDe = err, describe
}

func (f *fakeSchedules) Create(_ context.Context, o client.ScheduleOptions) (client.ScheduleHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	if _, ok := f.byID[o.ID]; ok {
		return nil, temporal.ErrScheduleAlreadyRunning
	}
	f.byID[o.ID] = &fakeSchedule{opts: o, paused: o.Paused, note: o.Note}
	return &fakeHandle{f: f, id: o.ID}, nil
}

func (f *fakeSchedules) List(context.Context, client.ScheduleListOptions) (client.ScheduleListIterator, error) {
	return nil, errors.New("fake schedules: list not supported")
}

func (f *fakeSchedules) GetHandle(_ context.Context, id string) client.ScheduleHandle {
	return &fakeHandle{f: f, id: id}
}

// fakeHandle is a handle of one schedule of a fakeSchedules.
type fakeHandle struct {
	f  *fakeSchedules
	id string
}

// with runs fn on the schedule under the lock, or fails as Temporal does.
func (h *fakeHandle) with(describe bool, fn func(s *fakeSchedule) error) error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if describe && h.f.failDe != nil {
		return h.f.failDe
	}
	if !describe && h.f.fail != nil {
		return h.f.fail
	}
	s, ok := h.f.byID[h.id]
	if !ok {
		return serviceerror.NewNotFound("schedule not found")
	}
	return fn(s)
}

func (h *fakeHandle) GetID() string { return h.id }

func (h *fakeHandle) Delete(context.Context) error {
	return h.with(false, func(*fakeSchedule) error {
		delete(h.f.byID, h.id)
		return nil
	})
}

func (h *fakeHandle) Backfill(context.Context, client.ScheduleBackfillOptions) error {
	return errors.New("fake schedules: backfill not supported")
}

func (h *fakeHandle) Update(_ context.Context, o client.ScheduleUpdateOptions) error {
	return h.with(false, func(s *fakeSchedule) error {
		spec := s.opts.Spec
		up, err := o.DoUpdate(client.ScheduleUpdateInput{Description: client.ScheduleDescription{Schedule: client.Schedule{
			Action: s.opts.Action,
			Spec:   &spec,
			Policy: &client.SchedulePolicies{Overlap: s.opts.Overlap},
			State:  &client.ScheduleState{Paused: s.paused, Note: s.note},
		}}})
		if err != nil {
			return err
		}
		s.opts.Action, s.opts.Spec, s.opts.Overlap = up.Schedule.Action, *up.Schedule.Spec, up.Schedule.Policy.Overlap
		s.paused, s.note = up.Schedule.State.Paused, up.Schedule.State.Note
		return nil
	})
}

func (h *fakeHandle) Describe(context.Context) (*client.ScheduleDescription, error) {
	var d *client.ScheduleDescription
	err := h.with(true, func(s *fakeSchedule) error {
		spec := s.opts.Spec
		d = &client.ScheduleDescription{
			Schedule: client.Schedule{Action: s.opts.Action, Spec: &spec,
				Policy: &client.SchedulePolicies{Overlap: s.opts.Overlap},
				State:  &client.ScheduleState{Paused: s.paused, Note: s.note}},
			Info: client.ScheduleInfo{NumActions: s.triggers},
		}
		if !s.paused {
			d.Info.NextActionTimes = []time.Time{time.Date(2030, 1, 1, 3, 0, 0, 0, time.UTC)}
		}
		for i := 0; i < s.triggers; i++ {
			d.Info.RecentActions = append(d.Info.RecentActions, client.ScheduleActionResult{
				StartWorkflowResult: &client.ScheduleWorkflowExecution{WorkflowID: "run-" + h.id},
			})
		}
		return nil
	})
	return d, err
}

func (h *fakeHandle) Trigger(context.Context, client.ScheduleTriggerOptions) error {
	return h.with(false, func(s *fakeSchedule) error {
		s.triggers++
		return nil
	})
}

func (h *fakeHandle) Pause(_ context.Context, o client.SchedulePauseOptions) error {
	return h.with(false, func(s *fakeSchedule) error {
		s.paused, s.note = true, o.Note
		return nil
	})
}

func (h *fakeHandle) Unpause(_ context.Context, o client.ScheduleUnpauseOptions) error {
	return h.with(false, func(s *fakeSchedule) error {
		s.paused, s.note = false, o.Note
		return nil
	})
}
