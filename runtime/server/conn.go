package server

import (
	"context"
	"encoding/json"
	"sync"
	"syscall"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// conn serves one WebSocket: a read loop that dispatches requests, and any
// number of goroutines answering them. Frames are written by whichever
// goroutine has one ready; the websocket library serialises writes, each
// bounded by the server's write timeout (writeContext).
type conn struct {
	s  *Server
	ws *websocket.Conn
	// ctx is the handlers' context: cancelled when the connection closes
	// (shutdown), so a handler whose client is gone stops waiting and a
	// write in progress gives up at once.
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	procs map[uint64]*proc // running execs by request id
	// watches are the running watch.start requests by id (watch_linux.go).
	watches map[uint64]*watch
	// tunnels are the open tcp.open requests by id (tunnel.go).
	tunnels map[uint64]*tunnel
	// beaconStop ends the running beacon.start, if any (beacon.go).
	beaconStop context.CancelFunc
	closed     bool
	wg         sync.WaitGroup // request and exec goroutines
}

func newConn(s *Server, ws *websocket.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{s: s, ws: ws, ctx: ctx, cancel: cancel, procs: map[uint64]*proc{}}
}

// serve reads requests until the connection ends, then kills the
// connection's processes: nobody is left to receive their results.
func (c *conn) serve() {
	defer func() {
		c.shutdown()
		c.wg.Wait()
	}()
	for {
		// A background context keeps the library from arming a timer per
		// read; shutdown unblocks the read by closing the socket.
		typ, data, err := c.ws.Read(context.Background())
		if err != nil {
			return
		}
		var req protocol.Request
		var payload []byte
		if typ == websocket.MessageBinary {
			if data, payload, err = protocol.SplitBinary(data); err != nil {
				c.reply(0, nil, errs.E(errs.Invalid, "request: malformed frame: %v", err))
				continue
			}
		}
		if err := json.Unmarshal(data, &req); err != nil {
			c.reply(req.ID, nil, errs.E(errs.Invalid, "request: malformed frame: %v", err))
			continue
		}
		if typ == websocket.MessageBinary {
			req.Data = payload
		}
		c.dispatch(&req)
	}
}

// shutdown closes the socket and kills every running process group. It is
// safe to call more than once and from any goroutine.
func (c *conn) shutdown() {
	c.mu.Lock()
	c.closed = true
	procs := make([]*proc, 0, len(c.procs))
	for _, p := range c.procs {
		procs = append(procs, p)
	}
	c.mu.Unlock()
	c.cancel()
	_ = c.ws.CloseNow()
	c.s.listeners.dropOwner(c)
	c.stopWatches()
	c.closeTunnels()
	for _, p := range procs {
		p.signal(syscall.SIGKILL, false, true)
	}
	// Processes of proc.start run on; only this connection's watches end.
	c.s.procs.dropWatchers(c)
}

// dispatch answers quick requests on the read loop and hands slow ones to
// goroutines so one large file or a slow disk does not hold up the others.
// exec.stdin and exec.cancel stay on the loop: their order matters.
func (c *conn) dispatch(req *protocol.Request) {
	var h func(context.Context, *protocol.Request) (any, error)
	switch req.Op {
	case protocol.OpPing:
		c.reply(req.ID, protocol.PingResult{Version: protocol.Version}, nil)
		return
	case protocol.OpBeaconStart:
		c.startBeacon(req)
		return
	case protocol.OpExec:
		c.startExec(req)
		return
	case protocol.OpExecStdin:
		c.execStdin(req)
		return
	case protocol.OpExecCancel:
		c.execCancel(req)
		return
	case protocol.OpProcStart:
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.startProc(req)
		}()
		return
	case protocol.OpProcConnect:
		c.connectProc(req)
		return
	case protocol.OpProcDetach:
		c.detachProc(req)
		return
	case protocol.OpProcInput, protocol.OpProcCloseStdin:
		c.procInput(req, req.Op == protocol.OpProcCloseStdin)
		return
	case protocol.OpProcList:
		h = c.s.listProcs
	case protocol.OpProcSignal:
		h = c.s.procSignal
	case protocol.OpProcResize:
		h = c.s.procResize
	case protocol.OpWatchStart:
		// Arming a recursive watch walks the tree: off the read loop.
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.startWatch(req)
		}()
		return
	case protocol.OpWatchStop:
		c.stopWatch(req)
		return
	case protocol.OpRead:
		h = c.s.read
	case protocol.OpReadRange:
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			res, release, err := c.s.readRange(c.ctx, req)
			c.reply(req.ID, res, err)
			release()
		}()
		return
	case protocol.OpWriteRange:
		h = c.s.writeRange
	case protocol.OpWrite:
		h = c.s.write
	case protocol.OpStat:
		h = c.s.stat
	case protocol.OpList:
		h = c.s.list
	case protocol.OpRemove:
		h = c.s.remove
	case protocol.OpMkdir:
		h = c.s.mkdir
	case protocol.OpRename:
		h = c.s.rename
	case protocol.OpStateCommit:
		h = c.s.stateCommit
	case protocol.OpStateLog:
		h = c.s.stateLog
	case protocol.OpStateDiff:
		h = c.s.stateDiff
	case protocol.OpStateRestore:
		h = c.s.stateRestore
	case protocol.OpReset:
		h = c.s.reset
	case protocol.OpShutdown:
		c.shutdownServer(req)
		return
	case protocol.OpUserEnsure:
		h = c.s.ensureUser
	case protocol.OpPortsList:
		h = c.s.listPorts
	case protocol.OpTCPOpen:
		// Dialing may wait (a full backlog): off the read loop.
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.openTunnel(req)
		}()
		return
	case protocol.OpGatewayListen:
		c.listen(req)
		return
	case protocol.OpTCPData, protocol.OpTCPAck, protocol.OpTCPEOF, protocol.OpTCPClose:
		// On the loop: a tunnel's bytes must reach it in order. None
		// blocks (tunnel.go).
		c.tunnelFrame(req)
		return
	default:
		c.reply(req.ID, nil, errs.Field("op", "request %d: unknown op %q", req.ID, req.Op))
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		res, err := h(c.ctx, req)
		c.reply(req.ID, res, err)
	}()
}

// reply sends the result frame for request id. A read's data goes as the
// payload of a binary frame.
func (c *conn) reply(id uint64, result any, err error) {
	resp := protocol.Response{Type: protocol.TypeResult, ID: id, Result: result}
	if err != nil {
		resp.Error = protocol.ErrorOf(err)
		resp.Result = nil
	}
	switch rr := resp.Result.(type) {
	case protocol.ReadResult:
		resp.Result = protocol.ReadResult{}
		c.sendBinary(&resp, rr.Data)
		return
	case protocol.ReadRangeResult:
		resp.Result = protocol.ReadRangeResult{Size: rr.Size}
		c.sendBinary(&resp, rr.Data)
		return
	}
	c.send(&resp)
}

// sendBinary writes one binary frame: v's JSON, then payload.
func (c *conn) sendBinary(v any, payload []byte) bool {
	b, err := json.Marshal(v)
	if err != nil {
		c.s.log.Error("runtime: encode frame", "error", err)
		return false
	}
	ctx, cancel := c.writeContext()
	defer cancel()
	w, err := c.ws.Writer(ctx, websocket.MessageBinary)
	if err == nil {
		if err = protocol.WriteBinary(w, b, payload); err == nil {
			err = w.Close()
		} else {
			_ = w.Close()
		}
	}
	if err != nil {
		c.shutdown()
		return false
	}
	return true
}

// send writes one frame. A failed write means the peer is gone: the
// connection is shut down so its processes stop too.
func (c *conn) send(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		c.s.log.Error("runtime: encode frame", "error", err)
		return false
	}
	ctx, cancel := c.writeContext()
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		c.shutdown()
		return false
	}
	return true
}

// writeContext bounds one frame's write, queueing behind other writers
// included, by the server's write timeout: a client that stops reading
// fills the socket's buffers and the write blocks; when the timeout passes
// the write fails and send shuts the connection down, which stops its
// execs. Closing the connection ends the wait at once.
func (c *conn) writeContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, c.s.writeTO)
}
