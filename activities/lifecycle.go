package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// Provision makes the workspace's sandbox and prepares it: it mints the
// runtime token (or reuses the stored one), asks the backend for the
// sandbox, stores the handle, then writes the template's files and runs its
// init commands through the runtime. It is safe to retry: the token is
// stored before the backend is called, so a retry after a crash starts the
// same runtime with the same token, and backends are idempotent on the
// workspace id.
func (a *Activities) Provision(ctx context.Context, in ProvisionInput) (ProvisionOutput, error) {
	defer KeepAliveInterruptible(ctx)()
	var step string
	dctx, cancel, ranOut := beforeDeadline(ctx)
	defer cancel()
	h, err := a.provision(dctx, in.WorkspaceID, false, &step)
	if err != nil {
		return ProvisionOutput{}, interrupted(ctx, timedOut(err, ranOut(), in.WorkspaceID, "provision", step))
	}
	return ProvisionOutput{Handle: h}, nil
}

// StartTimeoutType is the error type of a provisioning (or replacement)
// that ran out of its start timeout; its message says what it was doing.
const StartTimeoutType = "start_timeout"

// beforeDeadline returns a context that ends a little before the
// activity's own deadline (the template's start timeout), so the activity
// can still say what it was doing when time ran out: a timeout the server
// declares carries no such reason. ranOut reports whether that happened.
func beforeDeadline(ctx context.Context) (_ context.Context, cancel context.CancelFunc, ranOut func() bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}, func() bool { return false }
	}
	margin := min(time.Second, time.Until(dl)/10)
	dctx, cancel := context.WithDeadline(ctx, dl.Add(-margin))
	return dctx, cancel, func() bool {
		return errors.Is(dctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	}
}

// timedOut classifies err; when the activity ran out of time it becomes a
// final start-timeout error naming the step.
func timedOut(err error, ranOut bool, id, what, step string) error {
	if !ranOut || step == "" {
		return Classify(err)
	}
	msg := fmt.Sprintf("workspace %s: %s: still %s when the start timeout ran out", id, what, step)
	// A backend that said why it was still waiting (a pod the scheduler
	// cannot place) is worth more than the bare step.
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && errs.KindOf(err) != errs.Canceled {
		msg += ": " + err.Error()
	}
	return temporal.NewNonRetryableApplicationError(msg, StartTimeoutType, nil)
}

// provision makes the sandbox. A replacement (stale recovery) keeps files
// the workspace already has: template files are written only where missing.
//
// step, when not nil, is kept naming what provisioning is doing.
func (a *Activities) provision(ctx context.Context, id string, replacement bool, step *string) (backend.Handle, error) {
	at := func(s string) {
		if step != nil {
			*step = s
		}
	}
	at("reading the workspace")
	ws, err := a.Store.GetWorkspace(ctx, id)
	if err != nil {
		return backend.Handle{}, errs.Within("workspace "+id+": provision", err)
	}
	tmpl, err := a.Store.GetTemplate(ctx, ws.TemplateID)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: template: %w", id, err)
	}
	// The rows as they are now decide, before anything is made: the host
	// rule and the tenant's quota on the template's limits (host_rule.go).
	at("checking the template")
	if err := a.mayMake(ctx, ws, tmpl); err != nil {
		return backend.Handle{}, err
	}
	if err := a.fitLimits(ctx, ws, tmpl); err != nil {
		return backend.Handle{}, err
	}
	b, err := BackendFor(ctx, a.Store, a.Backends, ws)
	if err != nil {
		return backend.Handle{}, errs.Within("workspace "+id+": provision", err)
	}
	var common backend.Common
	if len(tmpl.Backend) > 0 {
		if err := json.Unmarshal(tmpl.Backend, &common); err != nil {
			return backend.Handle{}, errs.E(errs.Invalid, "workspace %s: provision: template %s: backend: %w", id, tmpl.ID, err)
		}
	}
	if common.Env, err = a.Connector.WorkspaceEnv(ctx, id, common); err != nil {
		return backend.Handle{}, errs.Within("workspace "+id+": provision", err)
	}

	token := ws.RuntimeToken
	if token == "" {
		token = models.NewToken()
		if err := a.Store.SetWorkspaceRuntime(ctx, id, ws.Handle, ws.Path, token); err != nil {
			return backend.Handle{}, fmt.Errorf("workspace %s: provision: store runtime token: %w", id, err)
		}
		ws.RuntimeToken = token
	}

	// A workspace that narrows its egress is made from the template with
	// its network closed.
	doc, err := backend.WithEgress(tmpl.Backend, ws)
	if err != nil {
		return backend.Handle{}, err
	}
	// A workspace made from a snapshot starts from the capture, which
	// holds what the template's files and init made: they are not applied
	// again.
	var snap *backend.SnapshotRef
	if ws.SnapshotID != "" {
		at("waiting for snapshot " + ws.SnapshotID)
		snap, err = a.readySnapshot(ctx, ws)
		switch {
		case err != nil && replacement && errs.KindOf(err) == errs.Invalid:
			// A replacement of a workspace whose snapshot is gone starts
			// from the template (keeping what files the backend kept).
			a.logger().Warn("replacement without its snapshot", "workspace_id", id, "snapshot_id", ws.SnapshotID, "error", err)
			snap = nil
		case err != nil:
			return backend.Handle{}, err
		}
	}
	secrets := provisionSecrets(token, common.Env)
	at("creating the sandbox")
	h, err := b.Provision(ctx, backend.ProvisionRequest{
		WorkspaceID: id,
		TenantID:    ws.TenantID,
		Template:    doc,
		Env:         common.Env,
		Token:       token,
		Snapshot:    snap,
	})
	if err != nil {
		return backend.Handle{}, RedactErr(errs.Within("workspace "+id+": provision", err), secrets...)
	}
	raw, err := json.Marshal(h)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: encode handle: %w", id, err)
	}
	if err := a.Store.SetWorkspaceRuntime(ctx, id, raw, h.Path, token); err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: store handle: %w", id, err)
	}
	ws.Handle, ws.Path = raw, h.Path

	if snap == nil && (len(common.Files) > 0 || len(common.Init) > 0 || common.ConfigTOML != "") {
		at("waiting for the runtime to answer")
		cl, err := a.waitRuntime(ctx, ws, h)
		if err != nil {
			return backend.Handle{}, RedactErr(err, secrets...)
		}
		if err := a.prepare(ctx, cl, ws.ID, common, replacement, at); err != nil {
			return backend.Handle{}, RedactErr(err, secrets...)
		}
	}
	// What the sandbox holds now outside the workspace is its base: a
	// reset restores it (backend.Restorer).
	a.recordBase(ctx, b, id, h)

	if _, err := a.recordEvent(ctx, id, wire.EventProvisioned, map[string]any{
		"workspace_type": ws.Backend,
		"workspace_path": h.Path,
	}); err != nil {
		return backend.Handle{}, err
	}
	a.logger().Info("workspace provisioned", "workspace_id", id, "backend", ws.Backend, "workspace_path", h.Path)
	return h, nil
}

// waitRuntime connects to a freshly provisioned runtime, retrying for a
// while: a container's runtime may need a moment before it listens.
func (a *Activities) waitRuntime(ctx context.Context, ws *wire.Workspace, h backend.Handle) (*client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, a.runtimeWait())
	defer cancel()
	delay := 20 * time.Millisecond
	for {
		cl, err := a.Connector.ClientFor(ctx, ws, h)
		if err == nil {
			if err = cl.Ping(ctx); err == nil {
				return cl, nil
			}
			err = errs.Within("runtime ping", err)
		}
		select {
		case <-ctx.Done():
			return nil, errs.Wrap(errs.Unavailable, errs.Within(fmt.Sprintf("workspace %s: provision: runtime did not answer within %s", ws.ID, a.runtimeWait()), err))
		case <-time.After(delay):
		}
		a.Connector.Drop(ws.ID)
		delay = min(2*delay, time.Second)
	}
}

// prepare writes the template's harness.toml (from config_toml) and files
// (in path order, so retries and logs are stable) and runs its init
// commands in order. With keepExisting, a file the workspace already has is
// left as it is.
//
// This is the one place harness.toml is written, for every backend: the
// runtime creates it with mode 0600 as the user it runs as.
//
// at, when not nil, is told each step (for a start timeout's reason).
func (a *Activities) prepare(ctx context.Context, cl *client.Client, id string, common backend.Common, keepExisting bool, at func(string)) error {
	if at == nil {
		at = func(string) {}
	}
	harness, err := common.Harness("spec.backend")
	if err != nil {
		return errs.Within("workspace "+id+": provision", err)
	}
	type file struct {
		data []byte
		mode os.FileMode
	}
	files := make(map[string]file, len(common.Files)+1)
	for p, content := range common.Files {
		files[p] = file{[]byte(content), 0o644}
	}
	if harness != nil {
		files[backend.HarnessPath] = file{harness, backend.HarnessMode}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		at("writing the template file " + p)
		if keepExisting {
			if _, err := cl.Stat(ctx, p); err == nil {
				continue
			}
		}
		if err := cl.WriteFile(ctx, p, files[p].data, files[p].mode); err != nil {
			return fmt.Errorf("workspace %s: provision: write file %s: %w", id, p, err)
		}
	}
	for i, cmd := range common.Init {
		at(fmt.Sprintf("running init[%d] %q", i, cmd))
		stderr := &TailBuffer{max: StderrTail}
		res, err := cl.Exec(ctx, protocol.ExecRequest{
			Args:    []string{"sh", "-c", cmd},
			Timeout: a.initTimeout(),
		}, io.Discard, stderr)
		if err != nil {
			return fmt.Errorf("workspace %s: provision: init[%d]: %w", id, i, err)
		}
		if res.TimedOut {
			return errs.E(errs.Invalid, "workspace %s: provision: init[%d]: timed out after %s: %s", id, i, a.initTimeout(), stderr.String())
		}
		if res.ExitCode != 0 {
			// The template's command failed; re-running the whole
			// provisioning will not make it pass, so this is Invalid.
			return errs.E(errs.Invalid, "workspace %s: provision: init[%d]: exit status %d: %s", id, i, res.ExitCode, stderr.String())
		}
	}
	return nil
}

// Destroy removes a workspace's sandbox, records workspace.destroyed and
// deletes the row (whose open sessions end with workspace_deleted). The
// handle comes from the input or else from the row; with neither, there is
// nothing on the backend to remove. A second call after success finds no
// row and does nothing. With KeepRow it only cleans up the backend.
func (a *Activities) Destroy(ctx context.Context, in DestroyInput) (DestroyOutput, error) {
	defer KeepAlive(ctx)()
	out, err := a.destroy(ctx, in)
	if err != nil {
		return DestroyOutput{}, Classify(err)
	}
	return out, nil
}

func (a *Activities) destroy(ctx context.Context, in DestroyInput) (DestroyOutput, error) {
	id := in.WorkspaceID
	ws, err := a.Store.GetWorkspace(ctx, id)
	if errs.Is(err, errs.NotFound) {
		// Destroyed and deleted by an earlier attempt.
		a.Connector.Drop(id)
		return DestroyOutput{}, nil
	}
	if err != nil {
		return DestroyOutput{}, errs.Within("workspace "+id+": destroy", err)
	}
	a.Connector.Drop(id)

	var h backend.Handle
	found := false
	if in.Handle != nil {
		h, found = *in.Handle, true
	} else if h, found, err = backend.DecodeHandle(ws.ID, ws.Handle); err != nil {
		return DestroyOutput{}, err
	}

	if !found && ws.RuntimeToken != "" {
		// Provision minted a token, so it may have reached the backend and
		// crashed before storing the handle: destroy by workspace id, which
		// every backend derives its names from, so nothing half-made is left.
		h, found = backend.Handle{Backend: ws.Backend, WorkspaceID: id}, true
	}
	if found {
		if err := a.destroyBackend(ctx, ws, h); err != nil {
			err = RedactErr(errs.Within("workspace "+id+": destroy", err), ws.RuntimeToken)
			if !in.KeepRow && lastAttempt(ctx, err) {
				// Say so in the event stream once, when retries are over.
				if _, evErr := a.recordEvent(ctx, id, wire.EventDestroyed, map[string]any{
					"workspace_type": ws.Backend,
					"workspace_path": h.Path,
					"error":          err.Error(),
				}); evErr != nil {
					a.logger().Warn("record destroy failure", "workspace_id", id, "error", evErr)
				}
			}
			return DestroyOutput{}, err
		}
	}
	if in.KeepRow {
		return DestroyOutput{Destroyed: found, Path: h.Path}, nil
	}

	path := h.Path
	if path == "" {
		path = ws.Path
	}
	if _, err := a.recordEvent(ctx, id, wire.EventDestroyed, map[string]any{
		"workspace_type": ws.Backend,
		"workspace_path": path,
	}); err != nil {
		return DestroyOutput{}, err
	}
	if err := a.Store.DeleteWorkspace(ctx, id); err != nil && !errs.Is(err, errs.NotFound) {
		return DestroyOutput{}, fmt.Errorf("workspace %s: destroy: delete row: %w", id, err)
	}
	a.logger().Info("workspace destroyed", "workspace_id", id, "backend", ws.Backend, "workspace_path", path)
	return DestroyOutput{Destroyed: found, Path: path}, nil
}

func (a *Activities) destroyBackend(ctx context.Context, ws *wire.Workspace, h backend.Handle) error {
	b, err := BackendFor(ctx, a.Store, a.Backends, ws)
	if err != nil {
		return err
	}
	return b.Destroy(ctx, h)
}

// lastAttempt reports whether a failing activity will not be retried: its
// error is of a non-retryable kind or its retry policy has no attempts left.
// Outside an activity (tests calling the method directly) every call is the last.
func lastAttempt(ctx context.Context, err error) bool {
	if !retryable(errs.KindOf(err)) {
		return true
	}
	if !activity.IsActivity(ctx) {
		return true
	}
	info := activity.GetInfo(ctx)
	rp := info.RetryPolicy
	return rp != nil && rp.MaximumAttempts > 0 && info.Attempt >= rp.MaximumAttempts
}

// RedactErr removes every secret from err's message, keeping its kind.
func RedactErr(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range secrets {
		msg = Redact(msg, s)
	}
	if msg == err.Error() {
		return err
	}
	return &errs.Error{Kind: errs.KindOf(err), Msg: msg}
}

// provisionSecrets are the values a provisioning error must not carry into
// history or events: the runtime token and the template's env values (an
// init command may print them). Values shorter than 4 bytes are left, as
// redacting them would garble the message without protecting anything.
func provisionSecrets(token string, env map[string]string) []string {
	out := []string{token}
	for _, v := range env {
		if len(v) >= 4 {
			out = append(out, v)
		}
	}
	return out
}

// TailBuffer keeps the last max bytes written to it.
type TailBuffer struct {
	max int
	buf []byte
}

// NewTailBuffer keeps the last max bytes (an eval case's setup commands
// report their stderr as init commands do).
func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{max: max} }

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept bytes, trimmed, marking a cut.
func (t *TailBuffer) String() string {
	s := strings.TrimSpace(string(t.buf))
	if len(t.buf) >= t.max {
		s = "..." + s
	}
	if s == "" {
		return "(no stderr)"
	}
	return s
}
