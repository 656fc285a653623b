package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// changesMargin is taken off the time `changes` reports as now: the kernel
// stamps a file's ctime from a clock that lags the one time.Now reads by
// up to a tick (a few milliseconds), so a change made just after the
// report could carry an earlier time. A base a little early only makes a
// change made just before it count as made after: a remake, never a miss.
const changesMargin = 50 * time.Millisecond

// changes is `primer-runtime changes [-since NANOS] [-skip DIR]... [-max N]`,
// which a Kubernetes workspace's reset runs in its pod (backend/kubernetes,
// restore.go): the runtime is in every pod, whatever the image holds. Its
// first line is "now <unix nanoseconds>" (the base a later call compares
// with); with -since it then prints every path of the container's root
// filesystem whose ctime is not before that time, up to -max of them. It
// stays on the root's filesystem (the workspace volume, /proc, /dev and the
// files the kubelet mounts are others) and skips the -skip directories.
// A ctime cannot be set back: a file a command created, changed, renamed or
// removed shows, in itself or in its directory.
func changes(args []string, out io.Writer) error {
	fl := flag.NewFlagSet("changes", flag.ContinueOnError)
	since := fl.Int64("since", 0, "print the paths changed at or after this time (unix nanoseconds)")
	limit := fl.Int("max", 20, "print at most this many paths")
	var skip []string
	fl.Func("skip", "a directory not to look in (repeatable)", func(s string) error {
		if !filepath.IsAbs(s) {
			return fmt.Errorf("-skip %s: not an absolute path", s)
		}
		skip = append(skip, filepath.Clean(s))
		return nil
	})
	if err := fl.Parse(args); err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	defer w.Flush()
	fmt.Fprintf(w, "now %d\n", time.Now().Add(-changesMargin).UnixNano())
	if *since == 0 {
		return nil
	}
	paths, err := changedSince("/", *since, skip, *limit)
	for _, p := range paths {
		fmt.Fprintln(w, p)
	}
	return err
}

// changedSince lists the paths under root, on root's filesystem and not
// under skip, whose ctime is not before since (unix nanoseconds), up to
// limit of them.
func changedSince(root string, since int64, skip []string, limit int) ([]string, error) {
	var top syscall.Stat_t
	if err := syscall.Lstat(root, &top); err != nil {
		return nil, fmt.Errorf("stat %s: %w", root, err)
	}
	var out []string
	errStop := errors.New("enough")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			// An unreadable directory: its own ctime was looked at when it
			// was listed, and a command that cannot read it could not
			// have changed it either.
			return nil
		}
		if d.IsDir() && p != root && slices.Contains(skip, p) {
			return fs.SkipDir
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return nil
		}
		if st.Dev != top.Dev {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if st.Ctim.Nano() >= since {
			if out = append(out, p); len(out) >= limit {
				return errStop
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return out, err
	}
	return out, nil
}
