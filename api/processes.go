package api

// Processes of a workspace that outlive the request that started them
// (/v1/workspaces/{id}/processes): background commands and terminals. The
// runtime owns them (its proc.* operations); these handlers translate. A
// viewer key may list them but not start, feed, signal or attach to them.

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// maxAttachMessage bounds one message a client sends on an attach stream.
const maxAttachMessage = 1 << 20

// maxTagLen bounds a process tag.
const maxTagLen = 128

func (s *server) startProcess(c *gin.Context) {
	var spec wire.ProcessSpec
	if err := s.decodeJSON(c, &spec, "", false); err != nil {
		s.fail(c, err)
		return
	}
	req, err := processRequest(&spec)
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
	info, err := cl.ProcStart(c.Request.Context(), req)
	if err != nil {
		s.fail(c, execError(ws.ID, err))
		return
	}
	c.Header("Location", "/v1/workspaces/"+ws.ID+"/processes/"+strconv.Itoa(info.PID))
	c.JSON(http.StatusCreated, processOf(info))
}

// processRequest checks the spec with exec's rules and returns the
// runtime's request. Unlike exec, no timeout is the default.
func processRequest(spec *wire.ProcessSpec) (client.ProcRequest, error) {
	x, err := execRequest(&wire.ExecSpec{Command: spec.Command, Env: spec.Env, Cwd: spec.Cwd, Stdin: spec.Stdin, Timeout: spec.Timeout})
	if err != nil {
		return client.ProcRequest{}, err
	}
	if spec.Timeout == "" {
		x.Timeout = 0
	}
	if len(spec.Tag) > maxTagLen || strings.IndexByte(spec.Tag, 0) >= 0 {
		return client.ProcRequest{}, errs.Field("tag", "tag: at most %d bytes, without NUL", maxTagLen)
	}
	req := client.ProcRequest{
		Args: x.Args, Env: x.Env, Cwd: x.Cwd, Stdin: x.Stdin, Timeout: x.Timeout,
		Tag: spec.Tag, StdinOpen: spec.StdinOpen, User: spec.User,
	}
	if spec.PTY != nil {
		size, err := terminalSize("pty", *spec.PTY)
		if err != nil {
			return client.ProcRequest{}, err
		}
		req.PTY = &size
	}
	return req, nil
}

func terminalSize(field string, t wire.TerminalSize) (protocol.PTYSize, error) {
	if t.Cols < 1 || t.Cols > 0xffff || t.Rows < 1 || t.Rows > 0xffff {
		return protocol.PTYSize{}, errs.Field(field, "%s: cols and rows must be between 1 and 65535", field)
	}
	return protocol.PTYSize{Cols: uint16(t.Cols), Rows: uint16(t.Rows)}, nil
}

// processOf is the API's view of a runtime process.
func processOf(info protocol.ProcInfo) wire.Process {
	p := wire.Process{
		PID: info.PID, Tag: info.Tag, Command: info.Args, Cwd: info.Cwd, User: info.User,
		StdinOpen: info.StdinOpen, StartedAt: info.StartedAt, Running: info.Running,
	}
	if info.PTY != nil {
		p.PTY = &wire.TerminalSize{Cols: int(info.PTY.Cols), Rows: int(info.PTY.Rows)}
	}
	if e := info.Exit; e != nil {
		p.Exit = &wire.ExecExit{ExitCode: e.ExitCode, DurationMS: int64(e.DurationMS), TimedOut: e.TimedOut, Canceled: e.Canceled, Signal: e.Signal}
	}
	return p
}

func (s *server) listProcesses(c *gin.Context) {
	_, cl, err := s.runtimeClient(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	list, err := cl.ProcList(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	out := wire.ProcessList{Items: make([]wire.Process, 0, len(list))}
	for _, p := range list {
		out.Items = append(out.Items, processOf(p))
	}
	c.JSON(http.StatusOK, out)
}

// processTarget resolves the workspace's runtime and the :pid of the path.
func (s *server) processTarget(c *gin.Context) (*wire.Workspace, *client.Client, int, error) {
	ws, cl, err := s.runtimeClient(c)
	if err != nil {
		return nil, nil, 0, err
	}
	pid, err := strconv.Atoi(c.Param("pid"))
	if err != nil || pid <= 0 {
		return nil, nil, 0, errs.Field("pid", "pid %q: not a process id", c.Param("pid"))
	}
	return ws, cl, pid, nil
}

// findProcess returns process pid of the workspace's runtime.
func findProcess(ctx context.Context, wsID string, cl *client.Client, pid int) (protocol.ProcInfo, error) {
	list, err := cl.ProcList(ctx)
	if err != nil {
		return protocol.ProcInfo{}, err
	}
	for _, p := range list {
		if p.PID == pid {
			return p, nil
		}
	}
	return protocol.ProcInfo{}, errs.E(errs.NotFound, "workspace %s: process %d not found", wsID, pid)
}

func (s *server) getProcess(c *gin.Context) {
	ws, cl, pid, err := s.processTarget(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	info, err := findProcess(c.Request.Context(), ws.ID, cl, pid)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, processOf(info))
}

// processOp is one of the small operations on a process: its body decoded
// into a fresh T, then the runtime call.
func processOp[T any](s *server, optional bool, call func(ctx context.Context, cl *client.Client, pid int, body *T) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		var body T
		if err := s.decodeJSON(c, &body, "", optional); err != nil {
			s.fail(c, err)
			return
		}
		ws, cl, pid, err := s.processTarget(c)
		if err != nil {
			s.fail(c, err)
			return
		}
		if err := call(c.Request.Context(), cl, pid, &body); err != nil {
			s.fail(c, processError(ws.ID, pid, err))
			return
		}
		c.Status(http.StatusNoContent)
	}
}

// processError names the workspace and process in a runtime's refusal.
func processError(wsID string, pid int, err error) error {
	return errs.Within("workspace "+wsID+": process "+strconv.Itoa(pid), err)
}

func (s *server) processInput() gin.HandlerFunc {
	return processOp(s, false, func(ctx context.Context, cl *client.Client, pid int, in *wire.ProcessInput) error {
		return cl.ProcInput(ctx, pid, []byte(in.Data))
	})
}

func (s *server) processSignal() gin.HandlerFunc {
	return processOp(s, false, func(ctx context.Context, cl *client.Client, pid int, in *wire.ProcessSignal) error {
		if in.Signal == "" {
			return errs.Field("signal", "signal: required (a name: TERM, KILL, INT, ...)")
		}
		return cl.ProcSignal(ctx, pid, in.Signal)
	})
}

func (s *server) processResize() gin.HandlerFunc {
	return processOp(s, false, func(ctx context.Context, cl *client.Client, pid int, in *wire.TerminalSize) error {
		size, err := terminalSize("cols", *in)
		if err != nil {
			return err
		}
		return cl.ProcResize(ctx, pid, size.Cols, size.Rows)
	})
}

func (s *server) processCloseStdin() gin.HandlerFunc {
	return processOp(s, true, func(ctx context.Context, cl *client.Client, pid int, _ *struct{}) error {
		return cl.ProcCloseStdin(ctx, pid)
	})
}

// attachProcess serves GET .../processes/{pid}/attach: a WebSocket that
// carries the process's output from now on (?replay=true: its last 16 KiB
// first) and its exit (AttachMessage,
// server to client) and input, resizes, signals and the close of stdin
// (client to server). Closing the socket detaches; the process runs on.
func (s *server) attachProcess(c *gin.Context) {
	ws, cl, pid, err := s.processTarget(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if callerOf(c).Role == wire.RoleViewer {
		s.fail(c, errs.E(errs.Forbidden, "api key %s: role viewer is read only: attach sends input", callerOf(c).KeyID))
		return
	}
	if !isWebSocket(c.Request) {
		s.fail(c, errs.E(errs.Invalid, "workspace %s: process %d: attach is a WebSocket: send an upgrade request", ws.ID, pid))
		return
	}
	info, err := findProcess(c.Request.Context(), ws.ID, cl, pid)
	if err != nil {
		s.fail(c, err)
		return
	}
	// An attach is a stream: it counts against the key's and tenant's caps.
	release, ok := s.openStream(c)
	if !ok {
		return
	}
	defer release()
	conn, err := websocket.Accept(c.Writer, c.Request, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return // Accept answered the client
	}
	conn.SetReadLimit(maxAttachMessage)
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	// Input on the stream is activity: it moves the idle deadline as a
	// REST call would, so a workspace is not deleted under a typing user.
	a := &attachment{conn: conn, ctx: ctx, touch: func() { s.touch(ctx, ws) }}
	stdout := protocol.StreamStdout
	if info.PTY != nil {
		stdout = protocol.StreamPTY
	}
	p, err := cl.ProcConnect(ctx, pid, client.StartOptions{
		Stdout: attachWriter{a, stdout}, Stderr: attachWriter{a, protocol.StreamStderr},
		Replay: c.Query("replay") == "true",
	})
	if err != nil {
		a.fail(processError(ws.ID, pid, err))
		return
	}
	go a.readInput(cancel, cl, pid)
	res, err := p.Wait()
	if err != nil {
		// The client left (the watch detached) or the runtime did.
		if ctx.Err() == nil {
			a.fail(processError(ws.ID, pid, err))
		}
		_ = conn.CloseNow()
		return
	}
	_ = a.send(wire.AttachMessage{Type: wire.AttachExit, Exit: &wire.ExecExit{
		ExitCode: res.ExitCode, DurationMS: res.Duration.Milliseconds(), TimedOut: res.TimedOut, Canceled: res.Canceled, Signal: res.Signal,
	}})
	_ = conn.Close(websocket.StatusNormalClosure, "process exited")
}

func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// attachment is one attach stream's socket; writes come from the output
// delivery, the input loop (errors) and the handler (the exit).
type attachment struct {
	conn  *websocket.Conn
	ctx   context.Context
	touch func() // records activity on the workspace (input loop only)
	mu    sync.Mutex
}

func (a *attachment) send(m wire.AttachMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn.Write(a.ctx, websocket.MessageText, b)
}

// fail sends err as the stream's last message and closes it.
func (a *attachment) fail(err error) {
	_, env := errorEnvelope(err)
	_ = a.send(wire.AttachMessage{Type: wire.AttachError, Error: &env.Error})
	_ = a.conn.Close(websocket.StatusNormalClosure, "error")
}

// readInput relays the client's messages to the process until the socket
// closes, then cancels the watch. A refused message is answered with an
// error message; the stream goes on.
func (a *attachment) readInput(cancel context.CancelFunc, cl *client.Client, pid int) {
	defer cancel()
	for {
		_, data, err := a.conn.Read(a.ctx)
		if err != nil {
			return
		}
		a.touch()
		var m wire.AttachMessage
		if err := json.Unmarshal(data, &m); err != nil {
			err = errs.E(errs.Invalid, "attach: malformed message: %v", err)
			a.reportErr(err)
			continue
		}
		switch m.Type {
		case wire.AttachInput:
			err = cl.ProcInput(a.ctx, pid, m.Data)
		case wire.AttachResize:
			var size protocol.PTYSize
			if size, err = terminalSize("cols", wire.TerminalSize{Cols: m.Cols, Rows: m.Rows}); err == nil {
				err = cl.ProcResize(a.ctx, pid, size.Cols, size.Rows)
			}
		case wire.AttachCloseStdin:
			err = cl.ProcCloseStdin(a.ctx, pid)
		case wire.AttachSignal:
			err = cl.ProcSignal(a.ctx, pid, m.Signal)
		default:
			err = errs.Field("type", "attach: unknown message type %q", m.Type)
		}
		if err != nil {
			a.reportErr(err)
		}
	}
}

func (a *attachment) reportErr(err error) {
	_, env := errorEnvelope(err)
	_ = a.send(wire.AttachMessage{Type: wire.AttachError, Error: &env.Error})
}

// attachWriter sends one output stream as output messages.
type attachWriter struct {
	a      *attachment
	stream string
}

func (w attachWriter) Write(b []byte) (int, error) {
	if err := w.a.send(wire.AttachMessage{Type: wire.AttachOutput, Stream: w.stream, Data: b}); err != nil {
		return 0, err
	}
	return len(b), nil
}
