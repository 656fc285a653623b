// Package evalrun holds the activities of an eval run's workflow
// (workflows.RunWorkflow): it makes the run's rows, acquires and releases
// the workspaces its cases run on, runs each case and records its attempts,
// and finishes the run with its webhook.
//
// Its activities are methods on Activities, which the workflow references
// through a nil *Activities; their names (PrepareRun, AcquireWorkspace,
// RunCase, FailCase, ReleaseWorkspace, FinishRun) are those recorded in
// workflow history and do not change. Errors become retryable or not in
// activities.Classify, the one place that says so.
package evalrun

import (
	"log/slog"
	"net/http"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/models"
)

// Activities holds what an eval run's activities need.
type Activities struct {
	Store     *models.Store
	Backends  *backend.Registry
	Connector *connector.Connector
	Logger    *slog.Logger
	// Lifecycle creates, returns and deletes the run's workspaces; nil
	// fails AcquireWorkspace and ReleaseWorkspace.
	Lifecycle activities.Lifecycle
	// Workspaces are the workspace workflow's activities: a case on a
	// reused workspace resets its sandbox with them, and a lease from a
	// pool passes their host rule. Required.
	Workspaces *activities.Activities
	// Outbound is the policy the run's webhook passes: nil refuses every
	// internal address.
	Outbound *outbound.Policy
	// client is Outbound's HTTP client, built at first use.
	client outbound.LazyClient
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Logger
}

// outboundClient is the HTTP client for the run's webhook: every
// connection it opens passes a.Outbound.
func (a *Activities) outboundClient() *http.Client {
	return a.client.Get(a.Outbound)
}
