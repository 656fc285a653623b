// Package agentrun holds the activities of an agent's run in a session
// (workflows.SessionRunWorkflow): each model call and each tool call is one
// activity that records what it did in the session's transcript, so a
// retried or replayed step is never done twice.
//
// Its activities are methods on Activities, which the workflow references
// through a nil *Activities; their names (StartRun, ResumeRun, ModelCall,
// ToolCall, EndRun) are those recorded in workflow history and do not
// change. Errors become retryable or not in activities.Classify, the one
// place that says so.
package agentrun

import (
	"log/slog"
	"net/http"

	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/models"
)

// Activities holds what an agent run's activities need.
type Activities struct {
	Store     *models.Store
	Connector *connector.Connector
	Logger    *slog.Logger
	// Outbound is the policy every model call passes: nil refuses every
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

// outboundClient is the HTTP client for model calls: every connection it
// opens passes a.Outbound.
func (a *Activities) outboundClient() *http.Client {
	return a.client.Get(a.Outbound)
}
