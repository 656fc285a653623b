package client

import (
	"context"
	"sync"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// maxQueuedWatchEvents bounds the events a watch holds for a reader that
// does not keep up; past it the watch ends with errs.Exhausted.
const maxQueuedWatchEvents = 100_000

// Watch is a running watch.start: the changes under a directory, in order.
type Watch struct {
	c  *Client
	id uint64

	started  chan struct{} // closed on the result frame
	startErr error

	mu     sync.Mutex
	queue  []protocol.WatchEvent
	wake   chan struct{} // signalled when queue grows or the watch ends
	ended  bool
	endErr error
}

// Watch watches directory path (its whole tree with recursive) and returns
// once the watch is armed: a change made after it returns is reported.
// Read the changes with Next; Stop ends it, as does the connection's end.
func (c *Client) Watch(ctx context.Context, path string, recursive bool) (*Watch, error) {
	w := &Watch{c: c, started: make(chan struct{}), wake: make(chan struct{}, 1)}
	id, err := c.register(w)
	if err != nil {
		return nil, err
	}
	w.id = id
	if err := c.send(ctx, &protocol.Request{ID: id, Op: protocol.OpWatchStart, Path: path, Recursive: recursive}); err != nil {
		c.unregister(id)
		return nil, err
	}
	select {
	case <-w.started:
	case <-ctx.Done():
		_ = w.Stop(context.WithoutCancel(ctx))
		return nil, ctxError(ctx, "watch "+path)
	}
	if w.startErr != nil {
		return nil, w.startErr
	}
	return w, nil
}

// frame handles the watch's frames on the reader goroutine; it never
// blocks.
func (w *Watch) frame(f *protocol.Frame) bool {
	switch f.Type {
	case protocol.TypeResult:
		if f.Error != nil {
			w.startErr = f.Error.Err()
			close(w.started)
			w.end(w.startErr)
			return true
		}
		close(w.started)
	case protocol.TypeWatchEvent:
		w.mu.Lock()
		if !w.ended {
			if len(w.queue) >= maxQueuedWatchEvents {
				w.mu.Unlock()
				w.end(errs.E(errs.Exhausted, "watch: more than %d events were not read", maxQueuedWatchEvents))
				go func() {
					_ = w.c.do(context.Background(), &protocol.Request{Op: protocol.OpWatchStop, Target: w.id}, nil)
				}()
				return false
			}
			w.queue = append(w.queue, protocol.WatchEvent{Name: f.Name, Event: f.Event})
		}
		w.mu.Unlock()
		w.signal()
	case protocol.TypeWatchEnd:
		var err error
		if f.Error != nil {
			err = f.Error.Err()
		}
		w.end(err)
		return true
	}
	return false
}

func (w *Watch) fail(err error) {
	select {
	case <-w.started:
	default:
		w.startErr = err
		close(w.started)
	}
	w.end(err)
}

func (w *Watch) end(err error) {
	w.mu.Lock()
	if !w.ended {
		w.ended, w.endErr = true, err
	}
	w.mu.Unlock()
	w.signal()
}

func (w *Watch) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Next returns the next change. After the last one it returns ok false and
// why the watch ended: nil after Stop or the directory's removal.
func (w *Watch) Next(ctx context.Context) (ev protocol.WatchEvent, ok bool, err error) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			ev = w.queue[0]
			w.queue = w.queue[1:]
			w.mu.Unlock()
			return ev, true, nil
		}
		ended, endErr := w.ended, w.endErr
		w.mu.Unlock()
		if ended {
			return ev, false, endErr
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			return ev, false, ctxError(ctx, "watch")
		}
	}
}

// Stop ends the watch; events already received can still be read.
func (w *Watch) Stop(ctx context.Context) error {
	w.mu.Lock()
	ended := w.ended
	w.mu.Unlock()
	if ended {
		return nil
	}
	err := w.c.do(ctx, &protocol.Request{Op: protocol.OpWatchStop, Target: w.id}, nil)
	if errs.Is(err, errs.NotFound) {
		// It ended on its own meanwhile.
		err = nil
	}
	return err
}
