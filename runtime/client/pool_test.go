package client_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// TestPoolTokenDialsMeet: a Get with one token arriving while a Get with
// another token to the same runtime is dialing (after a platform restart,
// a re-attach with the runtime's own token beside a caller still holding
// the older row) waits for that dial instead of dropping it. The token the
// runtime takes gets its connection; the refused one gets forbidden.
func TestPoolTokenDialsMeet(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	gate, accepted := make(chan struct{}), make(chan struct{}, 8)
	proxy := gatedProxy(t, e.URL, gate, accepted)

	p := client.NewPool()
	defer p.Close()
	waiting := make(chan struct{}, 1)
	client.SetOnWait(p, func(string) { waiting <- struct{}{} })

	type got struct {
		c   *client.Client
		err error
	}
	right, stale := make(chan got, 1), make(chan got, 1)
	go func() {
		c, err := p.Get(ctx, "ws-1", proxy, runtimetest.Token)
		right <- got{c, err}
	}()
	<-accepted // the right token's dial is under way, held at the gate
	go func() {
		c, err := p.Get(ctx, "ws-1", proxy, "stale-token")
		stale <- got{c, err}
	}()
	select {
	case <-waiting:
	case g := <-stale:
		t.Fatalf("the stale token's Get returned %v before the dial under way ended; want it to wait", g.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the stale token's Get did not wait for the dial under way")
	}
	close(gate)

	r := <-right
	if r.err != nil {
		t.Fatalf("Get with the runtime's token = %v; want its connection (a stale token's Get must not drop it)", r.err)
	}
	s := <-stale
	if !errs.Is(s.err, errs.Forbidden) {
		t.Fatalf("Get with the stale token = %v; want forbidden", s.err)
	}
	if c, ok := p.Live("ws-1", runtimetest.Token); !ok || c != r.c {
		t.Fatalf("Live with the runtime's token = %p, %v; want its connection %p", c, ok, r.c)
	}
	if err := r.c.Ping(ctx); err != nil {
		t.Fatalf("the connection after the stale token was refused: %v", err)
	}
	if c, err := p.Get(ctx, "ws-1", proxy, runtimetest.Token); err != nil || c != r.c {
		t.Fatalf("Get with the runtime's token again = %p, %v; want %p", c, err, r.c)
	}
}

// gatedProxy forwards TCP connections to the runtime at target once gate
// is closed, telling accepted of each. It returns the proxy's ws url.
func gatedProxy(t *testing.T, target string, gate <-chan struct{}, accepted chan<- struct{}) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := u.Host
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = l.Close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			go func() {
				defer in.Close()
				select {
				case <-gate:
				case <-ctx.Done():
					return
				}
				out, err := net.Dial("tcp", host)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	u.Host = l.Addr().String()
	return u.String()
}
