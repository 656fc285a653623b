package starter

import (
	"context"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// StartSessionRun records an agent run of the open session ses, with the
// instructions as its first message, and starts its workflow
// (session-<id>). Conflict if the session already has a run. The
// instructions stay in the database: the workflow gets the session id.
func (s *Starter) StartSessionRun(ctx context.Context, ses *wire.Session, agentID, instructions string) (*wire.SessionRun, error) {
	run := &wire.SessionRun{SessionID: ses.ID, TenantID: ses.TenantID, AgentID: agentID}
	if err := s.Store.CreateSessionRun(ctx, run, instructions); err != nil {
		return nil, err
	}
	if _, err := s.Temporal.ExecuteWorkflow(ctx, workflows.SessionRunStartOptions(ses.ID), workflows.SessionRunWorkflowName, workflows.SessionRunInput{SessionID: ses.ID}); err != nil {
		// No workflow will end it: end it here, saying why.
		msg := "start run workflow: " + err.Error()
		if _, eerr := s.Store.EndSessionRun(context.WithoutCancel(ctx), ses.ID, wire.AgentFailed, msg, 0); eerr != nil {
			s.logger().Warn("end unstarted run", "session_id", ses.ID, "error", eerr)
		}
		return nil, errs.E(errs.Unavailable, "session %s: %s", ses.ID, msg)
	}
	s.logger().Info("agent run started", "session_id", ses.ID, "agent", agentID)
	return run, nil
}

// CancelSessionRun asks a session's run to stop; it ends canceled.
// Precondition (409) if the run already ended.
func (s *Starter) CancelSessionRun(ctx context.Context, sessionID string) error {
	run, err := s.Store.GetSessionRun(ctx, sessionID)
	if err != nil {
		return err
	}
	if run.Status != wire.AgentRunning {
		return errs.E(errs.Precondition, "session %s: the run already ended (%s)", sessionID, run.EndReason)
	}
	if err := s.Temporal.SignalWorkflow(ctx, workflows.SessionRunID(sessionID), "", workflows.SignalCancelRun, nil); err != nil {
		return errs.E(errs.Unavailable, "session %s: cancel run: %w", sessionID, err)
	}
	s.logger().Info("agent run cancel requested", "session_id", sessionID)
	return nil
}
