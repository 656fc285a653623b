package client

// Processes that outlive the connection (the runtime's proc.* ops): started
// here, they run on when this client closes, and any client may list them,
// watch them again, feed their stdin or terminal, signal and resize them.

import (
	"context"
	"io"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// ProcRequest is a process to start with ProcStart or ProcStartWatch.
type ProcRequest struct {
	// Args is the program and its arguments; use ["sh", "-c", script] for a
	// shell.
	Args []string
	// Env is added to the workspace environment.
	Env map[string]string
	// Cwd is the working directory; empty means the workspace root.
	Cwd string
	// User is the sandbox user the process runs as; empty means the
	// runtime's own.
	User string
	// Tag names the process for ProcConnectTag; no two running processes
	// share one.
	Tag string
	// Stdin is written to the process's stdin (or terminal) first.
	Stdin []byte
	// StdinOpen keeps stdin open for ProcInput until ProcCloseStdin. A
	// process with a terminal always takes input.
	StdinOpen bool
	// PTY, when set, gives the process a terminal of this size; its output
	// is then one stream, delivered to the stdout writer.
	PTY *protocol.PTYSize
	// Timeout kills the process group after this long; zero means no limit.
	Timeout time.Duration
}

func (r ProcRequest) params(stream bool) (*protocol.ExecParams, error) {
	if len(r.Args) == 0 || r.Args[0] == "" {
		return nil, errs.Field("exec.args", "proc.start: args must name a program")
	}
	if err := checkSize("proc.start "+r.Args[0]+": stdin", len(r.Stdin)); err != nil {
		return nil, err
	}
	return &protocol.ExecParams{
		Args:      r.Args,
		Env:       r.Env,
		Cwd:       r.Cwd,
		User:      r.User,
		Stdin:     r.Stdin,
		StdinOpen: r.StdinOpen,
		TimeoutMS: durationMS(r.Timeout),
		Stream:    stream,
		Tag:       r.Tag,
		PTY:       r.PTY,
	}, nil
}

// ProcStart starts a process that outlives this connection and returns its
// description once it runs (a missing program fails here). Its output is
// dropped until someone watches it (ProcConnect).
func (c *Client) ProcStart(ctx context.Context, req ProcRequest) (protocol.ProcInfo, error) {
	var info protocol.ProcInfo
	x, err := req.params(false)
	if err != nil {
		return info, err
	}
	err = c.do(ctx, &protocol.Request{Op: protocol.OpProcStart, Exec: x}, &info)
	return info, err
}

// ProcStartWatch starts a process that outlives this connection and
// watches it from its first output, in one round trip. The watch is like
// Start's Process: output to the writers of opts (a nil writer collects
// into Wait's result), Stdin, Signal, and Wait for the exit; but when ctx
// ends only the watch stops (Wait returns an errs.Canceled or errs.Timeout
// error) and the process runs on, as it does when the connection closes.
func (c *Client) ProcStartWatch(ctx context.Context, req ProcRequest, opts StartOptions) (*Process, error) {
	x, err := req.params(true)
	if err != nil {
		return nil, err
	}
	return c.watch(ctx, "proc.start "+req.Args[0], opts, &protocol.Request{Op: protocol.OpProcStart, Exec: x})
}

// ProcConnect watches the process with pid from now on: its output from
// now on, then its exit (at once for a process that ended recently). Like
// ProcStartWatch, ctx's end stops the watch only. Several watches of one
// process may run at once, on any connections.
func (c *Client) ProcConnect(ctx context.Context, pid int, opts StartOptions) (*Process, error) {
	return c.watch(ctx, "proc.connect", opts, &protocol.Request{Op: protocol.OpProcConnect, PID: pid, Replay: opts.Replay})
}

// ProcConnectTag is ProcConnect for the process tagged tag: the running
// one, else the one that ended last.
func (c *Client) ProcConnectTag(ctx context.Context, tag string, opts StartOptions) (*Process, error) {
	return c.watch(ctx, "proc.connect", opts, &protocol.Request{Op: protocol.OpProcConnect, Tag: tag, Replay: opts.Replay})
}

func (c *Client) watch(ctx context.Context, name string, o StartOptions, r *protocol.Request) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, name)
	}
	p, err := c.launch(ctx, &Process{name: name, writers: [2]io.Writer{o.Stdout, o.Stderr}, detached: true}, true, r)
	if err != nil {
		return nil, err
	}
	select {
	case <-p.started:
	case <-p.done:
	}
	if p.startErr != nil {
		return nil, p.startErr
	}
	return p, nil
}

// Info is the process's description as proc.start or proc.connect gave it
// (for a watch of a process of proc.start).
func (p *Process) Info() protocol.ProcInfo { return p.info }

// Resize sets the terminal size of a watched process of proc.start.
func (p *Process) Resize(ctx context.Context, cols, rows uint16) error {
	return p.c.ProcResize(ctx, p.pid, cols, rows)
}

// detach ends a watch whose context ended: the runtime stops sending its
// frames, the process runs on.
func (p *Process) detach() {
	sctx, cancel := context.WithTimeout(context.Background(), cancelGrace)
	defer cancel()
	_ = p.c.do(sctx, &protocol.Request{Op: protocol.OpProcDetach, Target: p.id}, nil)
	p.c.unregister(p.id)
	p.finish(protocol.ExecResult{ExitCode: -1}, nil)
}

// ProcList returns the running processes of proc.start and those that
// ended recently, by pid.
func (c *Client) ProcList(ctx context.Context) ([]protocol.ProcInfo, error) {
	var res protocol.ProcListResult
	if err := c.do(ctx, &protocol.Request{Op: protocol.OpProcList}, &res); err != nil {
		return nil, err
	}
	return res.Processes, nil
}

// ProcInput writes data to the stdin or terminal of process pid and
// returns once the pipe or terminal took it.
func (c *Client) ProcInput(ctx context.Context, pid int, data []byte) error {
	for len(data) > 0 {
		chunk := data[:min(len(data), stdinChunk)]
		if err := c.do(ctx, &protocol.Request{Op: protocol.OpProcInput, PID: pid, Data: chunk}, nil); err != nil {
			return err
		}
		data = data[len(chunk):]
	}
	return nil
}

// ProcCloseStdin closes the stdin of process pid (end of file) after the
// input sent before. A process with a terminal has no stdin to close:
// send "\x04" instead.
func (c *Client) ProcCloseStdin(ctx context.Context, pid int) error {
	return c.do(ctx, &protocol.Request{Op: protocol.OpProcCloseStdin, PID: pid}, nil)
}

// ProcSignal sends a signal ("SIGTERM", "KILL"; empty means SIGKILL) to
// the process group of process pid.
func (c *Client) ProcSignal(ctx context.Context, pid int, signal string) error {
	return c.do(ctx, &protocol.Request{Op: protocol.OpProcSignal, PID: pid, Signal: signal}, nil)
}

// ProcResize sets the terminal size of process pid.
func (c *Client) ProcResize(ctx context.Context, pid int, cols, rows uint16) error {
	return c.do(ctx, &protocol.Request{Op: protocol.OpProcResize, PID: pid, Cols: cols, Rows: rows}, nil)
}
