package backendtest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// The snapshot and pause cases: Snapshot, FromSnapshot, Fork and
// PauseResume. They run only on backends that implement backend.Snapshotter
// or backend.Pauser, and check first that the backend's Capabilities say
// so, since the API refuses what Capabilities do not list.

// snapshotter returns b as a backend.Snapshotter, or skips t naming the
// capability. A backend that lists snapshot modes without implementing it
// (or the other way round) fails.
func snapshotter(t *testing.T, b backend.Backend) backend.Snapshotter {
	t.Helper()
	sn, ok := b.(backend.Snapshotter)
	modes := b.Capabilities().Snapshots
	if !ok {
		if len(modes) > 0 {
			t.Fatalf("%T lists snapshot modes %v but does not implement backend.Snapshotter", b, modes)
		}
		t.Skipf("%T does not implement backend.Snapshotter (Capabilities().Snapshots is empty)", b)
	}
	if !slices.Contains(modes, backend.SnapshotFilesystem) {
		t.Fatalf("%T implements backend.Snapshotter but Capabilities().Snapshots = %v, want it to list %q", b, modes, backend.SnapshotFilesystem)
	}
	return sn
}

// pauser returns b as a backend.Pauser, or skips t naming the capability.
func pauser(t *testing.T, b backend.Backend) backend.Pauser {
	t.Helper()
	p, ok := b.(backend.Pauser)
	if ok != b.Capabilities().Pause {
		t.Fatalf("%T: implements backend.Pauser = %v, but Capabilities().Pause = %v", b, ok, b.Capabilities().Pause)
	}
	if !ok {
		t.Skipf("%T does not implement backend.Pauser (Capabilities().Pause is false)", b)
	}
	return p
}

// NewSnapshotID returns a fresh snapshot id of the server's form,
// snap-<hex>.
func NewSnapshotID(t testing.TB) string {
	return "snap-" + strings.TrimPrefix(NewID(t), "ws-")
}

// snapshot takes a filesystem snapshot of h and deletes it at cleanup.
func (s *suite) snapshot(t *testing.T, sn backend.Snapshotter, h backend.Handle) backend.SnapshotRef {
	t.Helper()
	id := NewSnapshotID(t)
	ref, err := sn.Snapshot(s.ctx(t), h, backend.SnapshotRequest{SnapshotID: id, TenantID: "default", Mode: backend.SnapshotFilesystem})
	if err != nil {
		t.Fatalf("snapshot %s of %s: %v", id, h.WorkspaceID, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
		defer cancel()
		if err := sn.DeleteSnapshot(ctx, ref); err != nil {
			t.Errorf("cleanup: delete snapshot %s: %v", id, err)
		}
	})
	return ref
}

// provisionFrom provisions workspace id from ref, destroyed at cleanup.
func (s *suite) provisionFrom(t *testing.T, b backend.Backend, id, token string, ref backend.SnapshotRef) backend.Handle {
	t.Helper()
	h, err := b.Provision(s.ctx(t), s.fromRequest(id, token, ref))
	if err != nil {
		t.Fatalf("provision %s from snapshot %s: %v", id, ref.SnapshotID, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
		defer cancel()
		if err := b.Destroy(ctx, h); err != nil {
			t.Errorf("cleanup: destroy %s: %v", id, err)
		}
	})
	return h
}

func (s *suite) fromRequest(id, token string, ref backend.SnapshotRef) backend.ProvisionRequest {
	r := ref
	return backend.ProvisionRequest{
		WorkspaceID: id, TenantID: "default", Template: s.h.Template,
		Env: map[string]string{"FOO": "foo-" + id}, Token: token, Snapshot: &r,
	}
}

// sh runs a shell script in the workspace and fails t unless it exits 0.
func sh(ctx context.Context, t *testing.T, c *client.Client, script string) string {
	t.Helper()
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", script}}, nil, nil)
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exec %q: exit %d, stdout %q, stderr %q", script, res.ExitCode, res.Stdout, res.Stderr)
	}
	return string(res.Stdout)
}

// The files the snapshot cases write before a capture: in the workspace
// directory, with modes, an owner other than the runtime's where the
// runtime may chown (root in a container), a symlink; and, on backends that
// capture the whole sandbox, files outside it (/tmp, /usr/local) where a
// case of an eval suite or an installed package leaves them.
const (
	writeSnapFiles = `set -e
mkdir -p snap/sub
printf 'a-%s' "$FOO" > snap/a.txt; chmod 0640 snap/a.txt
printf '#!/bin/sh\necho run\n' > snap/sub/run.sh; chmod 0755 snap/sub/run.sh
printf owned > snap/owned; chmod 0604 snap/owned; chown 1234:2345 snap/owned 2>/dev/null || true
ln -s a.txt snap/link`
	writeSandboxFiles = `set -e
printf mark > /tmp/mark; chmod 0600 /tmp/mark
mkdir -p /usr/local/x; printf x > /usr/local/x/f; chmod 0750 /usr/local/x/f; chown 1234:2345 /usr/local/x/f 2>/dev/null || true`
	snapPaths    = "snap/a.txt snap/sub/run.sh snap/owned snap/link"
	sandboxPaths = "/tmp/mark /usr/local/x/f"
)

// writeFiles writes the snapshot cases' files.
func (s *suite) writeFiles(ctx context.Context, t *testing.T, c *client.Client) {
	t.Helper()
	sh(ctx, t, c, writeSnapFiles)
	if s.h.WholeSandbox {
		sh(ctx, t, c, writeSandboxFiles)
	}
}

// fingerprint describes the files writeFiles wrote: names, modes, owners,
// sizes, types, the link's target and the contents, so two sandboxes with
// the same files have the same fingerprint.
func (s *suite) fingerprint(ctx context.Context, t *testing.T, c *client.Client) string {
	t.Helper()
	paths := snapPaths
	if s.h.WholeSandbox {
		paths += " " + sandboxPaths
	}
	script := "stat -c '%n mode=%a uid=%u gid=%g size=%s %F' " + paths + " && readlink snap/link && cat snap/a.txt snap/owned"
	if s.h.WholeSandbox {
		script += " /tmp/mark /usr/local/x/f"
	}
	return sh(ctx, t, c, script)
}

// snapshotCase: Snapshot captures a sandbox, is idempotent on its id,
// reports a size, leaves the sandbox running, and DeleteSnapshot removes it
// (twice is fine); a provision from a deleted snapshot fails.
func (s *suite) snapshotCase(t *testing.T) {
	b := s.h.New(t)
	sn := snapshotter(t, b)
	ctx := s.ctx(t)
	id, token := NewID(t), NewToken(t)
	h := s.provision(t, b, id, token)
	c := Dial(ctx, t, b, h, token)
	s.writeFiles(ctx, t, c)
	want := s.fingerprint(ctx, t, c)

	snapID := NewSnapshotID(t)
	req := backend.SnapshotRequest{SnapshotID: snapID, TenantID: "default", Mode: backend.SnapshotFilesystem}
	ref, err := sn.Snapshot(ctx, h, req)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = sn.DeleteSnapshot(context.Background(), ref)
		}
	})
	if ref.Backend != h.Backend || ref.SnapshotID != snapID || ref.Mode != backend.SnapshotFilesystem {
		t.Errorf("snapshot ref = %+v, want backend %q, snapshot %s, mode %s", ref, h.Backend, snapID, backend.SnapshotFilesystem)
	}
	if ref.Bytes <= 0 {
		t.Errorf("snapshot ref Bytes = %d, want the capture's size (> 0)", ref.Bytes)
	}
	// A ref travels through workflow history and the database as JSON.
	raw, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	var stored backend.SnapshotRef
	if err := json.Unmarshal(raw, &stored); err != nil || !reflect.DeepEqual(stored, ref) {
		t.Fatalf("snapshot ref %s does not survive JSON: %+v, %v", raw, stored, err)
	}

	// A retried snapshot (the activity's first try crashed after the
	// backend finished) finds the same capture.
	again, err := sn.Snapshot(ctx, h, req)
	if err != nil {
		t.Fatalf("second snapshot with the same id: %v", err)
	}
	if again.Ref != ref.Ref || again.SnapshotID != ref.SnapshotID || again.Backend != ref.Backend {
		t.Errorf("second snapshot with the same id = %+v, want the first's %+v", again, ref)
	}

	// The source keeps running with its files.
	if err := c.Ping(ctx); err != nil {
		c = Dial(ctx, t, b, h, token)
	}
	if got := s.fingerprint(ctx, t, c); got != want {
		t.Errorf("source after snapshot:\n%s\nwant\n%s", got, want)
	}
	sh(ctx, t, c, "printf after > snap/after.txt")

	if err := sn.DeleteSnapshot(ctx, stored); err != nil {
		t.Fatalf("delete snapshot: %v", err)
	}
	deleted = true
	if s.h.SnapshotGone != nil && !s.h.SnapshotGone(t, stored) {
		t.Error("after delete snapshot, something of the capture is left")
	}
	if err := sn.DeleteSnapshot(ctx, stored); err != nil {
		t.Errorf("second delete snapshot: %v, want nil", err)
	}
	childID := NewID(t)
	if ch, err := b.Provision(ctx, s.fromRequest(childID, NewToken(t), stored)); err == nil {
		_ = b.Destroy(context.Background(), ch)
		t.Error("provision from a deleted snapshot succeeded, want an error")
	} else if !s.h.Gone(t, backend.Handle{Backend: h.Backend, WorkspaceID: childID}) {
		t.Error("a failed provision from a deleted snapshot left something behind")
	}
}

// fromSnapshot: a sandbox provisioned from a snapshot has the files the
// source had at the capture (contents, modes, owners; outside the workspace
// directory too where the backend captures the whole sandbox), not those
// written after it, its own env and token, and outlives its source. A
// retried provision finds it with the files it has made since.
func (s *suite) fromSnapshot(t *testing.T) {
	b := s.h.New(t)
	sn := snapshotter(t, b)
	ctx := s.ctx(t)
	srcID, srcToken := NewID(t), NewToken(t)
	src, err := b.Provision(ctx, backend.ProvisionRequest{
		WorkspaceID: srcID, TenantID: "default", Template: s.h.Template,
		Env: map[string]string{"FOO": "foo-" + srcID}, Token: srcToken,
	})
	if err != nil {
		t.Fatalf("provision source: %v", err)
	}
	srcGone := false
	t.Cleanup(func() {
		if !srcGone {
			_ = b.Destroy(context.Background(), src)
		}
	})
	c := Dial(ctx, t, b, src, srcToken)
	s.writeFiles(ctx, t, c)
	want := s.fingerprint(ctx, t, c)
	t.Logf("files at the snapshot:\n%s", want)
	ref := s.snapshot(t, sn, src)
	sh(ctx, t, c, "printf after > snap/after.txt; printf changed > snap/a.txt")
	c.Close()
	// The snapshot outlives its source.
	if err := b.Destroy(ctx, src); err != nil {
		t.Fatalf("destroy source: %v", err)
	}
	srcGone = true

	id, token := NewID(t), NewToken(t)
	h := s.provisionFrom(t, b, id, token, ref)
	if h.WorkspaceID != id {
		t.Fatalf("handle = %+v, want workspace %s", h, id)
	}
	cc := Dial(ctx, t, b, h, token)
	if got := s.fingerprint(ctx, t, cc); got != want {
		t.Errorf("sandbox from the snapshot has:\n%s\nwant what the source had at the snapshot:\n%s", got, want)
	}
	if _, err := cc.Stat(ctx, "snap/after.txt"); err == nil {
		t.Error("sandbox from the snapshot sees snap/after.txt, written in the source after the snapshot")
	}
	if got := sh(ctx, t, cc, "echo $FOO; sh snap/sub/run.sh"); got != "foo-"+id+"\nrun\n" {
		t.Errorf("exec in the sandbox from the snapshot = %q, want its own env and the captured script's output", got)
	}
	ep, err := b.Endpoint(ctx, h, token)
	if err != nil {
		t.Fatal(err)
	}
	if oc, err := client.Dial(ctx, ep.URL, srcToken); err == nil {
		if oc.Ping(ctx) == nil {
			t.Error("the sandbox from the snapshot answers to its source's token")
		}
		oc.Close()
	}

	// A retried provision finds the same sandbox and does not copy the
	// snapshot over what it has made since.
	sh(ctx, t, cc, "printf mine > snap/mine.txt")
	cc.Close()
	h2, err := b.Provision(ctx, s.fromRequest(id, token, ref))
	if err != nil {
		t.Fatalf("second provision from the snapshot: %v", err)
	}
	if !reflect.DeepEqual(h, h2) {
		t.Errorf("second provision from the snapshot = %+v, want %+v", h2, h)
	}
	c2 := Dial(ctx, t, b, h2, token)
	if got, err := c2.ReadFile(ctx, "snap/mine.txt"); err != nil || string(got) != "mine" {
		t.Errorf("after a second provision, snap/mine.txt = %q, %v; want %q", got, err, "mine")
	}
}

// fork: sandboxes made at once from one snapshot are independent of each
// other and of their source: a write in one is seen by none of the others.
func (s *suite) fork(t *testing.T) {
	const n = 3
	b := s.h.New(t)
	sn := snapshotter(t, b)
	ctx := s.ctx(t)
	srcID, srcToken := NewID(t), NewToken(t)
	src := s.provision(t, b, srcID, srcToken)
	c := Dial(ctx, t, b, src, srcToken)
	s.writeFiles(ctx, t, c)
	want := s.fingerprint(ctx, t, c)
	ref := s.snapshot(t, sn, src)

	ids, tokens := make([]string, n), make([]string, n)
	handles, errList := make([]backend.Handle, n), make([]error, n)
	for i := range n {
		ids[i], tokens[i] = NewID(t), NewToken(t)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { handles[i], errList[i] = b.Provision(ctx, s.fromRequest(ids[i], tokens[i], ref)) })
	}
	wg.Wait()
	for i := range n {
		if errList[i] != nil {
			t.Errorf("provision child %s: %v", ids[i], errList[i])
			continue
		}
		h := handles[i]
		t.Cleanup(func() {
			if err := b.Destroy(context.Background(), h); err != nil {
				t.Errorf("cleanup: destroy %s: %v", h.WorkspaceID, err)
			}
		})
	}
	if t.Failed() {
		return
	}
	clients := make([]*client.Client, n)
	for i, h := range handles {
		clients[i] = Dial(ctx, t, b, h, tokens[i])
		if got := s.fingerprint(ctx, t, clients[i]); got != want {
			t.Errorf("child %s has:\n%s\nwant the snapshot's:\n%s", ids[i], got, want)
		}
	}
	// Each child changes a captured file and adds its own, inside the
	// workspace and, where captured, outside it.
	write := func(c *client.Client, who string) {
		script := fmt.Sprintf("printf %[1]s > snap/a.txt; printf %[1]s > snap/own-%[1]s", who)
		if s.h.WholeSandbox {
			script += fmt.Sprintf("; printf %[1]s > /tmp/mark; printf %[1]s > /usr/local/x/own-%[1]s", who)
		}
		sh(ctx, t, c, script)
	}
	for i, c := range clients {
		write(c, ids[i])
	}
	check := func(c *client.Client, who string) {
		t.Helper()
		wantA := "a-foo-" + srcID
		if who != srcID {
			wantA = who
		}
		if got, err := c.ReadFile(ctx, "snap/a.txt"); err != nil || string(got) != wantA {
			t.Errorf("%s: snap/a.txt = %q, %v; want %q", who, got, err, wantA)
		}
		ls := "ls snap"
		if s.h.WholeSandbox {
			ls += " /usr/local/x; cat /tmp/mark"
		}
		out := sh(ctx, t, c, ls)
		for _, other := range append([]string{srcID}, ids...) {
			if other != who && strings.Contains(out, other) {
				t.Errorf("%s sees a write of %s:\n%s", who, other, out)
			}
		}
		if who != srcID && s.h.WholeSandbox && !strings.HasSuffix(out, who) {
			t.Errorf("%s: /tmp/mark does not hold its own write:\n%s", who, out)
		}
	}
	for i, c := range clients {
		check(c, ids[i])
	}
	check(c, srcID)
}

// pauseResume: Pause stops the sandbox's compute and keeps its files (the
// harness's Stopped says it holds no CPU), both calls are idempotent, and
// Resume brings it back with its files and env, from the same backend and
// from a new one built after a platform restart.
func (s *suite) pauseResume(t *testing.T) {
	b := s.h.New(t)
	p := pauser(t, b)
	ctx := s.ctx(t)
	id, token := NewID(t), NewToken(t)
	env := map[string]string{"FOO": "foo-" + id}
	envFn := func(context.Context) (map[string]string, error) { return env, nil }
	h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, TenantID: "default", Template: s.h.Template, Env: env, Token: token})
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	current := b
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
		defer cancel()
		if err := current.Destroy(ctx, h); err != nil {
			t.Errorf("cleanup: destroy %s: %v", id, err)
		}
	})
	c := Dial(ctx, t, b, h, token)
	s.writeFiles(ctx, t, c)
	want := s.fingerprint(ctx, t, c)
	_, done := startSleeper(ctx, t, c)

	paused, err := p.Pause(ctx, h, backend.SnapshotFilesystem)
	if err != nil {
		t.Fatalf("pause: %v", err)
	}
	h = paused
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("an exec running at pause had not ended")
	}
	if s.h.Stopped != nil && !s.h.Stopped(t, h) {
		t.Error("a paused sandbox still holds CPU (Harness.Stopped is false)")
	}
	if s.h.Gone(t, h) {
		t.Fatal("pause removed the sandbox")
	}
	if h2, err := p.Pause(ctx, h, backend.SnapshotFilesystem); err != nil {
		t.Errorf("second pause: %v, want nil", err)
	} else {
		h = h2
	}

	resume := func(b backend.Backend, h backend.Handle) backend.Handle {
		t.Helper()
		rh, err := b.(backend.Pauser).Resume(ctx, h, token, envFn)
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		if rh.WorkspaceID != id {
			t.Fatalf("resume handle = %+v, want workspace %s", rh, id)
		}
		if s.h.Stopped != nil && s.h.Stopped(t, rh) {
			t.Error("a resumed sandbox is still stopped (Harness.Stopped is true)")
		}
		c := dialServed(ctx, t, b, rh, token, envFn)
		if got := s.fingerprint(ctx, t, c); got != want {
			t.Errorf("after resume:\n%s\nwant what it had at pause:\n%s", got, want)
		}
		if got := sh(ctx, t, c, "echo $FOO"); got != "foo-"+id+"\n" {
			t.Errorf("exec after resume: $FOO = %q, want the workspace's env", got)
		}
		c.Close()
		return rh
	}
	h = resume(b, h)
	// Resuming a running sandbox is not an error and changes nothing.
	if h2, err := p.Resume(ctx, h, token, envFn); err != nil {
		t.Errorf("second resume: %v, want nil", err)
	} else {
		h = h2
	}

	// Paused, then the platform restarts: a new backend resumes it from
	// the stored handle.
	if !b.Capabilities().PersistentAcrossRestart || s.h.Restart == nil {
		t.Logf("%T: no restart checked (PersistentAcrossRestart %v, Harness.Restart set %v)", b, b.Capabilities().PersistentAcrossRestart, s.h.Restart != nil)
		return
	}
	if h, err = p.Pause(ctx, h, backend.SnapshotFilesystem); err != nil {
		t.Fatalf("pause before restart: %v", err)
	}
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var stored backend.Handle
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	b2 := s.h.Restart(t, b)
	current = b2
	if _, ok := b2.(backend.Pauser); !ok {
		t.Fatalf("restarted backend %T does not implement backend.Pauser", b2)
	}
	h = resume(b2, stored)
	if err := b2.Destroy(ctx, h); err != nil {
		t.Fatalf("destroy after restart: %v", err)
	}
	if !s.h.Gone(t, h) {
		t.Error("after a destroy by the restarted backend, something of the sandbox is left")
	}
}

// dialServed dials the runtime of h, serving it first where the backend
// hosts it (a resumed local workspace).
func dialServed(ctx context.Context, t *testing.T, b backend.Backend, h backend.Handle, token string, env backend.EnvFunc) *client.Client {
	t.Helper()
	var ep backend.Endpoint
	var err error
	if rh, ok := b.(backend.RuntimeHost); ok {
		ep, err = rh.ServeRuntime(ctx, h, token, env)
	} else {
		ep, err = b.Endpoint(ctx, h, token)
	}
	if err != nil {
		t.Fatalf("endpoint %s: %v", h.WorkspaceID, err)
	}
	c, err := dialRetry(ctx, ep.URL, token)
	if err != nil {
		t.Fatalf("dial %s at %s: %v", h.WorkspaceID, ep.URL, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
