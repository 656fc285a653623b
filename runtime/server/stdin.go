package server

import (
	"io"
	"sync"

	"github.com/primerhq/primer/errs"
)

// feedStdin writes initial to w, then the items of q (nil: none) in order,
// calling each item's done once w took its data so the client that sent it
// gets the pipe's backpressure. It closes w when q closes or an item asks
// to; what is left in q when a write fails is answered with the error.
// name prefixes errors ("exec 3", "process 1234").
func feedStdin(w io.WriteCloser, initial []byte, q *stdinQueue, name string) {
	fail := func(err error) {
		_ = w.Close()
		if q != nil {
			q.close()
			q.drain(errs.E(errs.Precondition, "%s: stdin: %w", name, err))
		}
	}
	if len(initial) > 0 {
		if _, err := w.Write(initial); err != nil {
			fail(err)
			return
		}
	}
	if q == nil {
		_ = w.Close()
		return
	}
	for {
		it, ok := q.pop()
		if !ok {
			_ = w.Close()
			return
		}
		var err error
		for data := it.data; len(data) > 0 && err == nil; {
			n := min(len(data), stdinChunk)
			_, err = w.Write(data[:n])
			data = data[n:]
		}
		if err == nil && it.close {
			err = w.Close()
			q.close()
		}
		if err != nil {
			it.done(errs.E(errs.Precondition, "%s: stdin: %w", name, err))
			fail(err)
			return
		}
		it.done(nil)
	}
}

// stdinItem is one write to a process's stdin; done answers the request
// that sent it.
type stdinItem struct {
	data  []byte
	close bool
	done  func(error)
}

// ack returns a done function that answers request id on c.
func (c *conn) ack(id uint64) func(error) {
	return func(err error) { c.reply(id, nil, err) }
}

// stdinQueue is an unbounded FIFO between the read loop, which must never
// block on a process, and the goroutine feeding the process's stdin.
type stdinQueue struct {
	mu     sync.Mutex
	items  []stdinItem
	closed bool
	wake   chan struct{}
}

func newStdinQueue() *stdinQueue { return &stdinQueue{wake: make(chan struct{}, 1)} }

func (q *stdinQueue) push(it stdinItem) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.items = append(q.items, it)
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// pop returns the next item, waiting for one; false once the queue is
// closed and empty.
func (q *stdinQueue) pop() (stdinItem, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			it := q.items[0]
			q.items = q.items[1:]
			q.mu.Unlock()
			return it, true
		}
		if q.closed {
			q.mu.Unlock()
			return stdinItem{}, false
		}
		q.mu.Unlock()
		<-q.wake
	}
}

func (q *stdinQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.wake)
	}
}

// drain answers every queued item with err.
func (q *stdinQueue) drain(err error) {
	for {
		it, ok := q.pop()
		if !ok {
			return
		}
		it.done(err)
	}
}
