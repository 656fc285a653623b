package server

import (
	"testing"

	"github.com/primerhq/primer/runtime/protocol"
)

// TestParseProcNetTCP: listening sockets on loopback and any address are
// read from both tables, others (a connection, a socket bound to another
// address) are not.
func TestParseProcNetTCP(t *testing.T) {
	v4 := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0000000000000000 100 0 0 10 0
   1: 00000000:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 222 1 0000000000000000 100 0 0 10 0
   2: 0A00000A:1388 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 333 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 444 1 0000000000000000 100 0 0 10 0
`
	v6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F41 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 555 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 666 1 0000000000000000 100 0 0 10 0
`
	got := append(parseProcNetTCP([]byte(v4)), parseProcNetTCP([]byte(v6))...)
	want := []procSocket{
		{protocol.ListeningPort{Port: 8080, Address: "127.0.0.1"}, "111"},
		{protocol.ListeningPort{Port: 3000, Address: "0.0.0.0"}, "222"},
		{protocol.ListeningPort{Port: 8001, Address: "::1"}, "555"},
		{protocol.ListeningPort{Port: 80, Address: "::"}, "666"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("socket %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
