package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// Streamed file transfer: a file of any size moves in chunks of
// protocol.DefaultChunkBytes (read.range, write.range), a few in flight at
// once, so memory per transfer is a few chunks on each side whatever the
// file's size. A runtime that predates the ranged operations gets the whole
// file in one frame, as before, within its own size limit.

// rangeWindow is how many chunks a transfer keeps in flight: enough to
// keep the connection busy while one chunk is handed on.
const rangeWindow = 3

// chunkPool recycles the buffers ranged reads receive into.
var chunkPool = sync.Pool{New: func() any {
	b := make([]byte, protocol.DefaultChunkBytes)
	return &b
}}

// rangeCall waits for the answer of one read.range and lends the pooled
// buffer its payload is read into.
type rangeCall struct {
	ch  chan *protocol.Frame
	buf *[]byte
}

func (rc *rangeCall) frame(f *protocol.Frame) bool {
	if f.Type != protocol.TypeResult {
		return false
	}
	rc.ch <- f
	return true
}

func (rc *rangeCall) fail(error) { close(rc.ch) }

func (rc *rangeCall) payloadBuf() []byte { return (*rc.buf)[:0] }

// unknownOp reports whether err is a runtime's answer to an op it does not
// know: a runtime from before that op.
func unknownOp(err error) bool {
	return errs.Is(err, errs.Invalid) && strings.Contains(err.Error(), "unknown op")
}

// FileReader streams one file from the runtime; it is not safe for
// concurrent use. Close it to release its chunks.
type FileReader struct {
	c    *Client
	ctx  context.Context
	path string
	size int64
	next int64 // offset of the next chunk to ask for

	pending []pendingChunk // asked for, in offset order
	cur     []byte         // the part of the current chunk not yet read
	curBuf  *[]byte        // the pooled buffer cur lives in
	off     int64          // bytes handed out so far
	err     error
}

type pendingChunk struct {
	id  uint64
	off int64
	rc  *rangeCall
}

// OpenFile starts streaming the regular file path. The first chunk is read
// before it returns, so a missing file, a directory or a refusal is its
// error; Size is the file's size then, and the reader delivers exactly
// that many bytes or fails (a file that shrinks meanwhile is a Conflict
// error; what it grows by is not read).
func (c *Client) OpenFile(ctx context.Context, path string) (*FileReader, error) {
	r := &FileReader{c: c, ctx: ctx, path: path}
	if !c.noRange.Load() {
		pc, err := r.ask(0)
		if err == nil {
			r.pending = append(r.pending, pc)
			err = r.advance(true)
		}
		if err == nil {
			r.fill()
			return r, nil
		}
		if !unknownOp(err) {
			return nil, err
		}
		c.noRange.Store(true)
	}
	data, err := c.ReadFile(ctx, path)
	if err != nil {
		return nil, err
	}
	r.size, r.next, r.cur = int64(len(data)), int64(len(data)), data
	return r, nil
}

// Size is the number of bytes the reader delivers.
func (r *FileReader) Size() int64 { return r.size }

// ask sends the read.range of the chunk at off.
func (r *FileReader) ask(off int64) (pendingChunk, error) {
	rc := &rangeCall{ch: make(chan *protocol.Frame, 1), buf: chunkPool.Get().(*[]byte)}
	id, err := r.c.register(rc)
	if err != nil {
		chunkPool.Put(rc.buf)
		return pendingChunk{}, err
	}
	req := &protocol.Request{ID: id, Op: protocol.OpReadRange, Path: r.path, Offset: off, Length: protocol.DefaultChunkBytes}
	if err := r.c.send(r.ctx, req); err != nil {
		r.c.unregister(id)
		chunkPool.Put(rc.buf)
		return pendingChunk{}, err
	}
	return pendingChunk{id: id, off: off, rc: rc}, nil
}

// fill asks for chunks until rangeWindow are in flight or the file's end
// is asked for.
func (r *FileReader) fill() {
	for len(r.pending) < rangeWindow && r.next < r.size && r.err == nil {
		pc, err := r.ask(r.next)
		if err != nil {
			r.err = err
			return
		}
		r.pending = append(r.pending, pc)
		r.next += protocol.DefaultChunkBytes
	}
}

// advance waits for the oldest chunk in flight and makes it current. The
// first chunk also sets the size.
func (r *FileReader) advance(first bool) error {
	pc := r.pending[0]
	r.pending = r.pending[1:]
	var f *protocol.Frame
	var ok bool
	select {
	case f, ok = <-pc.rc.ch:
	case <-r.ctx.Done():
		r.c.unregister(pc.id)
		return ctxError(r.ctx, fmt.Sprintf("runtime %s: read %s", r.c.addr, r.path))
	}
	if !ok {
		return r.c.deadErr()
	}
	if f.Error != nil {
		chunkPool.Put(pc.rc.buf)
		return f.Error.Err()
	}
	var res protocol.ReadRangeResult
	if len(f.Result) > 0 {
		if err := json.Unmarshal(f.Result, &res); err != nil {
			chunkPool.Put(pc.rc.buf)
			return fmt.Errorf("runtime %s: read %s: decode result: %w", r.c.addr, r.path, err)
		}
	}
	if first {
		r.size = res.Size
		r.next = protocol.DefaultChunkBytes
	}
	data := f.Payload
	if want := min(protocol.DefaultChunkBytes, r.size-pc.off); int64(len(data)) < want {
		chunkPool.Put(pc.rc.buf)
		return errs.E(errs.Conflict, "read %s: the file changed while it was read: %d bytes at offset %d, want %d of %d", r.path, len(data), pc.off, want, r.size)
	} else if int64(len(data)) > want {
		data = data[:want] // the file grew: only what it had at the start
	}
	r.release()
	if cap(data) > 0 && &data[:1][0] == &(*pc.rc.buf)[:1][0] {
		r.curBuf = pc.rc.buf // the payload landed in the pooled buffer
	} else {
		chunkPool.Put(pc.rc.buf)
	}
	r.cur = data
	return nil
}

// release gives the current chunk's buffer back.
func (r *FileReader) release() {
	if r.curBuf != nil {
		chunkPool.Put(r.curBuf)
		r.curBuf = nil
	}
	r.cur = nil
}

// Read implements io.Reader.
func (r *FileReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if err := r.nextChunk(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	r.off += int64(n)
	return n, nil
}

// WriteTo implements io.WriterTo: each chunk goes to w as it arrives,
// without another copy.
func (r *FileReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		for len(r.cur) == 0 {
			if err := r.nextChunk(); err == io.EOF {
				return total, nil
			} else if err != nil {
				return total, err
			}
		}
		n, err := w.Write(r.cur)
		r.cur = r.cur[n:]
		r.off += int64(n)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
}

// nextChunk makes the next chunk current, or reports io.EOF or the
// stream's error.
func (r *FileReader) nextChunk() error {
	if r.err != nil {
		return r.err
	}
	if len(r.pending) == 0 {
		r.release()
		if r.off >= r.size {
			return io.EOF
		}
		r.err = errs.E(errs.Other, "read %s: no chunk in flight at offset %d of %d", r.path, r.off, r.size)
		return r.err
	}
	if err := r.advance(false); err != nil {
		r.err = err
		return err
	}
	r.fill()
	return nil
}

// Close stops the stream: chunks still in flight are abandoned.
func (r *FileReader) Close() error {
	for _, pc := range r.pending {
		r.c.unregister(pc.id)
	}
	r.pending = nil
	r.release()
	if r.err == nil {
		r.err = errs.E(errs.Canceled, "read %s: reader closed", r.path)
	}
	return nil
}

// writeRange writes size bytes from r to path in chunks; size is over one
// chunk. When the runtime predates write.range it returns handled false
// and the bytes it took from r, so the caller can send them the old way.
func (c *Client) writeRange(ctx context.Context, path string, r io.Reader, size int64, mode uint32, user string) (fi protocol.FileInfo, taken []byte, handled bool, err error) {
	bp := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(bp)
	buf := *bp
	var inflight []call
	wait := func(ch call) error {
		select {
		case f, ok := <-ch:
			if !ok {
				return c.deadErr()
			}
			if f.Error != nil {
				return f.Error.Err()
			}
			return nil
		case <-ctx.Done():
			return ctxError(ctx, fmt.Sprintf("runtime %s: write %s", c.addr, path))
		}
	}
	for off := int64(0); ; {
		n := min(int64(len(buf)), size-off)
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			return fi, nil, true, errs.E(errs.Invalid, "write %s: read content at offset %d: %w", path, off, err)
		}
		req := &protocol.Request{Op: protocol.OpWriteRange, Path: path, Offset: off, Data: buf[:n], Mode: mode, User: user, Final: off+n == size}
		if req.Final {
			// Every earlier chunk is on disk before the file is ended.
			for _, ch := range inflight {
				if err := wait(ch); err != nil {
					return fi, nil, true, err
				}
			}
			return fi, nil, true, c.do(ctx, req, &fi)
		}
		ch := make(call, 1)
		id, err := c.register(ch)
		if err != nil {
			return fi, nil, true, err
		}
		req.ID = id
		// send writes the whole frame before it returns: buf is free again.
		if err := c.send(ctx, req); err != nil {
			c.unregister(id)
			return fi, nil, true, err
		}
		switch {
		case off == 0:
			// The first chunk makes the parents: the others wait for it.
			if err := wait(ch); err != nil {
				if unknownOp(err) {
					return fi, append([]byte(nil), buf[:n]...), false, nil
				}
				return fi, nil, true, err
			}
		default:
			inflight = append(inflight, ch)
			if len(inflight) >= rangeWindow {
				if err := wait(inflight[0]); err != nil {
					return fi, nil, true, err
				}
				inflight = inflight[1:]
			}
		}
		off += n
	}
}
