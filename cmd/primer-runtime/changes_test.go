package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestChangedSince: after a base taken by `changes` (its now line), every
// kind of change a case can make shows: a file added, one rewritten, one
// removed or renamed (its directory), a mode changed; a skipped directory
// and what was there before the base do not.
func TestChangedSince(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"etc", "usr/local", "tmp", "home/u", "workspace"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"etc/conf", "usr/local/tool", "home/u/.rc", "tmp/old", "workspace/a"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("base"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := func() int64 {
		t.Helper()
		var out bytes.Buffer
		if err := changes(nil, &out); err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(out.String()), "now "), 10, 64)
		if err != nil {
			t.Fatalf("changes without -since printed %q", out.String())
		}
		return n
	}
	// The base is changesMargin early, so what was written just before it
	// counts as changed: the cases start from one taken once the tree's
	// writes are more than the margin old (reading the clock meanwhile).
	written := time.Now().UnixNano()
	since := base()
	for since <= written {
		since = base()
	}
	skip := []string{filepath.Join(root, "workspace")}
	if got, err := changedSince(root, since, skip, 100); err != nil || len(got) != 0 {
		t.Fatalf("changes of an untouched tree = %v, %v; want none", got, err)
	}
	cases := []struct {
		name string
		do   func() error
		want string
	}{
		{"add", func() error { return os.WriteFile(filepath.Join(root, "tmp/mark"), nil, 0o644) }, "tmp/mark"},
		{"rewrite", func() error { return os.WriteFile(filepath.Join(root, "usr/local/tool"), []byte("x"), 0o644) }, "usr/local/tool"},
		{"remove", func() error { return os.Remove(filepath.Join(root, "tmp/old")) }, "tmp"},
		{"rename", func() error {
			return os.Rename(filepath.Join(root, "home/u/.rc"), filepath.Join(root, "home/u/.rc2"))
		}, "home/u"},
		{"chmod", func() error { return os.Chmod(filepath.Join(root, "etc/conf"), 0o600) }, "etc/conf"},
	}
	for _, c := range cases {
		if err := c.do(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := changedSince(root, since, skip, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(got, filepath.Join(root, c.want)) {
			t.Errorf("%s: changes = %v; want %s among them", c.name, got, c.want)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "workspace/b"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := changedSince(root, since, skip, 100)
	for _, p := range got {
		if strings.HasPrefix(p, skip[0]) {
			t.Errorf("changes list %s, under the skipped %s", p, skip[0])
		}
	}
	if got, _ := changedSince(root, since, skip, 2); len(got) != 2 {
		t.Errorf("changes with a limit of 2 = %v; want 2 paths", got)
	}
}
