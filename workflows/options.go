// Package workflows holds Primer's deterministic workflow code: one durable
// WorkspaceWorkflow per workspace that provisions it, probes its runtime on
// a timer, moves it between phases, and destroys it on delete or
// cancellation. All I/O happens in the activities package.
//
// Versioning rule: once a history has been recorded by a released build,
// any change to the sequence of commands the workflow issues (activities,
// local activities, timers, search attribute upserts, continue-as-new) must
// be guarded with workflow.GetVersion(ctx, "<change-id>", workflow.DefaultVersion, 1)
// so workflows already running replay the old path. Record a new history in
// testdata (PRIMER_RECORD_HISTORY=1) for every new version; the replay test
// keeps the old ones passing. WorkspaceWorkflow's versions are listed by
// versionRecovery in workspace.go.
package workflows

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/activities/agentrun"
	"github.com/primerhq/primer/activities/evalrun"
	"github.com/primerhq/primer/wire"
)

// Names shared by the worker, the API and the workflow.
const (
	// TaskQueue is the task queue of workspace workflows and their activities.
	TaskQueue = "primer-workspaces"
	// WorkspaceWorkflowName is the registered name of WorkspaceWorkflow.
	WorkspaceWorkflowName = "WorkspaceWorkflow"
	// SignalDelete asks a workspace workflow to destroy its workspace; its
	// payload is a DeleteSignal.
	SignalDelete = "delete"
	// SignalRecover asks an escalated (or failed) workspace to try a
	// replacement now; its payload is a RecoverSignal.
	SignalRecover = "recover"
	// SignalReturn gives a leased pool workspace back: it is reset and
	// returns to its pool, or is replaced. Its payload is a ReturnSignal.
	SignalReturn = "return"
	// SignalLiveness is the worker's Prober telling a workspace workflow
	// that its watched workspace's state must change; its payload is an
	// activities.LivenessSignal (liveness.go).
	SignalLiveness = activities.LivenessSignalName
	// SignalSnapshot asks a workspace workflow to capture its sandbox into
	// the snapshot row the API made (phase creating); its payload is a
	// SnapshotSignal. A fork sends it too, for its implicit snapshot.
	SignalSnapshot = "snapshot"
	// SignalPause stops a running workspace's compute (phase paused);
	// its payload is a PauseSignal.
	SignalPause = "pause"
	// SignalResume brings a paused workspace back to running; its payload
	// is a ResumeSignal.
	SignalResume = "resume"
	// QueryState returns the workflow's WorkspaceState.
	QueryState = "state"
)

// Lifecycle tuning. They are constants, not settings: changing one changes
// what running workflows do, so it needs a workflow.GetVersion guard.
const (
	// DefaultProbeInterval is used when WorkspaceInput.ProbeInterval is zero.
	DefaultProbeInterval = 30 * time.Second
	// MissesToFail is how many consecutive probe misses move a running (or
	// still pending) workspace to failed.
	MissesToFail = 3
	// HitsToRecover is how many consecutive probe hits move a failed
	// workspace back to running.
	HitsToRecover = 3
	// BackstopProbes is how many probe intervals a workflow whose workspace
	// the worker's Prober watches sleeps before it probes (and renews the
	// watch) itself (version vLiveness): it bounds how long a workspace
	// goes unwatched after its worker died.
	BackstopProbes = 10
	// ProbesPerRun bounds the probes in one workflow run before it continues
	// as new, keeping each run's history small (about 6 events per probe).
	ProbesPerRun = 200
	// DestroyRoundsPerRun bounds the destroy rounds of a delete that keeps
	// failing (an engine that is down) before the run continues as new.
	DestroyRoundsPerRun = 100
)

// Custom search attributes (Keyword) the workflow keeps current so the
// Temporal UI can filter workspaces.
// They are never reassigned.
var (
	// SearchAttrPhase is the workspace's phase, upserted on every change.
	SearchAttrPhase = temporal.NewSearchAttributeKeyKeyword("PrimerPhase")
	// SearchAttrTemplate is the template the workspace was made from.
	SearchAttrTemplate = temporal.NewSearchAttributeKeyKeyword("PrimerTemplate")
	// SearchAttrProvider is the workspace's provider id.
	SearchAttrProvider = temporal.NewSearchAttributeKeyKeyword("PrimerProvider")
	// SearchAttrBackend is the workspace's backend type.
	SearchAttrBackend = temporal.NewSearchAttributeKeyKeyword("PrimerBackend")
	// SearchAttrTenant is the tenant of a workspace, pool or run workflow,
	// set when it starts (a tenant never changes).
	SearchAttrTenant = temporal.NewSearchAttributeKeyKeyword("PrimerTenant")
)

// SearchAttributes returns the custom search attributes to register on the
// namespace, by name.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		SearchAttrPhase.GetName():    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrTemplate.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrProvider.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrBackend.GetName():  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrTenant.GetName():   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrSuite:              enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrRun:                enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// WorkflowID returns the id of a workspace's workflow.
func WorkflowID(workspaceID string) string { return "workspace-" + workspaceID }

// StartOptions returns the options the API starts a workspace's workflow
// with. Starting it again while it runs returns the running one, so a
// retried create is harmless; once it has closed the id is never reused,
// because a destroyed workspace does not come back.
func StartOptions(in WorkspaceInput) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       WorkflowID(in.WorkspaceID),
		TaskQueue:                TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			SearchAttrPhase.ValueSet(wire.PhasePending),
			SearchAttrTemplate.ValueSet(in.TemplateID),
			SearchAttrProvider.ValueSet(in.ProviderID),
			SearchAttrBackend.ValueSet(in.Backend),
			SearchAttrTenant.ValueSet(TenantOf(in.TenantID)),
		),
	}
}

// TenantOf is the PrimerTenant value of a resource of tenantID: rows with
// no tenant belong to the default one.
func TenantOf(tenantID string) string {
	if tenantID == "" {
		return wire.DefaultTenantID
	}
	return tenantID
}

// Register registers Primer's workflows (workspace, pool, reconciler, eval
// run, session run, by their names) and their activities on w: a's for the
// workspace, pool and reconciler workflows, e's for eval runs and g's for
// agent runs. Temporal names each activity by its method name, which
// history records, so the three structs' method names never clash. A nil
// e or g registers an empty struct (tests that mock those activities).
func Register(w worker.Registry, a *activities.Activities, e *evalrun.Activities, g *agentrun.Activities) {
	if e == nil {
		e = &evalrun.Activities{}
	}
	if g == nil {
		g = &agentrun.Activities{}
	}
	w.RegisterWorkflowWithOptions(WorkspaceWorkflow, workflow.RegisterOptions{Name: WorkspaceWorkflowName})
	w.RegisterWorkflowWithOptions(PoolWorkflow, workflow.RegisterOptions{Name: PoolWorkflowName})
	w.RegisterWorkflowWithOptions(ReconcilerWorkflow, workflow.RegisterOptions{Name: ReconcilerWorkflowName})
	w.RegisterWorkflowWithOptions(RunWorkflow, workflow.RegisterOptions{Name: RunWorkflowName})
	w.RegisterWorkflowWithOptions(SessionRunWorkflow, workflow.RegisterOptions{Name: SessionRunWorkflowName})
	w.RegisterActivity(a)
	w.RegisterActivity(e)
	w.RegisterActivity(g)
}

// heartbeatTimeout is how soon the server retries a long activity whose
// worker died (kill -9 of primer serve): the activities heartbeat four
// times in it while they run.
const heartbeatTimeout = 20 * time.Second

// Activity options. Probe, SetPhase and RecordEvent are local activities:
// they are cheap and frequent, and a local activity costs one marker event
// instead of three events and two round trips through the server, which is
// what lets one embedded SQLite Temporal hold 1,000 workspaces probed every
// 30 s.
var (
	provisionOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         backoff(time.Minute, 5),
	}
	destroyOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         backoff(time.Minute, 10),
	}
	// destroyRoundOptions are one round of a delete in version 1: a few
	// quick tries, then the workflow says why in the reason and tries again
	// on its own timer, for as long as it takes.
	destroyRoundOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         backoff(5*time.Second, 3),
	}
	// cleanupOptions clean up after a failed provisioning: a few tries, and
	// the final destroy on delete tries again anyway.
	cleanupOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         backoff(10*time.Second, 3),
	}
	// resetOptions reset a returned pool workspace: one retry, then the
	// workspace is replaced instead.
	resetOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second,
			MaximumAttempts: 2,
		},
	}
	// webhookOptions deliver an escalation: a receiver that is down gets a
	// few minutes of retries; after that the escalation stays visible in
	// the phase and the events.
	webhookOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         backoff(time.Minute, 6),
	}
	// probeOptions: a probe is never retried; a miss is a result and the
	// next probe is the retry. The activity bounds its ping at 5 s.
	probeOptions = workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 15 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	}
	// recordOptions retry database writes for a while: a phase that never
	// reaches the database would leave the API refusing or allowing the
	// wrong calls.
	recordOptions = workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 5 * time.Minute,
		StartToCloseTimeout:    10 * time.Second,
		RetryPolicy:            backoff(30*time.Second, 0),
	}
)

// backoff retries from a second, doubling up to maxInterval, at most
// attempts times (0: without limit).
func backoff(maxInterval time.Duration, attempts int32) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    maxInterval,
		MaximumAttempts:    attempts,
	}
}

// SnapshotSignal is the payload of SignalSnapshot: the snapshot row the API
// made (phase creating) and its mode.
type SnapshotSignal struct {
	SnapshotID string
	Mode       string
}

// PauseSignal is the payload of SignalPause.
type PauseSignal struct {
	// Mode is wire.SnapshotModeFilesystem (empty) or wire.SnapshotModeFull.
	Mode string
	// Reason is recorded as the paused phase's reason ("paused by key-…",
	// "idle").
	Reason string
}

// ResumeSignal is the payload of SignalResume.
type ResumeSignal struct {
	Reason string
}
