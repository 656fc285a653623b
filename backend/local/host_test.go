package local_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/server"
)

func execEcho(s string) protocol.ExecRequest {
	return protocol.ExecRequest{Args: []string{"sh", "-c", "echo " + s}}
}

func TestHostServe(t *testing.T) {
	host := local.NewHost(nil)
	t.Cleanup(func() { host.Close() })
	ctx := t.Context()
	if host.Addr() != "" {
		t.Error("host listens before first use")
	}

	id := backendtest.NewID(t)
	root := t.TempDir()
	u1, err := host.Serve(ctx, id, server.Config{Root: root, Token: "one", Env: map[string]string{"E": "kept"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "ws://" + host.Addr() + "/w/" + id; u1 != want || host.URL(id) != want {
		t.Fatalf("Serve URL = %q, URL() = %q, want %q", u1, host.URL(id), want)
	}
	if !strings.HasPrefix(host.Addr(), "127.0.0.1:") {
		t.Errorf("host listens on %s, want loopback", host.Addr())
	}
	c1, err := client.Dial(ctx, u1, "one")
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()

	// Same id and token: the same runtime stays, connections and env included.
	u2, err := host.Serve(ctx, id, server.Config{Root: root, Token: "one"})
	if err != nil || u2 != u1 {
		t.Fatalf("second Serve = %q, %v; want %q", u2, err, u1)
	}
	if err := c1.Ping(ctx); err != nil {
		t.Fatalf("idempotent Serve dropped a connection: %v", err)
	}
	res, err := c1.Exec(ctx, execEcho("$E"), nil, nil)
	if err != nil || string(res.Stdout) != "kept\n" {
		t.Errorf("env after idempotent Serve = %q, %v; want kept", res.Stdout, err)
	}

	// A new token replaces the runtime: the old token and connection die.
	if _, err := host.Serve(ctx, id, server.Config{Root: root, Token: "two"}); err != nil {
		t.Fatal(err)
	}
	if err := c1.Ping(ctx); err == nil {
		t.Error("connection with the replaced token still answers")
	}
	if err := refused(ctx, u1, "one"); err != nil {
		t.Error(err)
	}
	c2, err := client.Dial(ctx, u1, "two")
	if err != nil {
		t.Fatalf("dial with the new token: %v", err)
	}
	defer c2.Close()
	if err := c2.Ping(ctx); err != nil {
		t.Fatal(err)
	}

	// Stop: nothing is served under the id any more.
	host.Stop(id)
	host.Stop(id) // twice is fine
	if host.URL(id) != "" || host.Len() != 0 {
		t.Errorf("after Stop: URL %q, Len %d", host.URL(id), host.Len())
	}
	if err := refused(ctx, u1, "two"); err != nil {
		t.Error(err)
	}

	// Paths that name no workspace are 404s.
	base := "http://" + host.Addr()
	for _, p := range []string{"/", "/w/", "/w/" + id, "/w/nope", "/other/" + id} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, resp.StatusCode)
		}
	}

	// Bad input.
	for _, tc := range []struct {
		id  string
		cfg server.Config
	}{
		{"../x", server.Config{Root: root, Token: "t"}},
		{id, server.Config{Root: root}},
		{id, server.Config{Token: "t"}},
	} {
		if _, err := host.Serve(ctx, tc.id, tc.cfg); !errs.Is(err, errs.Invalid) {
			t.Errorf("Serve(%q, root %q, token set %v) = %v, want invalid", tc.id, tc.cfg.Root, tc.cfg.Token != "", err)
		}
	}

	// Close: everything stops and the host refuses new work.
	if _, err := host.Serve(ctx, id, server.Config{Root: root, Token: "three"}); err != nil {
		t.Fatal(err)
	}
	if err := host.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := host.Serve(ctx, id, server.Config{Root: root, Token: "three"}); !errs.Is(err, errs.Unavailable) {
		t.Errorf("Serve after Close = %v, want unavailable", err)
	}
	if err := refused(ctx, u1, "three"); err != nil {
		t.Error(err)
	}
}

// refused returns an error unless the runtime at url refuses or is absent.
func refused(ctx context.Context, url, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, token)
	if err != nil {
		return nil
	}
	defer c.Close()
	if c.Ping(ctx) != nil {
		return nil
	}
	return fmt.Errorf("runtime at %s answers token %q, want refused", url, token)
}

// TestHostManyWorkspaces shows why the Host exists: 1,000 workspaces cost
// one listener and one port, not 1,000 processes.
func TestHostManyWorkspaces(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	host := local.NewHost(nil)
	t.Cleanup(func() { host.Close() })
	ctx := t.Context()
	root := t.TempDir()

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	goroutinesBefore := runtime.NumGoroutine()

	start := time.Now()
	urls := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("ws-%04x", i)
		u, err := host.Serve(ctx, id, server.Config{Root: root + "/" + id, Token: "tok-" + id})
		if err != nil {
			t.Fatal(err)
		}
		urls[i] = u
	}
	serveTime := time.Since(start)

	// Every runtime answers, on one port, each to its own token only.
	start = time.Now()
	clients := make([]*client.Client, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			id := fmt.Sprintf("ws-%04x", i)
			c, err := client.Dial(ctx, urls[i], "tok-"+id)
			if err != nil {
				t.Errorf("dial %s: %v", id, err)
				return
			}
			if err := c.Ping(ctx); err != nil {
				t.Errorf("ping %s: %v", id, err)
			}
			clients[i] = c
		})
	}
	wg.Wait()
	dialTime := time.Since(start)
	t.Cleanup(func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	})

	hosts := map[string]bool{}
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		hosts[p.Host] = true
	}
	if len(hosts) != 1 || host.Len() != n {
		t.Errorf("%d workspaces on %d addresses (%v), Len %d; want one address", n, len(hosts), hosts, host.Len())
	}

	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("%d runtimes on one host: serve %s (%s each), dial+ping %s; heap +%.1f MiB (%.1f KiB per workspace with one open connection), goroutines +%d",
		n, serveTime, serveTime/time.Duration(n), dialTime,
		float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20),
		float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/1024/float64(n),
		runtime.NumGoroutine()-goroutinesBefore)

	start = time.Now()
	if err := host.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("closing %d runtimes took %s", n, time.Since(start))
}
