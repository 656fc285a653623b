package backendtest

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/runtime/protocol"
)

// The reset cases: ResetRestoresSandbox, ResetKeepsUnchanged and
// ResetRestoresSnapshot, for
// backends that say a reset restores the whole sandbox
// (Capabilities().Reset is backend.ResetScopeSandbox, backend.Restorer).

// restorer returns b as a backend.Restorer, or skips t naming the
// capability. Capabilities must say what a reset restores, and say
// ResetScopeSandbox exactly when b implements backend.Restorer.
func restorer(t *testing.T, b backend.Backend) backend.Restorer {
	t.Helper()
	c := b.Capabilities()
	rs, ok := b.(backend.Restorer)
	if ok != (c.Reset == backend.ResetScopeSandbox) {
		t.Fatalf("%T: implements backend.Restorer = %v, but Capabilities().Reset = %q", b, ok, c.Reset)
	}
	if !ok {
		t.Skipf("%T does not implement backend.Restorer (Capabilities().Reset = %q)", b, c.Reset)
	}
	return rs
}

// checkResetCapability: every backend says what its reset restores.
func checkResetCapability(t *testing.T, c backend.Capabilities) {
	t.Helper()
	if !slices.Contains([]string{backend.ResetScopeSandbox, backend.ResetScopeWorkspace}, c.Reset) {
		t.Errorf("Capabilities().Reset = %q, want %q or %q", c.Reset, backend.ResetScopeSandbox, backend.ResetScopeWorkspace)
	}
	if c.ResetNote == "" {
		t.Error("Capabilities().ResetNote is empty: it says what a reset restores and what it leaves")
	}
}

// request is the provision request of the suite's workspaces (provision).
func (s *suite) request(id, token string) backend.ProvisionRequest {
	return backend.ProvisionRequest{
		WorkspaceID: id, Template: s.h.Template,
		Env: map[string]string{"FOO": "foo-" + id}, Token: token,
	}
}

// What a case leaves in the sandbox: outside the workspace (/tmp,
// /usr/local) and in it.
const (
	leaveMarks = `set -e
printf mark > /tmp/mark
mkdir -p /usr/local/x; printf x > /usr/local/x/f
printf ws > ws-mark.txt`
	marksGone = `for f in /tmp/mark /usr/local/x/f ws-mark.txt; do if [ -e "$f" ]; then echo "$f"; fi; done`
)

// resetRestoresSandbox: a sandbox whose case wrote outside the workspace
// is made again by Restore: the files are gone (in the workspace too),
// the handle the workflow holds still finds it (same runtime URL), the
// runtime answers to the same token with the same env. A backend that
// knows no base (a platform restart) remakes even an unchanged sandbox.
func (s *suite) resetRestoresSandbox(t *testing.T) {
	b := s.h.New(t)
	rs := restorer(t, b)
	ctx := s.ctx(t)
	id, token := NewID(t), NewToken(t)
	h, err := b.Provision(ctx, s.request(id, token))
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	current := b // a restart below replaces it
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
		defer cancel()
		if err := current.Destroy(ctx, h); err != nil {
			t.Errorf("cleanup: destroy %s: %v", id, err)
		}
	})
	if err := rs.RecordBase(ctx, h); err != nil {
		t.Fatalf("record base: %v", err)
	}
	c := Dial(ctx, t, b, h, token)
	sh(ctx, t, c, leaveMarks)

	held := h // what the workflow holds; Restore must leave it valid
	remade, err := rs.Restore(ctx, h, s.request(id, token))
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if !remade {
		t.Fatal("restore after writes to /tmp and /usr/local: remade = false, want true")
	}
	if ep, err := b.Endpoint(ctx, held, token); err != nil {
		t.Fatalf("endpoint of the held handle after restore: %v", err)
	} else if held.RuntimeURL != "" && ep.URL != held.RuntimeURL {
		t.Errorf("endpoint after restore = %s, want the handle's %s", ep.URL, held.RuntimeURL)
	}
	c = Dial(ctx, t, b, held, token)
	if left := sh(ctx, t, c, marksGone); left != "" {
		t.Errorf("after restore these files are still there:\n%s", left)
	}
	if got := strings.TrimSpace(sh(ctx, t, c, `printf %s "$FOO"`)); got != "foo-"+id {
		t.Errorf("env FOO after restore = %q, want %q", got, "foo-"+id)
	}

	// A platform restart forgets the base: the unchanged sandbox is made
	// again, the safe answer.
	if s.h.Restart != nil {
		c.Close()
		b2 := s.h.Restart(t, b)
		current = b2
		rs2 := restorer(t, b2)
		remade, err := rs2.Restore(ctx, held, s.request(id, token))
		if err != nil {
			t.Fatalf("restore after a restart: %v", err)
		}
		if !remade {
			t.Error("restore with no base recorded (after a restart): remade = false, want true")
		}
		c = Dial(ctx, t, b2, held, token)
		if err := c.Ping(ctx); err != nil {
			t.Errorf("ping after a restore after a restart: %v", err)
		}
	}
}

// resetKeepsUnchanged: a sandbox where nothing outside the workspace
// changed since its base is not made again (a process started before the
// Restore still runs), also once it has been remade before; writes in the
// workspace alone are the runtime's reset's to undo.
func (s *suite) resetKeepsUnchanged(t *testing.T) {
	b := s.h.New(t)
	rs := restorer(t, b)
	ctx := s.ctx(t)
	id, token := NewID(t), NewToken(t)
	h := s.provision(t, b, id, token)
	c := Dial(ctx, t, b, h, token)
	sh(ctx, t, c, leaveMarks)
	// Made again once (no base recorded): the checks below then hold for
	// a remade sandbox and the handle it was made for.
	if remade, err := rs.Restore(ctx, h, s.request(id, token)); err != nil || !remade {
		t.Fatalf("restore with no base recorded = %v, %v; want remade", remade, err)
	}
	if err := rs.RecordBase(ctx, h); err != nil {
		t.Fatalf("record base after a restore: %v", err)
	}
	c = Dial(ctx, t, b, h, token)
	sh(ctx, t, c, "printf ws > ws-only.txt")
	pid, done := startSleeper(ctx, t, c)
	remade, err := rs.Restore(ctx, h, s.request(id, token))
	if err != nil {
		t.Fatalf("restore of an unchanged sandbox: %v", err)
	}
	if remade {
		t.Fatal("restore with nothing changed outside the workspace: remade = true, want false")
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping after a restore that remade nothing: %v", err)
	}
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", `tr '\0' ' ' < /proc/"$1"/cmdline`, "sh", strconv.Itoa(pid)}}, nil, nil)
	if err != nil || !strings.Contains(string(res.Stdout), "sleep 300") {
		t.Errorf("the sleeper (pid %d) after a restore that remade nothing: %q, %v; want it still running", pid, res.Stdout, err)
	}
	if got, err := c.ReadFile(ctx, "ws-only.txt"); err != nil || string(got) != "ws" {
		t.Errorf("workspace file after a restore that remade nothing = %q, %v; want it kept (the runtime's reset removes it)", got, err)
	}
	if _, err := c.Reset(ctx); err != nil {
		t.Fatalf("runtime reset: %v", err)
	}
	<-done
}

// resetRestoresSnapshot: a sandbox made from a snapshot (a pool filled from
// one) is made again from the capture by Restore: the capture's files are
// back as they were (in the workspace and outside it), what a case wrote
// after is gone, and the handle still finds it.
func (s *suite) resetRestoresSnapshot(t *testing.T) {
	b := s.h.New(t)
	rs := restorer(t, b)
	sn := snapshotter(t, b)
	ctx := s.ctx(t)
	srcID, srcToken := NewID(t), NewToken(t)
	src := s.provision(t, b, srcID, srcToken)
	c := Dial(ctx, t, b, src, srcToken)
	s.writeFiles(ctx, t, c)
	ref := s.snapshot(t, sn, src)

	id, token := NewID(t), NewToken(t)
	h := s.provisionFrom(t, b, id, token, ref)
	c = Dial(ctx, t, b, h, token)
	want := s.fingerprint(ctx, t, c)
	if err := rs.RecordBase(ctx, h); err != nil {
		t.Fatalf("record base: %v", err)
	}
	// The capture may hold /tmp/mark and /usr/local/x (writeFiles): the
	// case's own files are others.
	sh(ctx, t, c, "set -e; printf m > /tmp/after; mkdir -p /usr/local/after; printf ws > ws-mark.txt; printf changed > snap/a.txt; rm snap/owned")
	remade, err := rs.Restore(ctx, h, s.fromRequest(id, token, ref))
	if err != nil || !remade {
		t.Fatalf("restore of a sandbox from a snapshot = %v, %v; want remade", remade, err)
	}
	c = Dial(ctx, t, b, h, token)
	if left := sh(ctx, t, c, "for f in /tmp/after /usr/local/after ws-mark.txt; do if [ -e \"$f\" ]; then echo \"$f\"; fi; done"); left != "" {
		t.Errorf("after restore these files are still there:\n%s", left)
	}
	if got := s.fingerprint(ctx, t, c); got != want {
		t.Errorf("after restore the capture's files are:\n%s\nwant\n%s", got, want)
	}
}
