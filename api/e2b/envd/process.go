package envd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/primerhq/primer/api/e2b/connect"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// processGrace is how much longer than a Start's Connect-Timeout-Ms its
// process may run: the stream ends first with deadline_exceeded (the SDK's
// TimeoutError), then the runtime kills the process, as envd does.
const processGrace = time.Second

func (h *handler) registerProcess() {
	keepalive := func() *ProcessResponse { return &ProcessResponse{Event: &ProcessEvent{Keepalive: &Empty{}}} }
	h.mux.Handle("process.Process/List", connect.Unary(h.list))
	h.mux.Handle("process.Process/Start", connect.ServerStream(h.start, keepalive))
	h.mux.Handle("process.Process/Connect", connect.ServerStream(h.connect, keepalive))
	h.mux.Handle("process.Process/Update", connect.Unary(h.update))
	h.mux.Handle("process.Process/SendInput", connect.Unary(h.sendInput))
	h.mux.Handle("process.Process/StreamInput", connect.ClientStream(h.streamInput))
	h.mux.Handle("process.Process/SendSignal", connect.Unary(h.sendSignal))
	h.mux.Handle("process.Process/CloseStdin", connect.Unary(h.closeStdin))
}

// infoOf describes a runtime process as envd's ProcessInfo. The
// environment is not kept by the runtime (it may hold secrets): envs is
// empty.
func infoOf(p protocol.ProcInfo) *ProcessInfo {
	cfg := &ProcessConfig{Args: []string{}, Envs: map[string]string{}}
	if len(p.Args) > 0 {
		cfg.Cmd, cfg.Args = p.Args[0], append(cfg.Args, p.Args[1:]...)
	}
	if p.Cwd != "" {
		cwd := p.Cwd
		cfg.Cwd = &cwd
	}
	out := &ProcessInfo{Config: cfg, PID: uint32(p.PID)}
	if p.Tag != "" {
		tag := p.Tag
		out.Tag = &tag
	}
	return out
}

// list answers the running processes.
func (h *handler) list(ctx context.Context, header http.Header, _ *Empty) (*ListResponse, error) {
	c, err := h.begin(ctx, header)
	if err != nil {
		return nil, err
	}
	procs, err := c.rt.ProcList(ctx)
	if err != nil {
		return nil, err
	}
	out := &ListResponse{Processes: []*ProcessInfo{}}
	for _, p := range procs {
		if p.Running {
			out.Processes = append(out.Processes, infoOf(p))
		}
	}
	return out, nil
}

// beginProc is begin, then the selected process's pid: the first steps of
// every call on one process.
func (h *handler) beginProc(ctx context.Context, header http.Header, sel *ProcessSelector) (*call, int, error) {
	c, err := h.begin(ctx, header)
	if err != nil {
		return nil, 0, err
	}
	pid, err := c.pidOf(ctx, sel)
	if err != nil {
		return nil, 0, err
	}
	return c, pid, nil
}

// pidOf resolves a selector to a pid; a tag names the running process
// with it.
func (c *call) pidOf(ctx context.Context, sel *ProcessSelector) (int, error) {
	switch {
	case sel == nil:
		return 0, connect.NewError(connect.InvalidArgument, "process: a pid or a tag is required")
	case sel.PID != nil:
		return int(*sel.PID), nil
	case sel.Tag != nil:
		procs, err := c.rt.ProcList(ctx)
		if err != nil {
			return 0, err
		}
		for _, p := range procs {
			if p.Tag == *sel.Tag && p.Running {
				return p.PID, nil
			}
		}
		return 0, connect.NewError(connect.NotFound, fmt.Sprintf("process with tag %q not found", *sel.Tag))
	}
	return 0, connect.NewError(connect.InvalidArgument, "process: a pid or a tag is required")
}

// sandboxEnv is the env a process of ws starts with: the sandbox's own
// (the create's envVars, wire.Workspace.Env), and the request's over it,
// as /v1 exec and processes do.
func sandboxEnv(ws *wire.Workspace, env map[string]string) map[string]string {
	if ws == nil || len(ws.Env) == 0 {
		return env
	}
	out := make(map[string]string, len(ws.Env)+len(env))
	for k, v := range ws.Env {
		out[k] = v
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// notFound words a runtime's unknown-pid error as envd does.
func notFound(err error, pid int) error {
	if errs.Is(err, errs.NotFound) {
		return connect.NewError(connect.NotFound, fmt.Sprintf("process with pid %d not found", pid))
	}
	return err
}

// start runs a process that outlives the call and streams it: a start
// event with its pid, its output, then its end. The stream's end (the
// client gone) leaves the process running; Connect-Timeout-Ms bounds it.
func (h *handler) start(ctx context.Context, header http.Header, req *StartRequest, s *connect.Sender[ProcessResponse]) error {
	c, err := h.begin(ctx, header)
	if err != nil {
		return err
	}
	if req.Process == nil || req.Process.Cmd == "" {
		return connect.NewError(connect.InvalidArgument, "process.cmd is required")
	}
	pr := client.ProcRequest{
		Args:      append([]string{req.Process.Cmd}, req.Process.Args...),
		Env:       sandboxEnv(c.sb.Workspace, req.Process.Envs),
		StdinOpen: req.Stdin == nil || *req.Stdin,
	}
	if c.sb.WholeFS {
		// The runtime confining paths to a workspace runs as its own user.
		pr.User = c.user
		// Without a cwd the runtime starts in the user's home as its
		// passwd entry says.
		if req.Process.Cwd != nil && *req.Process.Cwd != "" {
			if pr.Cwd, err = c.path(*req.Process.Cwd); err != nil {
				return err
			}
		}
	} else if req.Process.Cwd != nil && *req.Process.Cwd != "" {
		if _, err := c.path(*req.Process.Cwd); err != nil {
			return err
		}
	}
	if req.Tag != nil {
		pr.Tag = *req.Tag
	}
	if req.PTY != nil && req.PTY.Size != nil {
		pr.PTY = &protocol.PTYSize{Cols: uint16(req.PTY.Size.Cols), Rows: uint16(req.PTY.Size.Rows)}
	}
	if ms, err := strconv.ParseInt(header.Get(connect.HeaderTimeout), 10, 64); err == nil && ms > 0 {
		pr.Timeout = time.Duration(ms)*time.Millisecond + processGrace
	}
	out := newOutput(s, pr.PTY != nil)
	p, err := c.rt.ProcStartWatch(ctx, pr, client.StartOptions{Stdout: out.writer(0), Stderr: out.writer(1)})
	if err != nil {
		out.open()
		return err
	}
	return h.follow(ctx, p, s, out)
}

// connect streams a running process from now on: a start event, its output,
// its end.
func (h *handler) connect(ctx context.Context, header http.Header, req *SelectRequest, s *connect.Sender[ProcessResponse]) error {
	c, err := h.begin(ctx, header)
	if err != nil {
		return err
	}
	pid, err := c.pidOf(ctx, req.Process)
	if err != nil {
		return err
	}
	// Whether its output is a terminal's is known before it flows.
	procs, err := c.rt.ProcList(ctx)
	if err != nil {
		return err
	}
	pty := false
	for _, p := range procs {
		if p.PID == pid {
			pty = p.PTY != nil
		}
	}
	out := newOutput(s, pty)
	p, err := c.rt.ProcConnect(ctx, pid, client.StartOptions{Stdout: out.writer(0), Stderr: out.writer(1)})
	if err != nil {
		out.open()
		return notFound(err, pid)
	}
	return h.follow(ctx, p, s, out)
}

// follow sends the start event, lets the output flow, and sends the end.
func (h *handler) follow(ctx context.Context, p *client.Process, s *connect.Sender[ProcessResponse], out *output) error {
	err := out.send(&ProcessEvent{Start: &StartEvent{PID: uint32(p.PID())}})
	if err != nil {
		out.err = err
	}
	out.open()
	if err != nil {
		return err
	}
	res, err := p.Wait()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if err := out.failed(); err != nil {
		return err
	}
	// The end leaves with the end-stream message, in one write.
	return out.s.SendLast(&ProcessResponse{Event: &ProcessEvent{End: endOf(res)}})
}

// endOf describes an exit as envd's EndEvent, which is Go's
// os.ProcessState: a process ended by a signal has exit code -1 and
// exited false; error is the wait's error ("exit status 3", "signal:
// killed"), absent after a clean exit.
func endOf(res protocol.ExecResult) *EndEvent {
	end := &EndEvent{ExitCode: int32(res.ExitCode), Exited: true, Status: "exit status " + strconv.Itoa(res.ExitCode)}
	if res.Signal != "" || res.TimedOut || res.Canceled {
		sig := syscall.SIGKILL
		if n := unix.SignalNum(res.Signal); n != 0 {
			sig = n
		} else if n := unix.SignalNum("SIG" + strings.TrimPrefix(res.Signal, "SIG")); n != 0 {
			sig = n
		}
		end = &EndEvent{ExitCode: -1, Exited: false, Status: "signal: " + sig.String()}
	}
	if end.ExitCode != 0 {
		msg := end.Status
		end.Error = &msg
	}
	return end
}

// output turns a process's writes into data events, in order (the runtime
// client calls the writers from one goroutine).
type output struct {
	s   *connect.Sender[ProcessResponse]
	pty bool
	err error // the first failed send: the client is gone
	// ready is closed once the start event is sent: output can reach the
	// writers before the start's answer does, and must follow it.
	ready chan struct{}
	once  sync.Once
}

func newOutput(s *connect.Sender[ProcessResponse], pty bool) *output {
	return &output{s: s, pty: pty, ready: make(chan struct{})}
}

// open lets the output flow.
func (o *output) open() { o.once.Do(func() { close(o.ready) }) }

func (o *output) send(ev *ProcessEvent) error {
	return o.s.Send(&ProcessResponse{Event: ev})
}

func (o *output) failed() error { return o.err }

// writer is the writer of stream i (0 stdout, 1 stderr).
func (o *output) writer(i int) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		<-o.ready
		if o.err != nil {
			return len(b), nil
		}
		data := &DataEvent{}
		switch {
		case o.pty:
			data.PTY = b
		case i == 0:
			data.Stdout = b
		default:
			data.Stderr = b
		}
		// b is the client's to reuse once Write returns; Send encodes it now.
		if err := o.send(&ProcessEvent{Data: data}); err != nil {
			o.err = err
		}
		return len(b), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// update resizes a process's terminal.
func (h *handler) update(ctx context.Context, header http.Header, req *UpdateRequest) (*Empty, error) {
	c, pid, err := h.beginProc(ctx, header, req.Process)
	if err != nil {
		return nil, err
	}
	if req.PTY == nil || req.PTY.Size == nil {
		return &Empty{}, nil
	}
	err = c.rt.ProcResize(ctx, pid, uint16(req.PTY.Size.Cols), uint16(req.PTY.Size.Rows))
	if err != nil {
		return nil, notFound(err, pid)
	}
	return &Empty{}, nil
}

// input writes to a process's stdin or terminal.
func (c *call) input(ctx context.Context, pid int, in *ProcessInput) error {
	if in == nil {
		return nil
	}
	data := in.Stdin
	if in.PTY != nil {
		data = in.PTY
	}
	if len(data) == 0 {
		return nil
	}
	return notFound(c.rt.ProcInput(ctx, pid, data), pid)
}

func (h *handler) sendInput(ctx context.Context, header http.Header, req *SendInputRequest) (*Empty, error) {
	c, pid, err := h.beginProc(ctx, header, req.Process)
	if err != nil {
		return nil, err
	}
	if err := c.input(ctx, pid, req.Input); err != nil {
		return nil, err
	}
	return &Empty{}, nil
}

// streamInput takes a start message naming the process, then its input in
// order.
func (h *handler) streamInput(ctx context.Context, header http.Header, in *connect.Receiver[StreamInputRequest]) (*Empty, error) {
	c, err := h.begin(ctx, header)
	if err != nil {
		return nil, err
	}
	pid := -1
	for {
		msg, err := in.Receive()
		if errors.Is(err, io.EOF) {
			return &Empty{}, nil
		}
		if err != nil {
			return nil, err
		}
		switch {
		case msg.Start != nil:
			if pid, err = c.pidOf(ctx, msg.Start.Process); err != nil {
				return nil, err
			}
		case msg.Data != nil:
			if pid < 0 {
				return nil, connect.NewError(connect.FailedPrecondition, "stream input: data before the start message")
			}
			if err := c.input(ctx, pid, msg.Data.Input); err != nil {
				return nil, err
			}
		}
	}
}

// signals are the signals envd's Signal enum names.
var signals = map[Signal]string{
	"SIGNAL_SIGKILL": "SIGKILL",
	"SIGNAL_SIGTERM": "SIGTERM",
}

func (h *handler) sendSignal(ctx context.Context, header http.Header, req *SendSignalRequest) (*Empty, error) {
	c, err := h.begin(ctx, header)
	if err != nil {
		return nil, err
	}
	sig, ok := signals[req.Signal]
	if !ok {
		return nil, connect.NewError(connect.InvalidArgument, fmt.Sprintf("signal %q: want SIGNAL_SIGKILL or SIGNAL_SIGTERM", req.Signal))
	}
	pid, err := c.pidOf(ctx, req.Process)
	if err != nil {
		return nil, err
	}
	if err := c.rt.ProcSignal(ctx, pid, sig); err != nil {
		if errs.Is(err, errs.Precondition) {
			// It has ended: envd no longer knows it, and the SDK's kill
			// answers false on not_found.
			err = errs.Wrap(errs.NotFound, err)
		}
		return nil, notFound(err, pid)
	}
	return &Empty{}, nil
}

func (h *handler) closeStdin(ctx context.Context, header http.Header, req *SelectRequest) (*Empty, error) {
	c, pid, err := h.beginProc(ctx, header, req.Process)
	if err != nil {
		return nil, err
	}
	if err := c.rt.ProcCloseStdin(ctx, pid); err != nil {
		return nil, notFound(err, pid)
	}
	return &Empty{}, nil
}
