package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/sessiontool"
	"github.com/primerhq/primer/wire"
)

// Exec timeouts: the default when the request names none, and the most a
// request may ask for.
const (
	DefaultExecTimeout = 10 * time.Minute
	MaxExecTimeout     = 24 * time.Hour
)

// execRequest checks the spec and returns the runtime's exec request.
func execRequest(e *wire.ExecSpec) (protocol.ExecRequest, error) {
	if len(e.Command) == 0 || e.Command[0] == "" {
		return protocol.ExecRequest{}, errs.Field("command", "command: required, a non-empty list whose first item names the program")
	}
	for i, a := range e.Command {
		if strings.IndexByte(a, 0) >= 0 {
			return protocol.ExecRequest{}, errs.Field("command", "command[%d]: contains a NUL byte", i)
		}
	}
	// An absolute cwd goes to the runtime as it is: only the runtime knows
	// whether it serves the whole sandbox, and refuses it when not.
	cwd, abs, err := absPath("cwd", e.Cwd)
	if err != nil {
		return protocol.ExecRequest{}, err
	}
	if abs {
		e.Cwd = ""
	}
	req, err := sessiontool.ExecOptions(e.Env, e.Cwd, e.Timeout, sessiontool.Limits{DefaultExecTimeout: DefaultExecTimeout, MaxExecTimeout: MaxExecTimeout})
	if err != nil {
		return protocol.ExecRequest{}, err
	}
	if abs {
		req.Cwd = cwd
	}
	if err := checkUserName(e.User); err != nil {
		return protocol.ExecRequest{}, err
	}
	req.User = e.User
	req.Args = e.Command
	if e.Stdin != "" {
		req.Stdin = []byte(e.Stdin)
	}
	return req, nil
}

// execError gives an exec failure from the runtime its API meaning: a
// program or cwd that does not exist is bad input, not a missing resource.
func execError(wsID string, err error) error {
	if errs.Is(err, errs.Invalid) && strings.Contains(err.Error(), "exec: cwd") {
		// The runtime's refusal of a cwd (an absolute one where it serves
		// the workspace's directory only) names the request's field.
		return &errs.Error{Kind: errs.Invalid, Field: "cwd", Msg: "workspace " + wsID + ": " + err.Error()}
	}
	if errs.Is(err, errs.NotFound) {
		return errs.E(errs.Invalid, "workspace %s: %w", wsID, err)
	}
	return fmt.Errorf("workspace %s: %w", wsID, err)
}

func (s *server) exec(c *gin.Context) {
	var spec wire.ExecSpec
	if err := s.decodeJSON(c, &spec, "", false); err != nil {
		s.fail(c, err)
		return
	}
	req, err := execRequest(&spec)
	if err != nil {
		s.fail(c, err)
		return
	}
	ws, cl, err := s.runtimeClient(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	req.Env = withWorkspaceEnv(ws, req.Env)
	ctx := c.Request.Context()
	if spec.Stream || strings.Contains(c.GetHeader("Accept"), "application/x-ndjson") {
		s.execStream(c, ws.ID, cl, req)
		return
	}
	stdout := sessiontool.NewCapped(s.maxExecOutput)
	stderr := sessiontool.NewCapped(s.maxExecOutput)
	res, err := cl.Exec(ctx, req, stdout, stderr)
	if err != nil {
		s.fail(c, execError(ws.ID, err))
		return
	}
	c.JSON(http.StatusOK, wire.ExecResponse{
		ExitCode:   res.ExitCode,
		Stdout:     stdout.String(),
		Stderr:     stderr.String(),
		DurationMS: res.Duration.Milliseconds(),
		TimedOut:   res.TimedOut,
		Canceled:   res.Canceled,
		Signal:     res.Signal,
		Truncated:  stdout.Truncated() || stderr.Truncated(),
	})
}

// execStream runs the command and writes NDJSON: output chunks as they come,
// then one exit (or error) line. The request's context is the command's: a
// client that hangs up cancels it in the runtime.
func (s *server) execStream(c *gin.Context, wsID string, cl *client.Client, req protocol.ExecRequest) {
	c.Header("Content-Type", "application/x-ndjson")
	c.Header("Cache-Control", "no-cache")
	c.Header("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	c.Writer.WriteHeaderNow()
	c.Writer.Flush()

	out := &ndjson{c: c}
	stdout := &streamWriter{out: out, stream: protocol.StreamStdout}
	stderr := &streamWriter{out: out, stream: protocol.StreamStderr}
	res, err := cl.Exec(c.Request.Context(), req, stdout, stderr)
	stdout.flushTail()
	stderr.flushTail()
	if err != nil {
		_, env := errorEnvelope(execError(wsID, err))
		out.line(env)
		return
	}
	out.line(map[string]wire.ExecExit{"exit": {
		ExitCode:   res.ExitCode,
		DurationMS: res.Duration.Milliseconds(),
		TimedOut:   res.TimedOut,
		Canceled:   res.Canceled,
		Signal:     res.Signal,
	}})
}

// ndjson writes one JSON value per line and flushes it, safely from the
// stdout and stderr goroutines at once.
type ndjson struct {
	mu sync.Mutex
	c  *gin.Context
}

func (n *ndjson) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.c.Writer.Write(b); err != nil {
		return err
	}
	n.c.Writer.Flush()
	return nil
}

// streamWriter turns one output stream into chunk lines. Output is carried
// as JSON strings, so a UTF-8 character split across two writes is held
// back until it is whole instead of becoming two replacement characters.
type streamWriter struct {
	out    *ndjson
	stream string
	tail   []byte
}

func (w *streamWriter) Write(p []byte) (int, error) {
	n := len(p)
	buf := p
	if len(w.tail) > 0 {
		buf = append(w.tail, p...)
		w.tail = nil
	}
	cut := incompleteSuffix(buf)
	if cut > 0 {
		w.tail = append([]byte(nil), buf[len(buf)-cut:]...)
		buf = buf[:len(buf)-cut]
	}
	if len(buf) == 0 {
		return n, nil
	}
	if err := w.out.line(wire.ExecChunk{Stream: w.stream, Data: string(buf)}); err != nil {
		return 0, err
	}
	return n, nil
}

// flushTail writes bytes still held back when the stream ends.
func (w *streamWriter) flushTail() {
	if len(w.tail) > 0 {
		_ = w.out.line(wire.ExecChunk{Stream: w.stream, Data: string(w.tail)})
		w.tail = nil
	}
}

// incompleteSuffix returns how many bytes at the end of b are the start of
// a UTF-8 character whose remaining bytes have not arrived yet.
func incompleteSuffix(b []byte) int {
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return 0 // ASCII: complete
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}
