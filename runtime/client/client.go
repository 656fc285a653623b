// Package client is the platform's side of the runtime protocol: one
// persistent WebSocket per workspace runtime, shared by concurrent calls.
// A reader goroutine routes every server frame to the call waiting for its
// id, so nothing polls and a call costs one round trip.
package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// Client is a connection to one runtime. It is safe for concurrent use.
// When the connection dies every call in flight and every later call fails
// with an errs.Unavailable error, and Done is closed; dial again (or use a
// Pool) to reconnect.
type Client struct {
	ws   *websocket.Conn
	addr string // the URL, for error messages; it holds no secret

	nextID atomic.Uint64

	mu    sync.Mutex
	calls map[uint64]waiter
	err   error // why the connection ended; set once
	done  chan struct{}

	// wmu is held by the one request being written (a semaphore, so a
	// caller waits for it no longer than its context allows).
	wmu chan struct{}
	// writeTimeout bounds a write once it has the socket (see send).
	writeTimeout time.Duration

	// noRange is set once the runtime answered a ranged file operation
	// with "unknown op": it predates them, and whole-file frames are used.
	noRange atomic.Bool

	// beacon is the connection's running beacon (beacon.go); beaconMu
	// (a semaphore) is held by the one StartBeacon asking for it, and
	// noBeacon is set once the runtime said it predates beacons.
	beacon   atomic.Pointer[Beacon]
	beaconMu chan struct{}
	noBeacon atomic.Bool
}

// Write bounds (see send). A runtime that stops reading fills the socket's
// buffers and a write blocks; after writeTimeout (plus writePerMiB for each
// MiB of payload) the connection is closed and every call on it fails, so
// nothing waits for it forever.
const (
	writeTimeout = 10 * time.Second
	writePerMiB  = time.Second
)

// waiter receives the frames of one request.
type waiter interface {
	// frame handles a frame on the reader goroutine and reports whether it
	// was the request's last.
	frame(f *protocol.Frame) bool
	// fail ends the request because the connection died.
	fail(err error)
}

// Dial connects to the runtime at url (ws:// or wss://) and authenticates
// with token. A refused token is an errs.Forbidden error, an unreachable
// runtime errs.Unavailable.
func Dial(ctx context.Context, url, token string) (*Client, error) {
	if token == "" {
		return nil, errs.Field("token", "runtime %s: dial: token is required", url)
	}
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: &http.Transport{
			// The runtime is reached directly; a proxy from the environment
			// would only add a hop or break the upgrade.
			Proxy:       nil,
			DialContext: (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 15 * time.Second}).DialContext,
		}},
		HTTPHeader:      http.Header{"Authorization": {"Bearer " + token}},
		Subprotocols:    []string{protocol.Version},
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		switch {
		case resp != nil && resp.StatusCode == http.StatusUnauthorized:
			return nil, errs.E(errs.Forbidden, "runtime %s: dial: token refused", url)
		case ctx.Err() != nil:
			return nil, ctxError(ctx, fmt.Sprintf("runtime %s: dial", url))
		case resp != nil:
			return nil, errs.E(errs.Unavailable, "runtime %s: dial: http status %d: %w", url, resp.StatusCode, err)
		}
		return nil, errs.E(errs.Unavailable, "runtime %s: dial: %w", url, err)
	}
	if got := ws.Subprotocol(); got != protocol.Version {
		_ = ws.Close(websocket.StatusProtocolError, "unsupported subprotocol")
		return nil, errs.E(errs.Precondition, "runtime %s: dial: runtime speaks %q, want %q", url, got, protocol.Version)
	}
	ws.SetReadLimit(protocol.FrameLimit(protocol.DefaultMaxFileBytes))
	c := &Client{ws: ws, addr: url, calls: map[uint64]waiter{}, done: make(chan struct{}),
		wmu: make(chan struct{}, 1), beaconMu: make(chan struct{}, 1), writeTimeout: writeTimeout}
	go c.readLoop()
	return c, nil
}

// readLoop routes frames to their waiters until the connection ends.
func (c *Client) readLoop() {
	var scratch []byte // the JSON of the frame being read, reused
	for {
		// A background context: the library would otherwise arm a timer per
		// read. Close unblocks the read by closing the socket.
		typ, r, err := c.ws.Reader(context.Background())
		if err != nil {
			c.fail(errs.E(errs.Unavailable, "runtime %s: connection lost: %w", c.addr, err))
			return
		}
		f, w, err := c.readFrame(typ, r, &scratch)
		if err != nil {
			c.fail(errs.E(errs.Unavailable, "runtime %s: malformed frame: %w", c.addr, err))
			_ = c.ws.CloseNow()
			return
		}
		if w == nil {
			continue // a call that gave up, or an answer nobody waits for
		}
		if w.frame(f) {
			c.mu.Lock()
			if c.calls[f.ID] == w {
				delete(c.calls, f.ID)
			}
			c.mu.Unlock()
		}
	}
}

// scratchKeep bounds the frame buffer readLoop keeps between frames: a
// rare large text frame does not pin its size for the connection's life.
const scratchKeep = 1 << 20

// readFrame reads one message and finds its waiter. A binary frame's
// payload is read straight into a buffer the waiter lends (a ranged read's
// pooled chunk) or a new one, so a large download allocates nothing per
// chunk; the payload of a frame nobody waits for is discarded unread.
func (c *Client) readFrame(typ websocket.MessageType, r io.Reader, scratch *[]byte) (*protocol.Frame, waiter, error) {
	f := &protocol.Frame{}
	buf := (*scratch)[:0]
	defer func() {
		if cap(buf) <= scratchKeep {
			*scratch = buf[:0]
		}
	}()
	if typ != websocket.MessageBinary {
		var err error
		if buf, err = readAll(r, buf); err != nil {
			return nil, nil, err
		}
		if id, ok := protocol.ParseBeacon(buf); ok {
			// The idle connection's most frequent frame, read without
			// the JSON decoder (beacon.go).
			f.Type, f.ID = protocol.TypeBeacon, id
			return f, c.waiterOf(id), nil
		}
		if err := json.Unmarshal(buf, f); err != nil {
			return nil, nil, err
		}
		return f, c.waiterOf(f.ID), nil
	}
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, nil, fmt.Errorf("binary frame: length prefix: %w", err)
	}
	hl := binary.BigEndian.Uint32(n[:])
	if hl > protocol.MaxHeader {
		return nil, nil, fmt.Errorf("binary frame: header length %d over %d", hl, protocol.MaxHeader)
	}
	buf = slices.Grow(buf, int(hl))[:hl]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, nil, fmt.Errorf("binary frame: header: %w", err)
	}
	if err := json.Unmarshal(buf, f); err != nil {
		return nil, nil, err
	}
	w := c.waiterOf(f.ID)
	if w == nil {
		_, err := io.Copy(io.Discard, r)
		return f, nil, err
	}
	var payload []byte
	if l, ok := w.(payloadLender); ok {
		payload = l.payloadBuf()
	}
	payload, err := readAll(r, payload[:0])
	if err != nil {
		return nil, nil, err
	}
	f.Payload = payload
	return f, w, nil
}

// payloadLender is a waiter that lends the buffer its binary payload is
// read into.
type payloadLender interface {
	payloadBuf() []byte
}

func (c *Client) waiterOf(id uint64) waiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[id]
}

// readAll appends the rest of r to buf. A full buffer grows only when more
// than its end remains, so a payload that fits its lent buffer exactly
// allocates nothing.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			var probe [512]byte
			n, err := r.Read(probe[:])
			if n > 0 {
				buf = append(buf, probe[:n]...)
			}
			if err == io.EOF {
				return buf, nil
			}
			if err != nil {
				return buf, err
			}
			continue
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// fail marks the connection dead and fails every waiting call.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	calls := c.calls
	c.calls = map[uint64]waiter{}
	close(c.done)
	c.mu.Unlock()
	for _, w := range calls {
		w.fail(err)
	}
}

// register assigns an id to a new request.
func (c *Client) register(w waiter) (uint64, error) {
	id := c.nextID.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	c.calls[id] = w
	return id, nil
}

func (c *Client) unregister(id uint64) {
	c.mu.Lock()
	delete(c.calls, id)
	c.mu.Unlock()
}

// send writes one request. Writes take turns: waiting for its turn is
// bounded by ctx, so a caller stuck behind a write the runtime does not
// read gets its own Canceled or Timeout error at its deadline. The write
// itself runs on a context without ctx's cancellation, because the
// websocket library closes the whole connection when a write's context ends
// mid-frame and one caller's cancellation must not break the others'
// calls; it is bounded by the write deadline instead (writeTimeout plus
// writePerMiB of payload), after which the connection is closed: a runtime
// that has not read for that long is stuck, and every call on it fails
// rather than waits.
func (c *Client) send(ctx context.Context, req *protocol.Request) error {
	return c.sendBody(ctx, req, body{})
}

// body is a request's payload: req.Data, or size bytes read from r (a
// spooled upload, sent without holding it in memory).
type body struct {
	data []byte
	r    io.Reader
	size int64
}

// sendBody is send with the payload read from b when b.r is set. The
// payload goes out as it is read; a reader that fails or ends early breaks
// the frame, which closes the connection, so b.r must be something that
// delivers b.size bytes (a local file).
func (c *Client) sendBody(ctx context.Context, req *protocol.Request, b body) error {
	if b.r == nil && len(req.Data) > 0 {
		b = body{data: req.Data, size: int64(len(req.Data))}
	}
	if b.size > 0 {
		// Data travels raw in a binary frame, not base64 in the JSON.
		hdr := *req
		hdr.Data = nil
		req = &hdr
	}
	hdr, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("runtime %s: %s: encode: %w", c.addr, req.Op, err)
	}
	select {
	case c.wmu <- struct{}{}:
	case <-c.done:
		return c.deadErr()
	case <-ctx.Done():
		return ctxError(ctx, fmt.Sprintf("runtime %s: %s: wait to write", c.addr, req.Op))
	}
	defer func() { <-c.wmu }()
	wctx, cancel := context.WithTimeout(context.Background(), c.writeTimeout+writePerMiB*time.Duration(b.size>>20))
	defer cancel()
	if b.size > 0 {
		err = c.writeBinary(wctx, hdr, b)
	} else {
		err = c.ws.Write(wctx, websocket.MessageText, hdr)
	}
	if err != nil {
		c.fail(errs.E(errs.Unavailable, "runtime %s: connection lost: %w", c.addr, err))
		return c.deadErr()
	}
	return nil
}

func (c *Client) writeBinary(ctx context.Context, header []byte, b body) error {
	w, err := c.ws.Writer(ctx, websocket.MessageBinary)
	if err != nil {
		return err
	}
	if b.r == nil {
		err = protocol.WriteBinary(w, header, b.data)
	} else {
		// The length and header in one frame, then the payload as it is
		// read: each write is a frame of its own.
		var pre bytes.Buffer
		_ = protocol.WriteBinary(&pre, header, nil)
		if _, err = w.Write(pre.Bytes()); err == nil {
			_, err = io.CopyN(w, b.r, b.size)
		}
	}
	if err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}

func (c *Client) deadErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// call is a request answered by one result frame.
type call chan *protocol.Frame

func (ch call) frame(f *protocol.Frame) bool {
	if f.Type != protocol.TypeResult {
		return false
	}
	ch <- f
	return true
}

func (ch call) fail(error) { close(ch) }

// do sends req and waits for its result, decoding it into out when given.
func (c *Client) do(ctx context.Context, req *protocol.Request, out any) error {
	return c.doBody(ctx, req, body{}, out)
}

// doBody is do with the payload read from b (see sendBody).
func (c *Client) doBody(ctx context.Context, req *protocol.Request, b body, out any) error {
	ch := make(call, 1)
	id, err := c.register(ch)
	if err != nil {
		return err
	}
	req.ID = id
	if err := c.sendBody(ctx, req, b); err != nil {
		c.unregister(id)
		return err
	}
	select {
	case f, ok := <-ch:
		if !ok {
			return c.deadErr()
		}
		if f.Error != nil {
			return f.Error.Err()
		}
		if out != nil && len(f.Result) > 0 {
			if err := json.Unmarshal(f.Result, out); err != nil {
				return fmt.Errorf("runtime %s: %s: decode result: %w", c.addr, req.Op, err)
			}
		}
		if ps, ok := out.(protocol.PayloadSetter); ok && f.Payload != nil {
			ps.SetPayload(f.Payload)
		}
		return nil
	case <-ctx.Done():
		c.unregister(id)
		return ctxError(ctx, fmt.Sprintf("runtime %s: %s", c.addr, req.Op))
	}
}

// ctxError turns a finished context into a Canceled or Timeout error.
func ctxError(ctx context.Context, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errs.E(errs.Timeout, "%s: %w", what, ctx.Err())
	}
	return errs.E(errs.Canceled, "%s: %w", what, ctx.Err())
}

// Ping checks the runtime answers; it is the liveness probe.
func (c *Client) Ping(ctx context.Context) error {
	var res protocol.PingResult
	return c.do(ctx, &protocol.Request{Op: protocol.OpPing}, &res)
}

// ReadFile returns the content of path, relative to the workspace root.
func (c *Client) ReadFile(ctx context.Context, path string) ([]byte, error) {
	var res protocol.ReadResult
	if err := c.do(ctx, &protocol.Request{Op: protocol.OpRead, Path: path}, &res); err != nil {
		return nil, err
	}
	if res.Data == nil {
		res.Data = []byte{}
	}
	return res.Data, nil
}

// WriteFile writes data to path, creating missing parent directories. A
// zero mode means 0644 for a new file and leaves an existing file's mode.
func (c *Client) WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error {
	_, err := c.WriteFileInfo(ctx, path, data, mode)
	return err
}

// WriteFileInfo is WriteFile returning the written file's description, in
// the same round trip.
func (c *Client) WriteFileInfo(ctx context.Context, path string, data []byte, mode os.FileMode) (protocol.FileInfo, error) {
	var fi protocol.FileInfo
	if err := checkSize("write "+path, len(data)); err != nil {
		return fi, err
	}
	err := c.do(ctx, &protocol.Request{Op: protocol.OpWrite, Path: path, Data: data, Mode: unixMode(mode)}, &fi)
	return fi, err
}

// WriteFileFrom is WriteFileInfo with the content read from r, which must
// deliver exactly size bytes (a spooled upload: a local file). The content
// is copied into the connection as it is read, one chunk at a time
// (write.range), never held in memory whole, so its size is bounded by the
// caller, not by the runtime's frame limit. A runtime that predates
// write.range gets it in one frame, within that runtime's limit. A reader
// that fails midway fails the write and may leave part of the file written.
func (c *Client) WriteFileFrom(ctx context.Context, path string, r io.Reader, size int64, mode os.FileMode) (protocol.FileInfo, error) {
	return c.WriteFileWith(ctx, path, r, size, WriteOptions{Mode: mode})
}

// WriteOptions are the settings of WriteFileWith.
type WriteOptions struct {
	// Mode is a new file's permission bits (zero: 0644), applied to an
	// existing file too when set.
	Mode os.FileMode
	// User owns what the write creates, the file and missing parents; an
	// existing file keeps its owner. Empty means the runtime's own user.
	User string
}

// WriteFileWith is WriteFileFrom with every option of a write.
func (c *Client) WriteFileWith(ctx context.Context, path string, r io.Reader, size int64, o WriteOptions) (protocol.FileInfo, error) {
	var fi protocol.FileInfo
	mode := o.Mode
	if size < 0 {
		return fi, errs.E(errs.Invalid, "write %s: negative size %d", path, size)
	}
	if size > protocol.DefaultChunkBytes && !c.noRange.Load() {
		fi, taken, handled, err := c.writeRange(ctx, path, r, size, unixMode(mode), o.User)
		if handled {
			return fi, err
		}
		c.noRange.Store(true)
		r = io.MultiReader(bytes.NewReader(taken), r)
	}
	if size > protocol.DefaultMaxFileBytes {
		return fi, errs.E(errs.TooLarge, "write %s: %d bytes is over the %d byte limit of a runtime without write.range", path, size, protocol.DefaultMaxFileBytes)
	}
	err := c.doBody(ctx, &protocol.Request{Op: protocol.OpWrite, Path: path, Mode: unixMode(mode), User: o.User}, body{r: r, size: size}, &fi)
	return fi, err
}

// Stat describes path; a symlink is described itself.
func (c *Client) Stat(ctx context.Context, path string) (protocol.FileInfo, error) {
	var fi protocol.FileInfo
	err := c.do(ctx, &protocol.Request{Op: protocol.OpStat, Path: path}, &fi)
	return fi, err
}

// List returns the entries of directory path, sorted by name.
func (c *Client) List(ctx context.Context, path string) ([]protocol.FileInfo, error) {
	var res protocol.ListResult
	if err := c.do(ctx, &protocol.Request{Op: protocol.OpList, Path: path}, &res); err != nil {
		return nil, err
	}
	return res.Entries, nil
}

// Remove deletes path; recursive removes a directory with its content. A
// missing path is an errs.NotFound error either way.
func (c *Client) Remove(ctx context.Context, path string, recursive bool) error {
	return c.do(ctx, &protocol.Request{Op: protocol.OpRemove, Path: path, Recursive: recursive}, nil)
}

// Mkdir creates directory path; parents creates missing parents and
// accepts an existing directory.
func (c *Client) Mkdir(ctx context.Context, path string, parents bool) error {
	return c.MkdirAs(ctx, path, parents, "")
}

// MkdirAs is Mkdir giving the directories it creates to user, a user of
// the sandbox (empty: the runtime's own).
func (c *Client) MkdirAs(ctx context.Context, path string, parents bool, user string) error {
	return c.do(ctx, &protocol.Request{Op: protocol.OpMkdir, Path: path, Parents: parents, User: user}, nil)
}

// EnsureUser creates the sandbox user p names unless it exists (lines in
// /etc/passwd, /etc/group and /etc/shadow, and a home owned by it) and
// describes it. Only a runtime in whole-filesystem mode owns the sandbox's
// users; others answer errs.Invalid.
func (c *Client) EnsureUser(ctx context.Context, p protocol.UserParams) (protocol.UserInfo, error) {
	var res protocol.UserInfo
	err := c.do(ctx, &protocol.Request{Op: protocol.OpUserEnsure, User: p.Name, UID: p.UID, Home: p.Home}, &res)
	return res, err
}

// Rename moves from to to, replacing a file at to.
func (c *Client) Rename(ctx context.Context, from, to string) error {
	return c.do(ctx, &protocol.Request{Op: protocol.OpRename, From: from, To: to}, nil)
}

// Close closes the connection at once; the runtime kills the processes the
// connection started. Calls in flight fail with errs.Unavailable.
func (c *Client) Close() error {
	c.fail(errs.E(errs.Unavailable, "runtime %s: client closed", c.addr))
	// No close handshake: it could wait seconds on a dead peer, and the
	// runtime treats a dropped socket like a closed one.
	_ = c.ws.CloseNow()
	return nil
}

// Done is closed when the connection dies or is closed.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err says why the connection ended, or nil while it is live.
func (c *Client) Err() error { return c.deadErr() }

func unixMode(m os.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

// checkSize refuses data over the protocol's file limit before sending it:
// the runtime drops a connection whose frame exceeds its read limit, which
// would fail every other call on it.
func checkSize(what string, n int) error {
	if int64(n) > protocol.DefaultMaxFileBytes {
		return errs.E(errs.TooLarge, "%s: %d bytes is over the %d byte limit", what, n, protocol.DefaultMaxFileBytes)
	}
	return nil
}

func errPoolClosed(url string) error {
	return errs.E(errs.Unavailable, "runtime %s: pool closed", url)
}
