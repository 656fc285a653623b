package client

import (
	"context"

	"github.com/primerhq/primer/runtime/protocol"
)

// StateCommit records the workspace as one commit of its history, even
// when nothing changed.
func (c *Client) StateCommit(ctx context.Context, p protocol.StateCommitParams) (protocol.StateCommitResult, error) {
	var res protocol.StateCommitResult
	err := c.do(ctx, &protocol.Request{
		Op:          protocol.OpStateCommit,
		AuthorName:  p.AuthorName,
		AuthorEmail: p.AuthorEmail,
		Message:     p.Message,
		Time:        p.Time,
		Expect:      p.Expect,
	}, &res)
	return res, err
}

// StateLog lists the history's commits, newest first along first parents.
func (c *Client) StateLog(ctx context.Context, p protocol.StateLogParams) (protocol.StateLogResult, error) {
	var res protocol.StateLogResult
	err := c.do(ctx, &protocol.Request{
		Op:           protocol.OpStateLog,
		Limit:        p.Limit,
		TrailerKey:   p.TrailerKey,
		TrailerValue: p.TrailerValue,
	}, &res)
	return res, err
}

// StateDiff compares two commits of the history. An unknown commit is an
// errs.NotFound error.
func (c *Client) StateDiff(ctx context.Context, p protocol.StateDiffParams) (protocol.StateDiffResult, error) {
	var res protocol.StateDiffResult
	err := c.do(ctx, &protocol.Request{Op: protocol.OpStateDiff, From: p.From, To: p.To}, &res)
	return res, err
}

// StateRestore makes the workspace equal to commit p.Commit and records
// that as a new commit. An unknown commit is an errs.NotFound error.
func (c *Client) StateRestore(ctx context.Context, p protocol.StateRestoreParams) (protocol.StateRestoreResult, error) {
	var res protocol.StateRestoreResult
	err := c.do(ctx, &protocol.Request{
		Op:          protocol.OpStateRestore,
		Commit:      p.Commit,
		AuthorName:  p.AuthorName,
		AuthorEmail: p.AuthorEmail,
		Message:     p.Message,
		Time:        p.Time,
	}, &res)
	return res, err
}

// Reset kills every process in the workspace and removes everything under
// its root, history included, for a pooled workspace being handed back.
func (c *Client) Reset(ctx context.Context) (protocol.ResetResult, error) {
	var res protocol.ResetResult
	err := c.do(ctx, &protocol.Request{Op: protocol.OpReset}, &res)
	return res, err
}

// Shutdown asks the runtime to stop as SIGTERM would: it answers, then
// closes every connection (this one too), kills every process it started
// and exits. A runtime embedded in another process, or one that predates
// the op, answers with an errs.Invalid error and keeps running.
func (c *Client) Shutdown(ctx context.Context) error {
	var res protocol.ShutdownResult
	return c.do(ctx, &protocol.Request{Op: protocol.OpShutdown}, &res)
}
