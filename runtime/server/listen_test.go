package server_test

import (
	"encoding/json"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/primerhq/primer/runtime/protocol"
)

// TestGatewayListenAnnouncesTunnels holds the runtime to the wire: a
// gateway.listen result names the port; a program's connection there is
// announced by tcp.accept with the request's id and a tunnel id with the
// top bit set; the program's bytes arrive as tcp.data of that tunnel and
// the client's tcp.data and tcp.eof reach the program.
func TestGatewayListenAnnouncesTunnels(t *testing.T) {
	r := dialTunnelClient(t)
	r.send(protocol.Request{ID: 7, Op: protocol.OpGatewayListen})
	f := r.next()
	var res protocol.GatewayListenResult
	if f.Type != protocol.TypeResult || f.ID != 7 || f.Error != nil || json.Unmarshal(f.Result, &res) != nil || res.Port == 0 {
		t.Fatalf("gateway.listen answered %+v", f)
	}
	nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(res.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	f = r.next()
	if f.Type != protocol.TypeTCPAccept || f.ID != 7 || f.Tunnel&protocol.ReverseTunnelBit == 0 {
		t.Fatalf("after a connection: frame %+v, want tcp.accept for request 7 with a runtime tunnel id", f)
	}
	tid := f.Tunnel
	if _, err := nc.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if f = r.next(); f.Type != protocol.TypeTCPData || f.ID != tid || string(f.Payload) != "ping" {
		t.Fatalf("the program's bytes came as %+v (payload %q)", f, f.Payload)
	}
	r.send(protocol.Request{Op: protocol.OpTCPData, Target: tid, Data: []byte("pong")})
	r.send(protocol.Request{Op: protocol.OpTCPEOF, Target: tid})
	got, err := io.ReadAll(nc)
	if err != nil || string(got) != "pong" {
		t.Fatalf("the program read %q, %v; want pong then EOF", got, err)
	}
}

// TestGatewayListenBadPort: a port outside 0..65535 is refused invalid.
func TestGatewayListenBadPort(t *testing.T) {
	r := dialTunnelClient(t)
	r.send(protocol.Request{ID: 3, Op: protocol.OpGatewayListen, Port: -1})
	if f := r.next(); f.Type != protocol.TypeResult || f.Error == nil || f.Error.Code != "invalid" {
		t.Fatalf("gateway.listen port -1 answered %+v", f)
	}
}
