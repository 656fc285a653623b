package client_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// TestStateParallelCommits makes commits from many goroutines on several
// connections at once: every one lands, in one linear chain.
func TestStateParallelCommits(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	clients := []*client.Client{e.Client}
	for range 3 {
		c, err := client.Dial(ctx, e.URL, runtimetest.Token)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	const n = 40
	results := make([]protocol.StateCommitResult, n)
	errc := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		c := clients[i%len(clients)]
		wg.Go(func() {
			name := fmt.Sprintf("f%02d", i)
			if err := c.WriteFile(ctx, name, []byte(name), 0); err != nil {
				errc <- err
				return
			}
			res, err := c.StateCommit(ctx, protocol.StateCommitParams{Message: "call " + name})
			results[i] = res
			errc <- err
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	log, err := e.Client.StateLog(ctx, protocol.StateLogParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Commits) != n {
		t.Fatalf("log has %d commits, want %d", len(log.Commits), n)
	}
	// One chain: each commit's only parent is the next one in the log.
	for i, cm := range log.Commits {
		want := []string{}
		if i+1 < n {
			want = []string{log.Commits[i+1].Commit}
		}
		if !slices.Equal(cm.Parents, want) {
			t.Fatalf("commit %d (%s) has parents %v, want %v", i, cm.Message, cm.Parents, want)
		}
	}
	// Every call's commit is in it, with its parent as reported, and every
	// file was added by exactly one of them.
	inLog := map[string]string{}
	for i, cm := range log.Commits {
		parent := ""
		if i+1 < n {
			parent = log.Commits[i+1].Commit
		}
		inLog[cm.Commit] = parent
	}
	added := map[string]int{}
	for i, r := range results {
		parent, ok := inLog[r.Commit]
		if !ok || parent != r.Parent {
			t.Fatalf("call %d: commit %s (parent %q) not in the chain as reported", i, r.Commit, r.Parent)
		}
		for _, ch := range r.Changed {
			if ch.Change == protocol.ChangeAdded {
				added[ch.Path]++
			}
		}
	}
	for i := range n {
		if name := fmt.Sprintf("f%02d", i); added[name] != 1 {
			t.Fatalf("%s added %d times", name, added[name])
		}
	}
}

// TestReset kills processes of every connection, lets their execs end
// with exit frames, and leaves an empty root and no history.
func TestReset(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	c2, err := client.Dial(ctx, e.URL, runtimetest.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()

	if err := c.WriteFile(ctx, "src/main.go", []byte("package main\n"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StateCommit(ctx, protocol.StateCommitParams{Message: "before reset"}); err != nil {
		t.Fatal(err)
	}
	// One streamed process on another connection, one collected on this one.
	p, err := c2.Start(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $$ > pid; exec sleep 100"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { b, _ := os.ReadFile(filepath.Join(e.Root, "pid")); return len(b) > 0 })
	pid, _ := os.ReadFile(filepath.Join(e.Root, "pid"))
	// Exec is Start and Wait: Start returns once the process runs.
	p2, err := c.Start(ctx, protocol.ExecRequest{Args: []string{"sleep", "100"}})
	if err != nil {
		t.Fatal(err)
	}
	collected := make(chan error, 1)
	go func() {
		res, err := p2.Wait()
		if err == nil && (!res.Canceled || res.ExitCode != 128+9) {
			err = fmt.Errorf("result %+v, want canceled by SIGKILL", res)
		}
		collected <- err
	}()

	start := time.Now()
	res, err := c.Reset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Killed != 2 {
		t.Fatalf("killed = %d, want 2", res.Killed)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("reset took %v", d)
	}
	r, err := p.Wait()
	if err != nil || !r.Canceled || r.ExitCode != 128+9 || r.Signal != "SIGKILL" {
		t.Fatalf("Wait of the killed process = %+v, %v; want canceled by SIGKILL", r, err)
	}
	select {
	case err := <-collected:
		if err != nil {
			t.Fatalf("Wait of the second process: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Exec did not return after reset")
	}
	if processAlive(t, strings.TrimSpace(string(pid))) {
		t.Fatalf("process %s survived the reset", pid)
	}
	ents, err := os.ReadDir(e.Root)
	if err != nil || len(ents) != 0 {
		t.Fatalf("root after reset = %v, %v; want empty", ents, err)
	}
	// Both connections still work; the history starts over.
	if log, err := c2.StateLog(ctx, protocol.StateLogParams{}); err != nil || len(log.Commits) != 0 {
		t.Fatalf("log after reset = %+v, %v", log, err)
	}
	if cm, err := c.StateCommit(ctx, protocol.StateCommitParams{Message: "fresh"}); err != nil || cm.Parent != "" || len(cm.Changed) != 0 {
		t.Fatalf("commit after reset = %+v, %v", cm, err)
	}
	// Nothing left to kill.
	if res, err := c.Reset(ctx); err != nil || res.Killed != 0 {
		t.Fatalf("second reset = %+v, %v", res, err)
	}
}
