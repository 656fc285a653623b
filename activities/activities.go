// Package activities holds the I/O the workspace, pool and reconciler
// workflows call: provisioning and destroying sandboxes through their
// backend, probing their runtime, and writing phases and events to the
// database. The eval run's activities are in activities/evalrun and the
// agent run's in activities/agentrun; both build on this package.
//
// Activities are methods on a struct that holds their dependencies; the
// workflow references them through a nil *Activities. Every activity takes one
// struct in and returns one struct out, so fields can be added without
// breaking replay. Classify, here, is the one place where an errs.Kind
// becomes retryable or not, for the three packages.
//
// Nothing that enters workflow history here carries a secret: runtime tokens
// and template env values stay in the database and the backend request.
package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// Defaults for the optional fields of Activities.
const (
	// DefaultProbeTimeout bounds one probe's ping.
	DefaultProbeTimeout = 5 * time.Second
	// DefaultInitTimeout bounds each init command of a template.
	DefaultInitTimeout = 5 * time.Minute
	// DefaultRuntimeWait bounds how long Provision waits for a freshly
	// provisioned runtime to answer before it writes files and runs init.
	DefaultRuntimeWait = 30 * time.Second
)

// StderrTail is how much of a failing init command's stderr an error keeps.
const StderrTail = 2048

// Activities holds what every workspace activity needs. Its zero-valued
// optional fields take the Default* values.
type Activities struct {
	Store     *models.Store
	Backends  *backend.Registry
	Connector *connector.Connector
	Metrics   *metrics.Metrics
	Logger    *slog.Logger
	// Lifecycle creates and deletes pool workspaces; nil leaves pools
	// untended (ReconcilePool fails).
	Lifecycle Lifecycle
	// Prober watches healthy workspaces for their workflows; nil keeps
	// every probe in the workflow (a probe asked to watch says it does not).
	Prober *Prober
	// proberMu guards lazyProber, the worker's Prober started at the
	// first watch when Prober is nil (prober_worker.go).
	proberMu   sync.Mutex
	lazyProber *Prober
	// BeaconOff makes the Prober ping every watched runtime, as before
	// the liveness beacon (prober_beacon.go); so does PRIMER_LIVENESS_BEACON=off.
	BeaconOff bool
	// Outbound is the policy every request to a user-chosen address
	// passes (model calls, webhooks): nil refuses every internal address.
	Outbound *outbound.Policy
	// httpOnce builds httpClient, Outbound's HTTP client, at first use.
	httpOnce   sync.Once
	httpClient *http.Client

	// ProbeTimeout bounds one probe's ping (default DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// InitTimeout bounds each of a template's init commands (default DefaultInitTimeout).
	InitTimeout time.Duration
	// RuntimeWait bounds the wait for a new runtime to answer (default DefaultRuntimeWait).
	RuntimeWait time.Duration
}

// ProvisionInput names the workspace to provision; everything else is read
// from its database row, so no secret enters workflow history.
type ProvisionInput struct {
	WorkspaceID string
}

// ProvisionOutput is the handle of the provisioned sandbox.
type ProvisionOutput struct {
	Handle backend.Handle
}

// ProbeInput names the workspace to probe and when the probe was due.
type ProbeInput struct {
	WorkspaceID string
	// Handle is the handle the workflow holds; used when the row has none.
	Handle backend.Handle
	// ScheduledAt is when the probe was due, for the lateness metric.
	ScheduledAt time.Time
	// Lifetime asks for the workspace's lifetime deadlines in the output
	// (workflow version vLifetime and later).
	Lifetime bool
	// Watch, when set, hands the workspace to the worker's Prober if the
	// probe hits (workflow version vLiveness and later; prober.go).
	Watch *WatchRequest `json:",omitempty"`
}

// ProbeOutput says whether the runtime answered and, on a miss, why not.
type ProbeOutput struct {
	Hit    bool
	Reason string
	// Lifetime is the workspace's deadlines as stored, when asked for.
	Lifetime *Lifetime `json:",omitempty"`
	// Watched is true when the probe was asked to watch, hit, and the
	// worker's Prober now watches the workspace: the workflow may sleep on
	// its backstop.
	Watched bool `json:",omitempty"`
	// Paused is set by a watched probe that missed and found the
	// workspace paused: the Prober stops watching it without a word to
	// its workflow, which paused it.
	Paused bool `json:",omitempty"`
}

// SetPhaseInput is a phase change of a workspace.
type SetPhaseInput struct {
	WorkspaceID string
	From, To    string
	Reason      string
}

// SetPhaseOutput is empty; it exists so fields can be added.
type SetPhaseOutput struct{}

// RecordEventInput is one event to store for a workspace.
type RecordEventInput struct {
	WorkspaceID string
	Type        string
	Data        map[string]any
}

// RecordEventOutput is the id of the stored event.
type RecordEventOutput struct {
	EventID uint64
}

// DestroyInput names the workspace to destroy.
type DestroyInput struct {
	WorkspaceID string
	// Handle is the sandbox's handle when the workflow has one; otherwise the
	// row's handle is used (provisioning may have stored one and crashed).
	Handle *backend.Handle
	// KeepRow cleans up the backend only: no event, the row stays. The
	// workflow uses it for what a failed provisioning left behind.
	KeepRow bool
}

// DestroyOutput says whether there was a sandbox to destroy.
type DestroyOutput struct {
	Destroyed bool
	// Path is where the destroyed sandbox lived.
	Path string
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Logger
}

func (a *Activities) probeTimeout() time.Duration {
	if a.ProbeTimeout > 0 {
		return a.ProbeTimeout
	}
	return DefaultProbeTimeout
}

func (a *Activities) initTimeout() time.Duration {
	if a.InitTimeout > 0 {
		return a.InitTimeout
	}
	return DefaultInitTimeout
}

func (a *Activities) runtimeWait() time.Duration {
	if a.RuntimeWait > 0 {
		return a.RuntimeWait
	}
	return DefaultRuntimeWait
}

// Classify turns an error into the Temporal error the workflow sees: the
// errs kind becomes the error type, and bad input, missing objects and
// forbidden changes are not retried because a retry cannot fix them. The
// cause is flattened into the message so history holds one readable line.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return err
	}
	k := errs.KindOf(err)
	if !retryable(k) {
		return temporal.NewNonRetryableApplicationError(err.Error(), k.String(), nil)
	}
	return temporal.NewApplicationError(err.Error(), k.String())
}

// retryable reports whether an activity failing with an error of kind k is
// worth another attempt. It is the one place that says so: bad input,
// missing objects and forbidden changes stay as they are however often the
// activity runs, every other kind may be transient.
func retryable(k errs.Kind) bool {
	switch k {
	case errs.Invalid, errs.NotFound, errs.Forbidden:
		return false
	}
	return true
}

// Redact removes a secret from a message bound for history, events or logs.
func Redact(msg, secret string) string {
	if secret == "" {
		return msg
	}
	return strings.ReplaceAll(msg, secret, "[redacted]")
}

// BackendFor resolves the backend of a workspace's provider.
func BackendFor(ctx context.Context, store *models.Store, reg *backend.Registry, ws *wire.Workspace) (backend.Backend, error) {
	p, err := store.GetProvider(ctx, ws.ProviderID)
	if err != nil {
		return nil, errs.Within("workspace "+ws.ID+": provider", err)
	}
	b, err := reg.For(p)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: provider %s: %w", ws.ID, p.ID, err)
	}
	return b, nil
}

// recordEvent stores one event with data marshalled to JSON.
func (a *Activities) recordEvent(ctx context.Context, workspaceID, typ string, data map[string]any) (uint64, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return 0, errs.E(errs.Invalid, "workspace %s: event %s: encode data: %w", workspaceID, typ, err)
	}
	e := &wire.Event{WorkspaceID: workspaceID, Type: typ, Data: raw}
	if err := a.Store.AppendEvent(ctx, e); err != nil {
		return 0, fmt.Errorf("workspace %s: record event %s: %w", workspaceID, typ, err)
	}
	return e.ID, nil
}

// RecordEvent stores one event for a workspace (the workflow records
// workspace.provision_failed with it).
func (a *Activities) RecordEvent(ctx context.Context, in RecordEventInput) (RecordEventOutput, error) {
	if in.WorkspaceID == "" || in.Type == "" {
		return RecordEventOutput{}, Classify(errs.E(errs.Invalid, "record event: workspace id and type are required"))
	}
	id, err := a.recordEvent(ctx, in.WorkspaceID, in.Type, in.Data)
	if err != nil {
		return RecordEventOutput{}, Classify(err)
	}
	return RecordEventOutput{EventID: id}, nil
}

// SetPhase writes a workspace's phase and reason and records
// workspace.phase_changed. Entering failed ends the workspace's open
// sessions with reason workspace_lost.
func (a *Activities) SetPhase(ctx context.Context, in SetPhaseInput) (SetPhaseOutput, error) {
	if err := a.Store.SetWorkspacePhase(ctx, in.WorkspaceID, in.To, in.Reason); err != nil {
		return SetPhaseOutput{}, Classify(fmt.Errorf("workspace %s: set phase %s: %w", in.WorkspaceID, in.To, err))
	}
	ended := 0
	if in.To == wire.PhaseFailed {
		ids, err := a.Store.EndWorkspaceSessions(ctx, in.WorkspaceID, wire.ReasonWorkspaceLost)
		if err != nil {
			return SetPhaseOutput{}, Classify(errs.Within("workspace "+in.WorkspaceID+": end sessions", err))
		}
		ended = len(ids)
	}
	if _, err := a.recordEvent(ctx, in.WorkspaceID, wire.EventPhaseChanged, map[string]any{
		"from": in.From, "to": in.To, "reason": in.Reason,
	}); err != nil {
		return SetPhaseOutput{}, Classify(err)
	}
	if a.Metrics != nil {
		a.Metrics.PhaseChanges.WithLabelValues(in.To).Inc()
	}
	a.logger().Info("workspace phase changed", "workspace_id", in.WorkspaceID,
		"from", in.From, "to", in.To, "reason", in.Reason, "sessions_ended", ended)
	return SetPhaseOutput{}, nil
}

// KeepAlive heartbeats the running activity until the returned stop is
// called: a worker that dies mid-activity (kill -9 of primer serve) is then
// noticed within the activity's heartbeat timeout and the work retried on
// another worker, instead of after its whole start-to-close timeout (up to
// the template's start timeout for a provisioning). Outside an activity, or
// without a heartbeat timeout, it does nothing.
func KeepAlive(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	timeout := activity.GetInfo(ctx).HeartbeatTimeout
	if timeout <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		// The first beat comes after a quarter of the timeout: an activity
		// that is done by then (most are) never heartbeats at all.
		tick := time.NewTicker(timeout / 4)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// outboundClient is the HTTP client for requests to user-chosen addresses:
// every connection it opens passes a.Outbound (outbound.Policy.HTTPClient).
// Calls bound their time with their context.
func (a *Activities) outboundClient() *http.Client {
	a.httpOnce.Do(func() { a.httpClient = a.Outbound.HTTPClient(0) })
	return a.httpClient
}
