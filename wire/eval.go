package wire

import (
	"encoding/json"
	"time"
)

// Run statuses.
const (
	RunPending   = "pending"   // stored; its workflow has not begun
	RunRunning   = "running"   // cases are being executed
	RunSucceeded = "succeeded" // every selected case has a final result
	RunCanceled  = "canceled"  // canceled; cases not finished are canceled
	RunFailed    = "failed"    // the run itself could not go on (its suite's pool or template is gone)
)

// Case result statuses.
const (
	CasePending  = "pending"  // not begun
	CaseRunning  = "running"  // an attempt is executing
	CaseDone     = "done"     // final: Verdict is set
	CaseCanceled = "canceled" // the run was canceled before the case finished
)

// Run triggers.
const (
	TriggerUser     = "user"
	TriggerSchedule = "schedule"
)

// Suite is an eval suite: where its cases run, how many at once, its
// defaults and schedule (Spec, an eval.SuiteSpec without its cases, as
// JSON) and how many cases it has (SuiteCase rows).
type Suite struct {
	ID string `gorm:"primaryKey;size:128" json:"id"`
	// TenantID is the tenant the suite belongs to (tenant.go); rows made before
	// tenants existed belong to DefaultTenantID.
	TenantID    string          `gorm:"size:64;not null;default:'default';index" json:"tenant_id"`
	Description string          `json:"description,omitempty"`
	TemplateID  string          `gorm:"size:128;not null;default:'';index" json:"template_id,omitempty"`
	PoolID      string          `gorm:"size:128;not null;default:'';index" json:"pool_id,omitempty"`
	Spec        json.RawMessage `gorm:"serializer:json;type:text" json:"spec"`
	CaseCount   int             `gorm:"not null;default:0" json:"case_count"`
	// AdminWritten is true when an admin made the suite's last write: only
	// then may its runs make (or lease) workspaces on a host backend, or of
	// another tenant's template or pool (Run.ByAdmin carries it).
	AdminWritten bool      `gorm:"not null;default:false" json:"-"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// SuiteCase is one case of a suite, in the suite's order (Ordinal from 0).
// Spec is the eval.Case as JSON.
type SuiteCase struct {
	SuiteID string            `gorm:"primaryKey;size:128;uniqueIndex:idx_suite_cases_case,priority:1" json:"suite_id"`
	Ordinal int               `gorm:"primaryKey;autoIncrement:false" json:"ordinal"`
	CaseID  string            `gorm:"size:128;not null;uniqueIndex:idx_suite_cases_case,priority:2" json:"case_id"`
	Labels  map[string]string `gorm:"serializer:json;type:text" json:"labels,omitempty"`
	Spec    json.RawMessage   `gorm:"serializer:json;type:text" json:"spec"`
}

// Run is one run of a suite: one Temporal workflow whose id is the run's
// id. Spec is the suite's spec (without cases) as it was when the run
// was made; its cases are the CaseResult rows made with it.
type Run struct {
	ID string `gorm:"primaryKey;size:200" json:"id"`
	// TenantID is the tenant the run belongs to (tenant.go); rows made before
	// tenants existed belong to DefaultTenantID.
	TenantID string `gorm:"size:64;not null;default:'default';index" json:"tenant_id"`
	SuiteID  string `gorm:"size:128;not null;index" json:"suite_id"`
	Status   string `gorm:"size:16;not null;index" json:"status"`
	Reason   string `json:"reason,omitempty"`
	// Trigger is TriggerUser or TriggerSchedule; TriggeredBy names who
	// (a user name, the schedule's id).
	Trigger     string          `gorm:"size:16;not null;default:''" json:"trigger"`
	TriggeredBy string          `gorm:"size:200;not null;default:''" json:"triggered_by,omitempty"`
	Spec        json.RawMessage `gorm:"serializer:json;type:text" json:"-"`
	// ByAdmin is the suite's AdminWritten when the run was made: its
	// workspaces carry it (Workspace.ByAdmin).
	ByAdmin bool `gorm:"not null;default:false" json:"-"`
	// Selection is the eval.Selection the run was made with, as JSON.
	Selection  json.RawMessage `gorm:"serializer:json;type:text" json:"selection,omitempty"`
	Total      int             `gorm:"not null;default:0" json:"total"`
	WorkflowID string          `gorm:"size:200" json:"workflow_id"`
	CreatedAt  time.Time       `gorm:"index" json:"created_at"`
	StartedAt  *time.Time      `json:"started_at,omitempty"`
	EndedAt    *time.Time      `json:"ended_at,omitempty"`
}

// CaseResult is one case of a run: made pending with the run, final once
// Status is CaseDone. Spec is the case as it runs (the suite's defaults
// applied: an eval.Case as JSON). Attempts and Artifacts are
// []eval.Attempt and []eval.Artifact as JSON.
type CaseResult struct {
	RunID   string            `gorm:"primaryKey;size:200;index:idx_case_results_run_status,priority:1" json:"run_id"`
	Ordinal int               `gorm:"primaryKey;autoIncrement:false" json:"ordinal"`
	CaseID  string            `gorm:"size:128;not null" json:"case_id"`
	Labels  map[string]string `gorm:"serializer:json;type:text" json:"labels,omitempty"`
	Spec    json.RawMessage   `gorm:"serializer:json;type:text" json:"-"`
	Status  string            `gorm:"size:16;not null;index:idx_case_results_run_status,priority:2" json:"status"`
	Verdict string            `gorm:"size:16;not null;default:''" json:"verdict,omitempty"`
	Reason  string            `json:"reason,omitempty"`
	// ExitCode is the command's exit code on the final attempt, when it ran.
	ExitCode *int `json:"exit_code,omitempty"`
	// DurationMS is the final attempt's case time (files, setup, command,
	// checks, collecting); CommandMS the command's own.
	DurationMS int64              `gorm:"not null;default:0" json:"duration_ms"`
	CommandMS  int64              `gorm:"not null;default:0" json:"command_ms"`
	Stdout     string             `json:"stdout,omitempty"` // the last eval.TailBytes
	Stderr     string             `json:"stderr,omitempty"` // the last eval.TailBytes
	Score      *float64           `json:"score,omitempty"`
	Metrics    map[string]float64 `gorm:"serializer:json;type:text" json:"metrics,omitempty"`
	Artifacts  json.RawMessage    `gorm:"serializer:json;type:text" json:"artifacts,omitempty"`
	Attempts   json.RawMessage    `gorm:"serializer:json;type:text" json:"attempts,omitempty"`
	StartedAt  *time.Time         `json:"started_at,omitempty"`
	EndedAt    *time.Time         `json:"ended_at,omitempty"`
}
