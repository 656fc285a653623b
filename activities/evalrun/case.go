package evalrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// Bounds of one case execution.
const (
	// matchBytes is how much of the end of stdout and stderr a case keeps
	// in memory to judge it (stdout_contains, stdout_matches).
	matchBytes = 1 << 20
	// caseOpTimeout bounds one file operation of a case (write, read,
	// stat) and its reset.
	caseOpTimeout = 2 * time.Minute
)

// RunCaseInput is one attempt of a case of a run on a workspace.
type RunCaseInput struct {
	RunID       string
	Ordinal     int
	WorkspaceID string
	// Attempt counts from 1; Final says no attempt follows, so an
	// infrastructure failure ends the case with verdict error.
	Attempt int
	Final   bool
	// Reset makes the workspace clean first (it ran a case before).
	Reset bool
}

// RunCaseOutput is the attempt's verdict. Infra says the infrastructure
// failed (the workspace was lost or unreachable): the workflow releases
// the workspace and, unless Final, runs the case again on another.
// Skipped says the case was already final and did not run again.
type RunCaseOutput struct {
	Verdict string
	Infra   bool
	Reason  string
	Skipped bool
}

// RunCase executes one case on a workspace and stores its result: reset
// (when asked), files, setup commands, the command within the case's
// timeout, the expected files, the score file and the collected
// artifacts; eval.Judge gives the verdict. A runtime that cannot be
// reached at any step is an infrastructure failure, not the case's: the
// attempt is recorded and the output says Infra. A case already final is
// never executed again (Skipped), so a retried activity or a resumed run
// runs each case once. It heartbeats; when canceled, the running command
// is killed before it returns.
func (a *Activities) RunCase(ctx context.Context, in RunCaseInput) (RunCaseOutput, error) {
	defer activities.KeepAlive(ctx)()
	out, err := a.runCase(ctx, in)
	if err != nil {
		return RunCaseOutput{}, activities.Classify(err)
	}
	return out, nil
}

func (a *Activities) runCase(ctx context.Context, in RunCaseInput) (RunCaseOutput, error) {
	cr, err := a.Store.GetCaseResult(ctx, in.RunID, in.Ordinal)
	if err != nil {
		return RunCaseOutput{}, fmt.Errorf("run %s: case %d: %w", in.RunID, in.Ordinal, err)
	}
	if isFinal(cr) {
		return skipped(cr), nil
	}
	var c eval.Case
	if err := json.Unmarshal(cr.Spec, &c); err != nil {
		return RunCaseOutput{}, errs.E(errs.Other, "run %s: case %s: decode: %w", in.RunID, cr.CaseID, err)
	}
	// A case that began before (a retry after a worker died in the
	// middle) left the workspace dirty: it starts on a clean one.
	reset := in.Reset || cr.Status == wire.CaseRunning ||
		(activity.IsActivity(ctx) && activity.GetInfo(ctx).Attempt > 1)
	started := time.Now().UTC()
	if err := a.Store.StartCase(ctx, in.RunID, in.Ordinal, started); err != nil {
		if errs.Is(err, errs.Conflict) {
			if cur, gerr := a.Store.GetCaseResult(ctx, in.RunID, in.Ordinal); gerr == nil && isFinal(cur) {
				return skipped(cur), nil
			}
		}
		return RunCaseOutput{}, fmt.Errorf("run %s: case %s: start: %w", in.RunID, cr.CaseID, err)
	}

	// The run may reach this workspace (a leased pool member was made
	// before the run; host_rule.go); a refusal is final.
	if err := a.mayRunCase(ctx, in.RunID, in.WorkspaceID); err != nil {
		return RunCaseOutput{}, err
	}
	x, err := a.execCase(ctx, in.WorkspaceID, c, reset)
	if ctx.Err() != nil {
		return RunCaseOutput{}, errs.E(errs.Canceled, "run %s: case %s: canceled", in.RunID, cr.CaseID)
	}
	if err != nil {
		return RunCaseOutput{}, fmt.Errorf("run %s: case %s: %w", in.RunID, cr.CaseID, err)
	}
	ended := time.Now().UTC()
	secrets := envSecrets(c.Env)
	att := eval.Attempt{Attempt: in.Attempt, WorkspaceID: in.WorkspaceID, StartedAt: started, EndedAt: ended}
	durationMS := ended.Sub(started).Milliseconds()

	if x.infra != nil {
		att.Verdict, att.Reason = eval.VerdictError, redactAll(x.infra.Error(), secrets)
		verdict, err := a.recordAttempt(ctx, cr, att, in.Final, func(r *wire.CaseResult) {
			r.Verdict, r.Reason, r.DurationMS = eval.VerdictError, att.Reason, durationMS
		})
		if err != nil {
			return RunCaseOutput{}, err
		}
		a.logger().Warn("case attempt lost its workspace", "run_id", in.RunID, "case_id", cr.CaseID,
			"attempt", in.Attempt, "workspace_id", in.WorkspaceID, "final", in.Final, "reason", att.Reason)
		return RunCaseOutput{Verdict: verdict, Infra: true, Reason: att.Reason}, nil
	}

	verdict, reason := eval.Judge(c, x.outcome)
	reason = redactAll(reason, secrets)
	att.Verdict, att.Reason = verdict, reason
	arts, err := json.Marshal(x.artifacts)
	if err != nil {
		return RunCaseOutput{}, errs.E(errs.Other, "run %s: case %s: encode artifacts: %w", in.RunID, cr.CaseID, err)
	}
	stored, err := a.recordAttempt(ctx, cr, att, true, func(r *wire.CaseResult) {
		r.Verdict, r.Reason = verdict, reason
		if x.ran {
			code := x.outcome.ExitCode
			r.ExitCode = &code
		}
		r.DurationMS, r.CommandMS = durationMS, x.commandMS
		// The tails are shown by the API: a value of the case's env the
		// command printed is redacted like everywhere else.
		r.Stdout = lastBytes(redactAll(x.outcome.Stdout, secrets), eval.TailBytes)
		r.Stderr = lastBytes(redactAll(x.outcome.Stderr, secrets), eval.TailBytes)
		r.Score, r.Metrics = x.score, x.metrics
		if len(x.artifacts) > 0 {
			r.Artifacts = arts
		}
	})
	if err != nil {
		return RunCaseOutput{}, err
	}
	return RunCaseOutput{Verdict: stored, Reason: reason}, nil
}

// isFinal reports whether a case has its one final result (or never will).
func isFinal(cr *wire.CaseResult) bool {
	return cr.Status == wire.CaseDone || cr.Status == wire.CaseCanceled
}

func skipped(cr *wire.CaseResult) RunCaseOutput {
	return RunCaseOutput{Verdict: cr.Verdict, Reason: cr.Reason, Skipped: true}
}

// caseExec is what one execution of a case produced.
type caseExec struct {
	outcome eval.Outcome
	// ran is true when the command was started (ExitCode is its own).
	ran       bool
	commandMS int64
	score     *float64
	metrics   map[string]float64
	artifacts []eval.Artifact
	// infra is why the infrastructure failed; the outcome is then void.
	infra error
}

// caseProcs runs a case's commands and remembers their process groups, so
// that what they left running in the background (`daemon &`) is killed
// when the case ends. On a container the runtime's reset would kill it
// anyway; a runtime that runs as a host process (local, memory) kills only
// the commands still running, so a case cleans up after itself.
type caseProcs struct {
	cl *client.Client
	// track is false where the runtime's reset kills every process of the
	// sandbox (a container, a pod): the next case's reset, or the return
	// or delete at the end of the run, ends what a case left, so the case
	// spends no exec on it.
	track  bool
	groups []int
}

// exec runs req to completion like client.Exec.
func (p *caseProcs) exec(ctx context.Context, req protocol.ExecRequest, stdout, stderr io.Writer) (protocol.ExecResult, error) {
	proc, err := p.cl.Start(ctx, req, client.StartOptions{Stdout: stdout, Stderr: stderr})
	if err != nil {
		return protocol.ExecResult{}, err
	}
	if pid := proc.PID(); pid > 0 && p.track {
		p.groups = append(p.groups, pid)
	}
	// No input: the command reads end of file, as with Exec.
	_ = proc.Stdin().Close()
	return proc.Wait()
}

// killLeft kills the process groups of the case's commands, which only
// what they left behind still uses.
func (p *caseProcs) killLeft(ctx context.Context) error {
	if len(p.groups) == 0 {
		return nil
	}
	args := []string{"sh", "-c", `for g in "$@"; do kill -9 "-$g" 2>/dev/null; done; exit 0`, "primer-case-cleanup"}
	for _, g := range p.groups {
		args = append(args, strconv.Itoa(g))
	}
	p.groups = nil
	ctx, cancel := context.WithTimeout(ctx, caseOpTimeout)
	defer cancel()
	_, err := p.cl.Exec(ctx, protocol.ExecRequest{Args: args}, io.Discard, io.Discard)
	return err
}

// execCase runs the case on the workspace. Its error is the activity's own
// (the store); a workspace that failed is x.infra.
func (a *Activities) execCase(ctx context.Context, wsID string, c eval.Case, reset bool) (x caseExec, err error) {
	ws, err := a.Store.GetWorkspace(ctx, wsID)
	if errs.Is(err, errs.NotFound) {
		x.infra = errs.E(errs.Unavailable, "workspace %s: gone", wsID)
		return x, nil
	}
	if err != nil {
		return x, err
	}
	if ws.Phase != wire.PhaseRunning {
		x.infra = errs.E(errs.Unavailable, "workspace %s: %s: %s", wsID, ws.Phase, ws.Reason)
		return x, nil
	}
	cl, err := a.Connector.Client(ctx, ws)
	if err != nil {
		x.infra = activities.RedactErr(err, ws.RuntimeToken)
		return x, nil
	}
	if reset {
		// The template is read once per reset: its init budget here, the
		// rest of the reset from the same row.
		tmpl, err := a.Store.GetTemplate(ctx, ws.TemplateID)
		if err != nil {
			x.infra = errs.Within("workspace "+wsID+": reset: template "+ws.TemplateID, err)
			return x, nil
		}
		common, err := activities.CommonOf(tmpl)
		if err != nil {
			x.infra = errs.Within("workspace "+wsID+": reset", err)
			return x, nil
		}
		rctx, cancel := context.WithTimeout(ctx, caseOpTimeout+activities.InitBudget(a.Workspaces, common))
		_, cl, err = activities.ResetSandbox(rctx, a.Workspaces, cl, ws, tmpl)
		cancel()
		if err != nil {
			x.infra = err
			return x, nil
		}
	}
	infra := func(err error) bool {
		if err != nil && runtimeInfra(err) {
			x.infra = activities.RedactErr(fmt.Errorf("workspace %s: %w", wsID, err), ws.RuntimeToken)
			return true
		}
		return false
	}

	timeout := caseTimeout(c)
	deadline := time.Now().Add(timeout)
	procs := &caseProcs{cl: cl, track: a.hostProcesses(ctx, ws)}
	x.outcome.SetupFailed = setupCase(ctx, cl, procs, c, deadline, timeout, infra)
	if x.infra != nil {
		return x, nil
	}
	if x.outcome.SetupFailed == "" {
		stdout, stderr := &outputTail{max: matchBytes}, &outputTail{max: matchBytes}
		begin := time.Now()
		res, err := procs.exec(ctx, protocol.ExecRequest{Args: c.Command.Argv(), Env: c.Env, Timeout: max(time.Until(deadline), time.Millisecond)}, stdout, stderr)
		x.commandMS = time.Since(begin).Milliseconds()
		if ctx.Err() != nil || infra(err) {
			return x, nil
		}
		x.ran = true
		if err != nil {
			// The runtime refused the command (a program not found):
			// the shell's answer to the same.
			res.ExitCode = 127
			fmt.Fprintf(stderr, "%v\n", err)
		}
		x.outcome.ExitCode, x.outcome.TimedOut = res.ExitCode, res.TimedOut
		x.outcome.Stdout, x.outcome.Stderr = stdout.String(), stderr.String()
		if infra(procs.killLeft(ctx)) {
			return x, nil
		}

		if len(c.Expect.Files) > 0 {
			x.outcome.Files = map[string][]byte{}
			for p := range c.Expect.Files {
				data, err := readFile(ctx, cl, p)
				if infra(err) {
					return x, nil
				}
				if err == nil {
					x.outcome.Files[p] = data
				}
			}
		}
		if c.ScoreFile != "" {
			// A missing or bad score file is no score; it fails the case
			// only if expect names the file.
			data, err := readFile(ctx, cl, c.ScoreFile)
			if infra(err) {
				return x, nil
			}
			var sc eval.Score
			if err == nil && json.Unmarshal(data, &sc) == nil {
				x.score, x.metrics = sc.Score, sc.Metrics
			}
		}
	}
	if infra(procs.killLeft(ctx)) {
		return x, nil
	}
	x.artifacts, err = collect(ctx, cl, c.Collect)
	infra(err)
	return x, nil
}

// setupCase writes the case's files and runs its setup commands; it
// returns why setup failed, "" when it passed. A runtime failure is
// reported through infra (which returns true for it).
func setupCase(ctx context.Context, cl *client.Client, procs *caseProcs, c eval.Case, deadline time.Time, timeout time.Duration, infra func(error) bool) string {
	paths := make([]string, 0, len(c.Files))
	for p := range c.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		octx, cancel := context.WithTimeout(ctx, caseOpTimeout)
		err := cl.WriteFile(octx, p, c.Files[p].Data, 0o644)
		cancel()
		if infra(err) {
			return ""
		}
		if err != nil {
			return fmt.Sprintf("files[%s]: %v", p, err)
		}
	}
	for i, cmd := range c.Setup {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Sprintf("setup[%d]: timed out after %s", i, timeout)
		}
		stderr := activities.NewTailBuffer(activities.StderrTail)
		res, err := procs.exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", cmd}, Env: c.Env, Timeout: left}, io.Discard, stderr)
		if ctx.Err() != nil || infra(err) {
			return ""
		}
		switch {
		case err != nil:
			return fmt.Sprintf("setup[%d]: %v", i, err)
		case res.TimedOut:
			return fmt.Sprintf("setup[%d]: timed out after %s", i, timeout)
		case res.ExitCode != 0:
			return fmt.Sprintf("setup[%d]: exit status %d: %s", i, res.ExitCode, stderr.String())
		}
	}
	return ""
}

// readFile reads one file of the workspace within caseOpTimeout.
func readFile(ctx context.Context, cl *client.Client, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, caseOpTimeout)
	defer cancel()
	return cl.ReadFile(ctx, path)
}

// collect reads the case's collect paths back as artifacts, each up to
// eval.MaxArtifactBytes and all together up to eval.MaxArtifactsBytes;
// what is cut is marked Truncated. A path that cannot be collected (gone,
// a directory) says why in its Error. The error is a runtime failure.
func collect(ctx context.Context, cl *client.Client, paths []string) ([]eval.Artifact, error) {
	var out []eval.Artifact
	total := 0
	for _, p := range paths {
		art := eval.Artifact{Path: p}
		octx, cancel := context.WithTimeout(ctx, caseOpTimeout)
		fi, err := cl.Stat(octx, p)
		cancel()
		switch {
		case err != nil && runtimeInfra(err):
			return out, err
		case errs.Is(err, errs.NotFound):
			art.Error = "missing"
		case err != nil:
			art.Error = err.Error()
		case fi.IsDir:
			art.Error = "a directory"
		}
		if art.Error != "" {
			out = append(out, art)
			continue
		}
		art.Size = fi.Size
		budget := min(eval.MaxArtifactBytes, eval.MaxArtifactsBytes-total)
		switch {
		case budget <= 0:
			art.Truncated = art.Size > 0
		case fi.Size > protocol.DefaultMaxFileBytes:
			art.Truncated = true
			art.Error = fmt.Sprintf("larger than the runtime's read limit (%d bytes)", protocol.DefaultMaxFileBytes)
		default:
			data, err := readFile(ctx, cl, p)
			if err != nil && runtimeInfra(err) {
				return out, err
			}
			if err != nil {
				art.Error = err.Error()
				break
			}
			if len(data) > budget {
				data, art.Truncated = data[:budget], true
			}
			art.Data = data
			total += len(data)
		}
		out = append(out, art)
	}
	return out, nil
}

// runtimeInfra reports whether a runtime call failed because the runtime
// could not be reached or answered nothing (the connection broke, a call
// timed out), rather than refusing the operation (a bad path, a file
// missing, a program not found), which is the case's own doing.
func runtimeInfra(err error) bool {
	switch errs.KindOf(err) {
	case errs.Invalid, errs.NotFound, errs.TooLarge, errs.Forbidden, errs.Precondition, errs.Conflict:
		return false
	}
	return true
}

// envSecrets are the values of a case's env, which may hold keys: they
// are removed from reasons bound for history and logs. Values shorter
// than 4 bytes are left (see provisionSecrets).
func envSecrets(env map[string]string) []string {
	var out []string
	for _, v := range env {
		if len(v) >= 4 {
			out = append(out, v)
		}
	}
	return out
}

// redactAll removes every secret from msg.
func redactAll(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = activities.Redact(msg, s)
	}
	return msg
}

// lastBytes returns the end of s, at most n bytes, starting on a UTF-8
// boundary.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for i := 0; i < len(s) && i < 4; i++ {
		if !isContinuation(s[i]) {
			return s[i:]
		}
	}
	return strings.ToValidUTF8(s, "")
}

func isContinuation(b byte) bool { return b&0xC0 == 0x80 }

// outputTail keeps the last max bytes of a command's output. Unlike
// TailBuffer it trims only when it holds twice that, so a long output
// costs amortised constant time per byte.
type outputTail struct {
	max int
	buf []byte
}

func (o *outputTail) Write(p []byte) (int, error) {
	o.buf = append(o.buf, p...)
	if len(o.buf) > 2*o.max {
		o.buf = append(o.buf[:0], o.buf[len(o.buf)-o.max:]...)
	}
	return len(p), nil
}

// String returns the last max bytes written.
func (o *outputTail) String() string {
	if len(o.buf) > o.max {
		return string(o.buf[len(o.buf)-o.max:])
	}
	return string(o.buf)
}

// hostProcesses reports whether the workspace's commands run as host
// processes (no isolation), where a reset kills only what is still
// running under the runtime. When the backend cannot be resolved it
// answers true: the case then cleans up after itself, at the cost of an
// exec.
func (a *Activities) hostProcesses(ctx context.Context, ws *wire.Workspace) bool {
	b, err := activities.BackendFor(ctx, a.Store, a.Backends, ws)
	return err != nil || b.Capabilities().Isolation == "none"
}
