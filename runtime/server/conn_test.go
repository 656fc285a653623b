package server_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// A client that stops reading does not hold the server past its write
// timeout: the exec flooding the connection blocks in the server's write,
// the write gives up after WriteTimeout, the connection is shut down and
// the exec killed, and the server goes on serving other clients. Without
// the deadline the write (and the process, blocked on its full pipe) would
// wait for the client forever.
func TestStuckClientLosesConnection(t *testing.T) {
	for _, tt := range []struct {
		name    string
		timeout time.Duration
	}{
		{"short deadline", 300 * time.Millisecond},
		{"longer deadline", 1500 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := runtimetest.Start(t, server.Config{WriteTimeout: tt.timeout})
			ctx := runtimetest.Ctx(t)
			ws, _, err := websocket.Dial(ctx, e.URL, &websocket.DialOptions{
				HTTPHeader:   http.Header{"Authorization": {"Bearer " + runtimetest.Token}},
				Subprotocols: []string{protocol.Version},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ws.CloseNow() })
			req, _ := json.Marshal(protocol.Request{ID: 1, Op: protocol.OpExec, Exec: &protocol.ExecParams{
				Args: []string{"sh", "-c", "echo $$ > pid; exec yes primer-flood-line"},
			}})
			if err := ws.Write(ctx, websocket.MessageText, req); err != nil {
				t.Fatal(err)
			}
			// From here on the client reads nothing.
			pid := waitPID(t, filepath.Join(e.Root, "pid"))
			start := time.Now()
			// The process dies when the server gives up on the client;
			// the bound leaves the loaded machine a wide margin over the
			// deadline, and is far short of "never".
			limit := tt.timeout + 20*time.Second
			for alive(pid) {
				if time.Since(start) > limit {
					t.Fatalf("exec %d still running %s after the client stopped reading (write timeout %s)", pid, time.Since(start), tt.timeout)
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("flooding exec killed %s after its pid appeared (write timeout %s)", time.Since(start).Round(time.Millisecond), tt.timeout)
			// The server still answers a client that reads.
			if err := e.Client.Ping(ctx); err != nil {
				t.Fatalf("ping on another connection after the stuck one: %v", err)
			}
		})
	}
}

// waitPID reads the pid a command wrote to path, waiting for it to appear.
func waitPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("pid file %q: %v", b, err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s after 30 s: %v", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid is a running process (a zombie is not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
