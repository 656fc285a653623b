package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// tunnelClient is a client that writes frames by hand, to hold the runtime to
// the protocol where the Go client would never stray.
type tunnelClient struct {
	t   *testing.T
	ctx context.Context
	ws  *websocket.Conn
}

func dialTunnelClient(t *testing.T) *tunnelClient {
	t.Helper()
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	ws, _, err := websocket.Dial(ctx, e.URL, &websocket.DialOptions{
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + runtimetest.Token}},
		Subprotocols: []string{protocol.Version},
	})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	t.Cleanup(func() { _ = ws.CloseNow() })
	return &tunnelClient{t: t, ctx: ctx, ws: ws}
}

func (r *tunnelClient) send(req protocol.Request) {
	r.t.Helper()
	data := req.Data
	req.Data = nil
	hdr, _ := json.Marshal(req)
	var err error
	if data != nil {
		var b bytes.Buffer
		_ = protocol.WriteBinary(&b, hdr, data)
		err = r.ws.Write(r.ctx, websocket.MessageBinary, b.Bytes())
	} else {
		err = r.ws.Write(r.ctx, websocket.MessageText, hdr)
	}
	if err != nil {
		r.t.Fatal(err)
	}
}

// next reads one frame, with a binary frame's payload.
func (r *tunnelClient) next() protocol.Frame {
	r.t.Helper()
	typ, b, err := r.ws.Read(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	var payload []byte
	if typ == websocket.MessageBinary {
		if b, payload, err = protocol.SplitBinary(b); err != nil {
			r.t.Fatal(err)
		}
	}
	var f protocol.Frame
	if err := json.Unmarshal(b, &f); err != nil {
		r.t.Fatal(err)
	}
	f.Payload = payload
	return f
}

func (r *tunnelClient) open(id uint64, port int) {
	r.t.Helper()
	r.send(protocol.Request{ID: id, Op: protocol.OpTCPOpen, Port: port})
	if f := r.next(); f.Type != protocol.TypeResult || f.ID != id || f.Error != nil {
		r.t.Fatalf("tcp.open answered %+v", f)
	}
}

// TestTunnelRuntimeKeepsToWindow: the runtime never has more than the
// window of a program's output unacknowledged, and sends the rest as the
// client gives window back: 4 MiB arrive whole, then eof.
func TestTunnelRuntimeKeepsToWindow(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const total = 4 << 20
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		_, _ = nc.Write(bytes.Repeat([]byte("z"), total))
	}()
	r := dialTunnelClient(t)
	r.open(1, ln.Addr().(*net.TCPAddr).Port)
	var got, acked int64
	for {
		f := r.next()
		switch f.Type {
		case protocol.TypeTCPData:
			got += int64(len(f.Payload))
			if got-acked > protocol.TunnelWindow {
				t.Fatalf("the runtime has %d bytes unacknowledged, over the %d byte window", got-acked, protocol.TunnelWindow)
			}
			// A slow reader: window back only once all of it is used.
			if got-acked == protocol.TunnelWindow {
				r.send(protocol.Request{Op: protocol.OpTCPAck, Target: 1, Length: got - acked})
				acked = got
			}
		case protocol.TypeTCPEOF:
			if got != total {
				t.Fatalf("eof after %d bytes, want %d", got, total)
			}
			return
		default:
			t.Fatalf("unexpected frame %+v after %d bytes", f, got)
		}
	}
}

// TestTunnelClientOverrunsWindow: a client that sends more than the window
// ends its tunnel with invalid, and the connection serves on.
func TestTunnelClientOverrunsWindow(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if nc, err := ln.Accept(); err == nil {
			defer nc.Close()
			_, _ = nc.Read(make([]byte, 1))
		}
	}()
	r := dialTunnelClient(t)
	r.open(1, ln.Addr().(*net.TCPAddr).Port)
	r.send(protocol.Request{Op: protocol.OpTCPData, Target: 1, Data: make([]byte, protocol.TunnelWindow+1)})
	f := r.next()
	for f.Type == protocol.TypeTCPAck { // what was written before the overrun
		f = r.next()
	}
	if f.Type != protocol.TypeTCPEnd || f.ID != 1 || f.Error == nil || f.Error.Code != "invalid" || !strings.Contains(f.Error.Message, "window") {
		t.Fatalf("after an overrun: %+v %+v; want tcp.end with invalid naming the window", f, f.Error)
	}
	r.send(protocol.Request{ID: 2, Op: protocol.OpPing})
	if f := r.next(); f.Type != protocol.TypeResult || f.ID != 2 || f.Error != nil {
		t.Fatalf("ping after the overrun: %+v", f)
	}
}
