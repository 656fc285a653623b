package wire

import "time"

// RunRequest is the body of POST /v1/suites/{id}/runs: which cases (by id
// or label), and who asked.
type RunRequest struct {
	Cases       []string          `json:"cases,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	TriggeredBy string            `json:"triggered_by,omitempty"`
}

// Progress is a run's live summary.
type Progress struct {
	Total    int `json:"total"`
	Pending  int `json:"pending"`
	Running  int `json:"running"`
	Pass     int `json:"pass"`
	Fail     int `json:"fail"`
	Error    int `json:"error"`
	Canceled int `json:"canceled"`
	// PassRate is pass / (pass+fail+error), 0 when none is final.
	PassRate float64 `json:"pass_rate"`
	// MeanScore is the mean of the final cases' scores, nil when none has one.
	MeanScore *float64 `json:"mean_score,omitempty"`
	// DurationP50MS and DurationP95MS are over the final cases' durations.
	DurationP50MS int64 `json:"duration_p50_ms"`
	DurationP95MS int64 `json:"duration_p95_ms"`
}

// Final reports whether the run has ended (succeeded, canceled or failed).
func (r *Run) Final() bool {
	return r.Status == RunSucceeded || r.Status == RunCanceled || r.Status == RunFailed
}

// RunView is a run as the API shows it: the row and its progress.
type RunView struct {
	Run
	Progress Progress `json:"progress"`
}

// SuiteView is a suite as the API shows it: the row and, for a scheduled
// suite, its schedule as Temporal reports it (or why that failed).
type SuiteView struct {
	Suite
	ScheduleStatus *ScheduleStatus `json:"schedule_status,omitempty"`
	ScheduleError  string          `json:"schedule_error,omitempty"`
}

// ScheduleStatus is a suite's schedule as Temporal reports it.
type ScheduleStatus struct {
	ID     string `json:"id"`
	Paused bool   `json:"paused"`
	// Note says why it is paused (who paused it, or pause on failure).
	Note string `json:"note,omitempty"`
	// NumActions counts the runs it has started (triggers included).
	NumActions int `json:"num_actions"`
	// NextRunTimes are the next times a run is due; none while paused
	// (Temporal lists them anyway, but no run starts at them).
	NextRunTimes []time.Time `json:"next_run_times"`
	// RecentRuns are the last runs it started, oldest first.
	RecentRuns []ScheduledRun `json:"recent_runs"`
	// RunningWorkflows are the ids of the run workflows it started that
	// still run.
	RunningWorkflows []string `json:"running_workflows"`
}

// ScheduledRun is one run a schedule started.
type ScheduledRun struct {
	// ScheduledAt is when it was due; StartedAt when it was started.
	ScheduledAt time.Time `json:"scheduled_at"`
	StartedAt   time.Time `json:"started_at"`
	// WorkflowID is the run workflow's id, which is also the run's id.
	WorkflowID string `json:"workflow_id"`
}
