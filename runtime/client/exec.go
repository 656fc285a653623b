package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// cancelGrace is how long a canceled exec waits for the runtime to report
// the killed process before giving up on it.
const cancelGrace = 5 * time.Second

// stdinChunk bounds one exec.stdin frame.
const stdinChunk = 1 << 20

// Exec runs a command to completion. Output goes to stdout and stderr as it
// is produced; a nil writer collects that stream into the result instead.
// A non-zero exit or a req.Timeout kill is a result, not an error. When ctx
// ends, the process group is killed and Exec returns the result marked
// Canceled with an errs.Canceled (or errs.Timeout) error.
//
// Writers are called from one goroutine per exec, in order; a slow writer
// holds back that exec's output only, which waits in memory meanwhile.
func (c *Client) Exec(ctx context.Context, req protocol.ExecRequest, stdout, stderr io.Writer) (protocol.ExecResult, error) {
	p, err := c.start(ctx, req, stdout, stderr, false)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	return p.Wait()
}

// StartOptions says where a started process's output goes. A nil writer
// collects that stream into the result of Wait.
type StartOptions struct {
	Stdout, Stderr io.Writer
	// Replay, for ProcConnect and ProcConnectTag, delivers the process's
	// recent output (up to protocol.ProcReplayBytes) before the new.
	Replay bool
}

// Start starts a command and returns once it runs, so a missing program
// fails here. Its stdin stays open after req.Stdin until Stdin().Close().
// Output streams to the writers of the first opts. The process is killed
// when ctx ends, as with exec.CommandContext.
func (c *Client) Start(ctx context.Context, req protocol.ExecRequest, opts ...StartOptions) (*Process, error) {
	var o StartOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	p, err := c.start(ctx, req, o.Stdout, o.Stderr, true)
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

// Process is a command running in the workspace.
type Process struct {
	c    *Client
	id   uint64
	name string // the program, for error messages
	ctx  context.Context

	writers [2]io.Writer
	bufs    [2]bytes.Buffer // collected output of streams without a writer
	deliver *outQueue       // nil when nothing needs a writer

	started     chan struct{} // closed on the exec's result frame
	startedOnce sync.Once
	startErr    error
	pid         int

	done     chan struct{} // closed once res and err are final
	finished sync.Once
	res      protocol.ExecResult
	err      error

	mu         sync.Mutex
	stopCancel func() bool // disarms the ctx watcher
	canceled   bool        // ctx ended: the result carries Canceled

	// detached is set for a watch of a process of proc.start (proc.go):
	// the end of ctx stops the watch, never the process, and stdin and
	// signals address the process by pid.
	detached bool
	info     protocol.ProcInfo // proc.start's or proc.connect's answer
}

func (c *Client) start(ctx context.Context, req protocol.ExecRequest, stdout, stderr io.Writer, stdinOpen bool) (*Process, error) {
	if len(req.Args) == 0 || req.Args[0] == "" {
		return nil, errs.Field("exec.args", "exec: args must name a program")
	}
	if err := checkSize("exec "+req.Args[0]+": stdin", len(req.Stdin)); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, "exec "+req.Args[0])
	}
	stream := stdout != nil || stderr != nil
	return c.launch(ctx, &Process{name: req.Args[0], writers: [2]io.Writer{stdout, stderr}}, stream, &protocol.Request{
		Op: protocol.OpExec, Exec: &protocol.ExecParams{
			Args:      req.Args,
			Env:       req.Env,
			Cwd:       req.Cwd,
			User:      req.User,
			Stdin:     req.Stdin,
			StdinOpen: stdinOpen,
			TimeoutMS: durationMS(req.Timeout),
			Stream:    stream,
		}})
}

// launch sends r, a streaming request, for p (its name, writers and
// detached set) and routes r's frames to it.
func (c *Client) launch(ctx context.Context, p *Process, stream bool, r *protocol.Request) (*Process, error) {
	p.c, p.ctx = c, ctx
	p.started, p.done = make(chan struct{}), make(chan struct{})
	if stream {
		p.deliver = newOutQueue()
		go p.deliverLoop()
	}
	id, err := c.register(p)
	if err != nil {
		p.stopDelivery()
		return nil, err
	}
	p.id, r.ID = id, id
	// Armed before sending so a cancellation can never slip between. The
	// lock orders it with finish, which a dying connection may run now.
	p.mu.Lock()
	p.stopCancel = context.AfterFunc(ctx, p.cancelOnDone)
	p.mu.Unlock()
	if err := c.send(ctx, r); err != nil {
		c.unregister(id)
		p.finish(protocol.ExecResult{}, err)
		return nil, err
	}
	return p, nil
}

func durationMS(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	// Round up so a sub-millisecond timeout is not "no timeout".
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// cancelOnDone runs when the process's context ends: it kills the process
// group and, should the runtime never report the exit, gives up after
// cancelGrace.
func (p *Process) cancelOnDone() {
	p.mu.Lock()
	p.canceled = true
	p.mu.Unlock()
	if p.detached {
		p.detach()
		return
	}
	sctx, cancel := context.WithTimeout(context.Background(), cancelGrace)
	_ = p.c.send(sctx, &protocol.Request{ID: p.c.nextID.Add(1), Op: protocol.OpExecCancel, Target: p.id, Signal: "SIGKILL"})
	cancel()
	t := time.NewTimer(cancelGrace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.c.unregister(p.id)
		p.finish(protocol.ExecResult{Canceled: true, ExitCode: -1}, nil)
	}
}

// frame handles the exec's frames on the client's reader goroutine.
func (p *Process) frame(f *protocol.Frame) bool {
	switch f.Type {
	case protocol.TypeResult:
		if f.Error != nil {
			err := f.Error.Err()
			p.markStarted(err)
			p.finish(protocol.ExecResult{}, err)
			return true
		}
		var st protocol.ExecStarted
		if len(f.Result) > 0 {
			_ = json.Unmarshal(f.Result, &st)
			if p.detached {
				_ = json.Unmarshal(f.Result, &p.info)
			}
		}
		p.pid = st.PID
		p.markStarted(nil)
	case protocol.TypeExecOutput:
		i := 0
		if f.Stream == protocol.StreamStderr {
			i = 1
		}
		p.output(i, f.Data)
	case protocol.TypeExecExit:
		res := protocol.ExecResult{
			ExitCode: f.ExitCode,
			Duration: time.Duration(f.DurationMS * float64(time.Millisecond)),
			Signal:   f.Signal,
			TimedOut: f.TimedOut,
			Canceled: f.Canceled,
		}
		p.output(0, f.Stdout)
		p.output(1, f.Stderr)
		if p.deliver != nil {
			// The exit waits behind the output still being written.
			p.deliver.push(outItem{exit: &res})
		} else {
			p.finishExit(res)
		}
		return true
	}
	return false
}

func (p *Process) output(i int, data []byte) {
	if len(data) == 0 {
		return
	}
	if p.writers[i] == nil {
		// Only the reader goroutine appends, and Wait reads after done.
		p.bufs[i].Write(data)
		return
	}
	p.deliver.push(outItem{stream: i, data: data})
}

func (p *Process) finishExit(res protocol.ExecResult) {
	if p.writers[0] == nil {
		res.Stdout = p.bufs[0].Bytes()
	}
	if p.writers[1] == nil {
		res.Stderr = p.bufs[1].Bytes()
	}
	p.finish(res, nil)
}

// fail ends the exec because the connection died.
func (p *Process) fail(err error) {
	p.finish(protocol.ExecResult{ExitCode: -1}, err)
}

// finish records the outcome once and releases everything the exec holds.
func (p *Process) finish(res protocol.ExecResult, err error) {
	p.finished.Do(func() {
		p.mu.Lock()
		canceled, stop := p.canceled, p.stopCancel
		p.mu.Unlock()
		if canceled && err == nil {
			res.Canceled = true
			err = ctxError(p.ctx, "exec "+p.name)
		}
		if err != nil {
			p.markStarted(err) // a no-op when it had started
		}
		p.res, p.err = res, err
		if stop != nil {
			stop()
		}
		p.stopDelivery()
		close(p.done)
	})
}

// markStarted records the exec's start, or why it never started, once.
func (p *Process) markStarted(err error) {
	p.startedOnce.Do(func() {
		p.startErr = err
		close(p.started)
	})
}

// Wait waits for the process to end and returns how it ended. Output
// delivered to writers is complete when Wait returns.
func (p *Process) Wait() (protocol.ExecResult, error) {
	<-p.done
	return p.res, p.err
}

// PID is the process id in the runtime's namespace.
func (p *Process) PID() int { return p.pid }

// Signal sends a signal ("SIGTERM", "KILL") to the process group; the
// result of Wait is marked Canceled.
func (p *Process) Signal(ctx context.Context, signal string) error {
	if p.detached {
		return p.c.ProcSignal(ctx, p.pid, signal)
	}
	return p.c.do(ctx, &protocol.Request{Op: protocol.OpExecCancel, Target: p.id, Signal: signal}, nil)
}

// Stdin returns the process's standard input. Each Write returns once the
// process's pipe took the data; Close sends end of file.
func (p *Process) Stdin() io.WriteCloser { return &stdinWriter{p: p} }

type stdinWriter struct {
	p      *Process
	mu     sync.Mutex
	closed bool
}

func (w *stdinWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, errs.E(errs.Precondition, "exec %s: stdin: %w", w.p.name, io.ErrClosedPipe)
	}
	n := 0
	for len(b) > 0 {
		chunk := b[:min(len(b), stdinChunk)]
		r := &protocol.Request{Op: protocol.OpExecStdin, Target: w.p.id, Data: chunk}
		if w.p.detached {
			r = &protocol.Request{Op: protocol.OpProcInput, PID: w.p.pid, Data: chunk}
		}
		err := w.p.c.do(w.p.ctx, r, nil)
		if err != nil {
			return n, err
		}
		n += len(chunk)
		b = b[len(chunk):]
	}
	return n, nil
}

func (w *stdinWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	r := &protocol.Request{Op: protocol.OpExecStdin, Target: w.p.id, Close: true}
	if w.p.detached {
		r = &protocol.Request{Op: protocol.OpProcCloseStdin, PID: w.p.pid}
	}
	err := w.p.c.do(w.p.ctx, r, nil)
	if errs.Is(err, errs.Precondition) || errs.Is(err, errs.NotFound) {
		return nil // the process already ended or closed its stdin
	}
	return err
}

// outQueue hands output from the reader goroutine to the exec's delivery
// goroutine without ever blocking the reader.
type outQueue struct {
	mu     sync.Mutex
	items  []outItem
	closed bool
	wake   chan struct{}
}

type outItem struct {
	stream int
	data   []byte
	exit   *protocol.ExecResult // the last item
}

func newOutQueue() *outQueue { return &outQueue{wake: make(chan struct{}, 1)} }

func (q *outQueue) push(it outItem) {
	q.mu.Lock()
	if !q.closed {
		q.items = append(q.items, it)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *outQueue) take() ([]outItem, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			items := q.items
			q.items = nil
			q.mu.Unlock()
			return items, true
		}
		if q.closed {
			q.mu.Unlock()
			return nil, false
		}
		q.mu.Unlock()
		<-q.wake
	}
}

func (p *Process) stopDelivery() {
	if p.deliver == nil {
		return
	}
	p.deliver.mu.Lock()
	p.deliver.closed = true
	p.deliver.mu.Unlock()
	select {
	case p.deliver.wake <- struct{}{}:
	default:
	}
}

// deliverLoop writes output to the caller's writers in order and finishes
// the exec after the last chunk. A failing writer drops the rest of that
// stream but not the exit.
func (p *Process) deliverLoop() {
	var werr [2]error
	for {
		items, ok := p.deliver.take()
		if !ok {
			return
		}
		for _, it := range items {
			if it.exit != nil {
				p.finishExit(*it.exit)
				return
			}
			if werr[it.stream] == nil {
				_, werr[it.stream] = p.writers[it.stream].Write(it.data)
			}
		}
	}
}
