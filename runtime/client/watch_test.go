package client_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// expectEvent reads w until it reports event on name; events before it
// (inotify reports a write as several) are skipped.
func expectEvent(t *testing.T, w *client.Watch, name, event string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var seen []string
	for {
		ev, ok, err := w.Next(ctx)
		if !ok {
			t.Fatalf("watch ended (%v) before %s %s; saw %q", err, event, name, seen)
		}
		if ev.Name == name && ev.Event == event {
			return
		}
		seen = append(seen, ev.Event+" "+ev.Name)
	}
}

func TestWatch(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	dir := filepath.Join(e.Root, "d")
	if err := os.MkdirAll(filepath.Join(dir, "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := e.Client.Watch(ctx, "d", true)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	steps := []struct {
		do          func() error
		name, event string
	}{
		{func() error { return os.WriteFile(filepath.Join(dir, "a.txt"), nil, 0o644) }, "a.txt", "create"},
		{func() error { return os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x"), 0o644) }, "a.txt", "write"},
		{func() error { return os.Chmod(filepath.Join(dir, "a.txt"), 0o600) }, "a.txt", "chmod"},
		// A directory that existed at the start is watched too.
		{func() error { return os.WriteFile(filepath.Join(dir, "old", "o.txt"), nil, 0o644) }, "old/o.txt", "create"},
		// So is one made after it.
		{func() error { return os.Mkdir(filepath.Join(dir, "sub"), 0o755) }, "sub", "create"},
		{func() error { return os.WriteFile(filepath.Join(dir, "sub", "b.txt"), nil, 0o644) }, "sub/b.txt", "create"},
		{func() error { return os.Rename(filepath.Join(dir, "a.txt"), filepath.Join(dir, "c.txt")) }, "a.txt", "rename"},
		{func() error { return nil }, "c.txt", "create"},
		{func() error { return os.Remove(filepath.Join(dir, "c.txt")) }, "c.txt", "remove"},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, w, s.name, s.event)
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for {
		_, ok, err := w.Next(ctx)
		if !ok {
			if err != nil {
				t.Fatalf("after Stop: %v", err)
			}
			break
		}
	}
}

func TestWatchNotRecursive(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	if err := os.MkdirAll(filepath.Join(e.Root, "d", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := e.Client.Watch(ctx, "d", false)
	if err != nil {
		t.Fatal(err)
	}
	// The nested file is not reported; the later top-level one is, and
	// events arrive in order, so it is the first.
	if err := os.WriteFile(filepath.Join(e.Root, "d", "sub", "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Root, "d", "y"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ev, ok, err := w.Next(ctx)
	if !ok || ev.Name != "y" || ev.Event != "create" {
		t.Fatalf("first event %+v ok=%v err=%v, want create y", ev, ok, err)
	}
}

func TestWatchEnds(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	if err := os.MkdirAll(filepath.Join(e.Root, "gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		kind errs.Kind
	}{{"missing", errs.NotFound}, {"file", errs.Invalid}, {"../out", errs.Invalid}} {
		if _, err := e.Client.Watch(ctx, tc.path, false); !errs.Is(err, tc.kind) {
			t.Errorf("Watch(%q) = %v, want %v", tc.path, err, tc.kind)
		}
	}
	w, err := e.Client.Watch(ctx, "gone", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(e.Root, "gone")); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, "", "remove")
	if _, ok, err := w.Next(ctx); ok || err != nil {
		t.Fatalf("after the directory's removal: ok=%v err=%v, want the end", ok, err)
	}
	// So does its move.
	if err := os.MkdirAll(filepath.Join(e.Root, "moving"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err = e.Client.Watch(ctx, "moving", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(e.Root, "moving"), filepath.Join(e.Root, "moved")); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, "", "rename")
	if _, ok, err := w.Next(ctx); ok || err != nil {
		t.Fatalf("after the directory's move: ok=%v err=%v, want the end", ok, err)
	}
	// A connection's end ends its watches.
	w2, err := e.Client.Watch(ctx, ".", false)
	if err != nil {
		t.Fatal(err)
	}
	_ = e.Client.Close()
	if _, ok, err := w2.Next(ctx); ok || !errs.Is(err, errs.Unavailable) {
		t.Fatalf("after Close: ok=%v err=%v, want Unavailable", ok, err)
	}
}
