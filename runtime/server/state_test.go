package server_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

var commitTime = time.Date(2025, 11, 29, 21, 30, 0, 0, time.UTC)

func sig(msg string) protocol.StateCommitParams {
	return protocol.StateCommitParams{AuthorName: "Agent Smith", AuthorEmail: "agent@example.com", Message: msg, Time: commitTime}
}

func mustCommit(t *testing.T, c *client.Client, msg string) protocol.StateCommitResult {
	t.Helper()
	res, err := c.StateCommit(runtimetest.Ctx(t), sig(msg))
	if err != nil {
		t.Fatalf("StateCommit(%q): %v", msg, err)
	}
	if len(res.Commit) != 40 {
		t.Fatalf("StateCommit(%q) = %+v: no commit id", msg, res)
	}
	return res
}

// changes renders changes as "path:change" for compact comparisons.
func changes(cs []protocol.StateChange) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path + ":" + c.Change
	}
	return out
}

func wantChanges(t *testing.T, what string, got []protocol.StateChange, want ...string) {
	t.Helper()
	if g := changes(got); !slices.Equal(g, want) && !(len(g) == 0 && len(want) == 0) {
		t.Fatalf("%s changed %q, want %q", what, g, want)
	}
}

// host runs a shell script in the workspace root on the host, as an
// agent's command would change it.
func host(t *testing.T, root, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

func readHost(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStateRoundTrip(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client

	// The first commit of an empty workspace has no parent and no change.
	first := mustCommit(t, c, "empty")
	if first.Parent != "" || len(first.Changed) != 0 || first.Skipped == nil || first.Changed == nil {
		t.Fatalf("first commit = %+v", first)
	}

	for p, data := range map[string]string{"a.txt": "hello\n", "dir/b.txt": "bee\n"} {
		if err := c.WriteFile(ctx, p, []byte(data), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WriteFile(ctx, "run.sh", []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	host(t, e.Root, "ln -s a.txt link && mkdir -p empty/deeper")
	second := mustCommit(t, c, "add files")
	if second.Parent != first.Commit {
		t.Fatalf("second parent = %s, want %s", second.Parent, first.Commit)
	}
	// The empty directories are not in it: git cannot hold them.
	wantChanges(t, "second", second.Changed, "a.txt:added", "dir/b.txt:added", "link:added", "run.sh:added")

	host(t, e.Root, "echo 'hello world' > a.txt && rm dir/b.txt && echo new > c.txt && chmod -x run.sh")
	third := mustCommit(t, c, "edit files")
	wantChanges(t, "third", third.Changed, "a.txt:modified", "c.txt:added", "dir/b.txt:deleted", "run.sh:modified")

	// A tool call that changed nothing is still recorded.
	fourth := mustCommit(t, c, "no change")
	if fourth.Parent != third.Commit || len(fourth.Changed) != 0 || fourth.Commit == third.Commit {
		t.Fatalf("fourth commit = %+v", fourth)
	}

	log, err := c.StateLog(ctx, protocol.StateLogParams{})
	if err != nil {
		t.Fatal(err)
	}
	var ids, msgs []string
	for _, cm := range log.Commits {
		ids, msgs = append(ids, cm.Commit), append(msgs, cm.Message)
		if cm.AuthorName != "Agent Smith" || cm.AuthorEmail != "agent@example.com" || !cm.Time.Equal(commitTime) {
			t.Fatalf("log entry %+v: wrong author or time", cm)
		}
	}
	if want := []string{fourth.Commit, third.Commit, second.Commit, first.Commit}; !slices.Equal(ids, want) {
		t.Fatalf("log = %q, want %q", ids, want)
	}
	if want := []string{"no change", "edit files", "add files", "empty"}; !slices.Equal(msgs, want) {
		t.Fatalf("log messages = %q, want %q", msgs, want)
	}
	if p := log.Commits[0].Parents; len(p) != 1 || p[0] != third.Commit || len(log.Commits[3].Parents) != 0 {
		t.Fatalf("parents = %v ... %v", p, log.Commits[3].Parents)
	}
	if lim, err := c.StateLog(ctx, protocol.StateLogParams{Limit: 2}); err != nil || len(lim.Commits) != 2 || lim.Commits[1].Commit != third.Commit {
		t.Fatalf("log limit 2 = %+v, %v", lim, err)
	}

	// The third commit against its parent, by default.
	d, err := c.StateDiff(ctx, protocol.StateDiffParams{To: third.Commit})
	if err != nil {
		t.Fatal(err)
	}
	if d.From != second.Commit || d.To != third.Commit || d.Truncated {
		t.Fatalf("diff ends = %s..%s truncated %v", d.From, d.To, d.Truncated)
	}
	wantChanges(t, "diff", d.Files, "a.txt:modified", "c.txt:added", "dir/b.txt:deleted", "run.sh:modified")
	for _, want := range []string{
		"diff --git a/a.txt b/a.txt", "-hello\n+hello world\n",
		"new file mode 100644", "+new\n",
		"deleted file mode 100644", "-bee\n",
		"old mode 100755\nnew mode 100644",
	} {
		if !strings.Contains(d.Patch, want) {
			t.Errorf("patch lacks %q:\n%s", want, d.Patch)
		}
	}
	// The head against its parent: nothing.
	if d, err := c.StateDiff(ctx, protocol.StateDiffParams{}); err != nil || d.To != fourth.Commit || len(d.Files) != 0 || d.Patch != "" {
		t.Fatalf("diff of head = %+v, %v", d, err)
	}
	// The first commit with files against the empty tree: no .state in it,
	// the link stored as a link.
	d, err = c.StateDiff(ctx, protocol.StateDiffParams{From: first.Commit, To: second.Commit})
	if err != nil {
		t.Fatal(err)
	}
	wantChanges(t, "diff from the empty commit", d.Files, "a.txt:added", "dir/b.txt:added", "link:added", "run.sh:added")
	if !strings.Contains(d.Patch, "new file mode 120000") || !strings.Contains(d.Patch, "new file mode 100755") {
		t.Fatalf("patch lacks the link or the executable's mode:\n%s", d.Patch)
	}

	// Restore the second commit: the work tree is as it was, .state intact.
	host(t, e.Root, "echo stray > stray.txt && mkdir -p junk/sub && echo j > junk/sub/j")
	rs, err := c.StateRestore(ctx, protocol.StateRestoreParams{Commit: second.Commit, StateCommitParams: sig("restore add files")})
	if err != nil {
		t.Fatal(err)
	}
	if rs.RestoredFrom != second.Commit || len(rs.Commit) != 40 {
		t.Fatalf("restore = %+v", rs)
	}
	wantChanges(t, "restore", rs.Changed, "a.txt:modified", "c.txt:deleted", "dir/b.txt:added", "run.sh:modified")
	if got := readHost(t, filepath.Join(e.Root, "a.txt")); got != "hello\n" {
		t.Fatalf("a.txt = %q", got)
	}
	if got := readHost(t, filepath.Join(e.Root, "dir/b.txt")); got != "bee\n" {
		t.Fatalf("dir/b.txt = %q", got)
	}
	if fi, err := os.Stat(filepath.Join(e.Root, "run.sh")); err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("run.sh = %v, %v; want executable", fi.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(e.Root, "link")); err != nil || target != "a.txt" {
		t.Fatalf("link = %q, %v", target, err)
	}
	for _, gone := range []string{"c.txt", "stray.txt", "junk"} {
		if _, err := os.Lstat(filepath.Join(e.Root, gone)); !os.IsNotExist(err) {
			t.Fatalf("%s survived the restore: %v", gone, err)
		}
	}
	log, err = c.StateLog(ctx, protocol.StateLogParams{Limit: 1})
	if err != nil || len(log.Commits) != 1 || log.Commits[0].Commit != rs.Commit || log.Commits[0].Parents[0] != fourth.Commit ||
		log.Commits[0].Message != "restore add files" {
		t.Fatalf("log after restore = %+v, %v", log, err)
	}
	// The restore commit holds exactly the second commit's tree.
	if d, err := c.StateDiff(ctx, protocol.StateDiffParams{From: second.Commit, To: rs.Commit}); err != nil || len(d.Files) != 0 {
		t.Fatalf("diff second..restore = %+v, %v", d, err)
	}
	// And the history is usable after it.
	if again := mustCommit(t, c, "after restore"); again.Parent != rs.Commit || len(again.Changed) != 0 {
		t.Fatalf("commit after restore = %+v", again)
	}
}

// TestStateSymlinksNeverFollowed records links that point out of the root
// as links and restores over them without writing through them.
func TestStateSymlinksNeverFollowed(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	c := e.Client
	e.WriteHost(t, "outside/secret", "secret")
	outside := filepath.Join(e.Dir, "outside")

	e.WriteHost(t, "linked/hard", "outside")
	hard := filepath.Join(e.Dir, "linked/hard")

	host(t, e.Root, "mkdir out && echo inside > out/file.txt && echo inside > f.txt && echo inside > h.txt")
	a := mustCommit(t, c, "real files")

	// An agent swaps them for links out of the workspace: symbolic, and a
	// hard link to a file beside it.
	host(t, e.Root, "rm -r out f.txt h.txt && ln -s "+outside+" out && ln -s "+outside+"/secret f.txt && ln -s / esc && ln "+hard+" h.txt")
	b := mustCommit(t, c, "links out")
	wantChanges(t, "links", b.Changed, "esc:added", "f.txt:modified", "h.txt:modified", "out:added", "out/file.txt:deleted")

	// Restoring the real files replaces the links; nothing outside moves.
	if _, err := c.StateRestore(runtimetest.Ctx(t), protocol.StateRestoreParams{Commit: a.Commit, StateCommitParams: sig("back")}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"out", "f.txt"} {
		if fi, err := os.Lstat(filepath.Join(e.Root, p)); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			t.Fatalf("%s after restore: %v, %v; want no link", p, fi.Mode(), err)
		}
	}
	if got := readHost(t, filepath.Join(e.Root, "out/file.txt")); got != "inside\n" {
		t.Fatalf("out/file.txt = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(e.Root, "esc")); !os.IsNotExist(err) {
		t.Fatalf("esc survived: %v", err)
	}
	// The hard link was replaced, not written through.
	if got, out := readHost(t, filepath.Join(e.Root, "h.txt")), readHost(t, hard); got != "inside\n" || out != "outside" {
		t.Fatalf("h.txt = %q, the file outside = %q", got, out)
	}
	checkOutside := func() {
		t.Helper()
		ents, err := os.ReadDir(outside)
		if err != nil || len(ents) != 1 || ents[0].Name() != "secret" || readHost(t, filepath.Join(outside, "secret")) != "secret" {
			t.Fatalf("outside changed: %v, %v", ents, err)
		}
	}
	checkOutside()

	// Restoring the links makes links again, pointing where they did.
	if _, err := c.StateRestore(runtimetest.Ctx(t), protocol.StateRestoreParams{Commit: b.Commit, StateCommitParams: sig("links again")}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"out": outside, "f.txt": outside + "/secret", "esc": "/"} {
		if got, err := os.Readlink(filepath.Join(e.Root, p)); err != nil || got != want {
			t.Fatalf("%s -> %q, %v; want %q", p, got, err, want)
		}
	}
	checkOutside()
}

func TestStateTrailers(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	var s1 []string
	for _, m := range []struct{ msg, session string }{
		{"write a.txt\n\nPrimer-Session: s1\nPrimer-Tool: write", "s1"},
		{"exec make\n\nPrimer-Session: s2", ""},
		{"Primer-Session: s1", ""}, // one paragraph: a subject, not a trailer
		{"exec test\n\nbody text\n\nprimer-session: s1\nPrimer-Note: a long\n  note", "s1"},
	} {
		res := mustCommit(t, c, m.msg)
		if m.session == "s1" {
			s1 = append([]string{res.Commit}, s1...)
		}
	}
	log, err := c.StateLog(ctx, protocol.StateLogParams{TrailerKey: "Primer-Session", TrailerValue: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cm := range log.Commits {
		got = append(got, cm.Commit)
	}
	if !slices.Equal(got, s1) {
		t.Fatalf("session s1 = %q, want %q", got, s1)
	}
	if tr := log.Commits[0].Trailers; tr["primer-session"] != "s1" || tr["Primer-Note"] != "a long note" {
		t.Fatalf("trailers = %v", tr)
	}
	if tr := log.Commits[1].Trailers; tr["Primer-Session"] != "s1" || tr["Primer-Tool"] != "write" {
		t.Fatalf("trailers = %v", tr)
	}
	if lim, err := c.StateLog(ctx, protocol.StateLogParams{TrailerKey: "primer-session", TrailerValue: "s1", Limit: 1}); err != nil ||
		len(lim.Commits) != 1 || lim.Commits[0].Commit != s1[0] {
		t.Fatalf("limited = %+v, %v", lim, err)
	}
	// A key without a value: every commit that has the trailer.
	if any, err := c.StateLog(ctx, protocol.StateLogParams{TrailerKey: "Primer-Session"}); err != nil || len(any.Commits) != 3 {
		t.Fatalf("any session = %d commits, %v; want 3", len(any.Commits), err)
	}
	if none, err := c.StateLog(ctx, protocol.StateLogParams{TrailerKey: "Primer-Session", TrailerValue: "s3"}); err != nil || none.Commits == nil || len(none.Commits) != 0 {
		t.Fatalf("session s3 = %+v, %v; want an empty list", none, err)
	}
}

// TestStateSurvivesRestart opens the history a previous runtime process
// left, with a cold cache.
func TestStateSurvivesRestart(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	host(t, e.Root, "echo one > one.txt && mkdir d && echo two > d/two.txt")
	first := mustCommit(t, e.Client, "before restart")
	_ = e.Client.Close()
	if err := e.Server.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := runtimetest.StartIn(t, e.Dir, server.Config{})
	ctx, c := runtimetest.Ctx(t), e2.Client
	host(t, e2.Root, "echo three > d/three.txt")
	second := mustCommit(t, c, "after restart")
	if second.Parent != first.Commit {
		t.Fatalf("parent after restart = %q, want %s", second.Parent, first.Commit)
	}
	wantChanges(t, "after restart", second.Changed, "d/three.txt:added")
	if log, err := c.StateLog(ctx, protocol.StateLogParams{}); err != nil || len(log.Commits) != 2 {
		t.Fatalf("log after restart = %+v, %v", log, err)
	}
	if _, err := c.StateRestore(ctx, protocol.StateRestoreParams{Commit: first.Commit, StateCommitParams: sig("undo")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(e2.Root, "d/three.txt")); !os.IsNotExist(err) {
		t.Fatalf("d/three.txt survived the restore: %v", err)
	}
}

// TestStateReplacedBehindItsBack: a command removes .state; the next
// commit starts a new history instead of writing into the removed one.
func TestStateReplacedBehindItsBack(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	mustCommit(t, e.Client, "one")
	host(t, e.Root, "rm -rf .state && echo x > x")
	res := mustCommit(t, e.Client, "two")
	if res.Parent != "" {
		t.Fatalf("commit after rm -rf .state has parent %s", res.Parent)
	}
	wantChanges(t, "new history", res.Changed, "x:added")
}

func TestStateSkipped(t *testing.T) {
	e := runtimetest.Start(t, server.Config{MaxFileBytes: 1024})
	ctx, c := runtimetest.Ctx(t), e.Client
	host(t, e.Root, "head -c 2000 /dev/zero > big.bin && head -c 1024 /dev/zero > fits.bin && mkfifo pipe && mkdir d && echo x > d/x")
	res := mustCommit(t, c, "skips")
	if !slices.Equal(res.Skipped, []string{"big.bin", "pipe"}) {
		t.Fatalf("skipped = %q, want big.bin and pipe", res.Skipped)
	}
	wantChanges(t, "skips", res.Changed, "d/x:added", "fits.bin:added")
	// A restore leaves alone what the history could not hold.
	first := res.Commit
	host(t, e.Root, "rm d/x")
	mustCommit(t, c, "rm d/x")
	if _, err := c.StateRestore(ctx, protocol.StateRestoreParams{Commit: first, StateCommitParams: sig("restore")}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"big.bin", "pipe", "d/x"} {
		if _, err := os.Lstat(filepath.Join(e.Root, p)); err != nil {
			t.Fatalf("%s after restore: %v", p, err)
		}
	}
}

func TestStateErrors(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	const unknown = "0123456789abcdef0123456789abcdef01234567"
	// Before the first commit.
	if _, err := c.StateDiff(ctx, protocol.StateDiffParams{}); !errs.Is(err, errs.NotFound) {
		t.Fatalf("diff with no history = %v, want not_found", err)
	}
	if log, err := c.StateLog(ctx, protocol.StateLogParams{}); err != nil || len(log.Commits) != 0 {
		t.Fatalf("log with no history = %+v, %v", log, err)
	}
	if _, err := os.Lstat(filepath.Join(e.Root, ".state")); !os.IsNotExist(err) {
		t.Fatalf("reading the history created it: %v", err)
	}
	mustCommit(t, c, "one")

	tests := []struct {
		name  string
		call  func() error
		kind  errs.Kind
		field string
	}{
		{"restore unknown", func() error {
			_, err := c.StateRestore(ctx, protocol.StateRestoreParams{Commit: unknown})
			return err
		}, errs.NotFound, ""},
		{"diff unknown to", func() error {
			_, err := c.StateDiff(ctx, protocol.StateDiffParams{To: unknown})
			return err
		}, errs.NotFound, ""},
		{"diff unknown from", func() error {
			_, err := c.StateDiff(ctx, protocol.StateDiffParams{From: unknown})
			return err
		}, errs.NotFound, ""},
		{"restore malformed", func() error {
			_, err := c.StateRestore(ctx, protocol.StateRestoreParams{Commit: "HEAD"})
			return err
		}, errs.Invalid, "commit"},
		{"diff malformed", func() error {
			_, err := c.StateDiff(ctx, protocol.StateDiffParams{To: "abc"})
			return err
		}, errs.Invalid, "to"},
		{"negative limit", func() error {
			_, err := c.StateLog(ctx, protocol.StateLogParams{Limit: -1})
			return err
		}, errs.Invalid, "limit"},
		{"value without key", func() error {
			_, err := c.StateLog(ctx, protocol.StateLogParams{TrailerValue: "s1"})
			return err
		}, errs.Invalid, "trailer_key"},
		{"author with <", func() error {
			_, err := c.StateCommit(ctx, protocol.StateCommitParams{AuthorName: "a <b>"})
			return err
		}, errs.Invalid, "author_name"},
		{"email with newline", func() error {
			_, err := c.StateCommit(ctx, protocol.StateCommitParams{AuthorEmail: "a@b\nc"})
			return err
		}, errs.Invalid, "author_email"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			// The wire carries the kind and the message, which names the field.
			msg := err.Error()
			if !errs.Is(err, tt.kind) || !strings.Contains(msg, tt.field) && !strings.Contains(msg, strings.ReplaceAll(tt.field, "_", " ")) {
				t.Fatalf("err = %v, want %v naming %q", err, tt.kind, tt.field)
			}
			if tt.kind == errs.NotFound && !strings.Contains(err.Error(), unknown) {
				t.Fatalf("error %q does not name the commit", err)
			}
		})
	}

	// .state that is not a directory.
	host(t, e.Root, "rm -rf .state && echo not a repo > .state")
	if _, err := c.StateCommit(ctx, sig("x")); !errs.Is(err, errs.Conflict) {
		t.Fatalf("commit with .state a file = %v, want conflict", err)
	}
}

// TestStateGitCLI checks the real git reads the history.
func TestStateGitCLI(t *testing.T) {
	gitBin := testenv.Git(t)
	e := runtimetest.Start(t, server.Config{})
	c := e.Client
	host(t, e.Root, "echo hello > a.txt && mkdir -p src/pkg && echo 'package pkg' > src/pkg/p.go && printf '#!/bin/sh\\n' > run.sh && chmod +x run.sh && ln -s src/pkg/p.go link && mkdir -p .git-like/.x && echo y > .git-like/.x/y")
	one := mustCommit(t, c, "one\n\nPrimer-Session: s1")
	host(t, e.Root, "echo more >> a.txt && rm -r src")
	two := mustCommit(t, c, "two")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, append([]string{"--git-dir=" + filepath.Join(e.Root, ".state"), "--work-tree=" + e.Root}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+e.Dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if got := git("log", "--format=%H %an <%ae> %s"); got != two.Commit+" Agent Smith <agent@example.com> two\n"+one.Commit+" Agent Smith <agent@example.com> one\n" {
		t.Fatalf("git log:\n%s", got)
	}
	if got := git("log", "-1", "--format=%(trailers:key=Primer-Session,valueonly)", one.Commit); strings.TrimSpace(got) != "s1" {
		t.Fatalf("git trailers = %q", got)
	}
	if out := git("fsck", "--strict", "--no-dangling"); strings.Contains(out, "error") || strings.Contains(out, "warning") {
		t.Fatalf("git fsck:\n%s", out)
	}
	tree := git("ls-tree", "-r", one.Commit)
	for _, want := range []string{"100644 blob", "\ta.txt\n", "100755 blob", "\trun.sh\n", "120000 blob", "\tlink\n", "\tsrc/pkg/p.go\n", "\t.git-like/.x/y\n"} {
		if !strings.Contains(tree, want) {
			t.Errorf("ls-tree lacks %q:\n%s", want, tree)
		}
	}
	if strings.Contains(tree, ".state") {
		t.Fatalf(".state is in the tree:\n%s", tree)
	}
	if got := git("show", two.Commit+":a.txt"); got != "hello\nmore\n" {
		t.Fatalf("git show a.txt = %q", got)
	}
	// Without --work-tree, core.worktree finds the root.
	cmd := exec.Command(gitBin, "--git-dir="+filepath.Join(e.Root, ".state"), "rev-parse", "--show-toplevel")
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != e.Root {
		t.Fatalf("rev-parse --show-toplevel = %q, %v; want %s", out, err, e.Root)
	}
}

// TestStateRawFrames checks the JSON of the state operations and reset on
// the wire.
func TestStateRawFrames(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	_, call := rawConn(t, e)
	m := call(`{"id":1,"op":"state.commit","author_name":"a","author_email":"a@x","message":"m\n\nPrimer-Session: s","time":"2025-01-02T03:04:05.123456789+01:00"}`)
	res, _ := m["result"].(map[string]any)
	if m["error"] != nil || len(res["commit"].(string)) != 40 || res["parent"] != "" {
		t.Fatalf("state.commit = %v", m)
	}
	if ch, ok := res["changed"].([]any); !ok || len(ch) != 0 {
		t.Fatalf("changed = %v, want []", res["changed"])
	}
	if sk, ok := res["skipped"].([]any); !ok || len(sk) != 0 {
		t.Fatalf("skipped = %v, want []", res["skipped"])
	}
	m = call(`{"id":2,"op":"state.log","limit":1,"trailer_key":"primer-session","trailer_value":"s"}`)
	cs, _ := m["result"].(map[string]any)["commits"].([]any)
	if len(cs) != 1 {
		t.Fatalf("state.log = %v", m)
	}
	c0 := cs[0].(map[string]any)
	if c0["time"] != "2025-01-02T03:04:05+01:00" || c0["message"] != "m\n\nPrimer-Session: s" || c0["author_email"] != "a@x" ||
		c0["trailers"].(map[string]any)["Primer-Session"] != "s" || len(c0["parents"].([]any)) != 0 {
		t.Fatalf("log entry = %v", c0)
	}
	m = call(`{"id":3,"op":"state.diff"}`)
	if d, _ := m["result"].(map[string]any); d["from"] != "" || d["to"] != res["commit"] || d["patch"] != "" || d["truncated"] != false {
		t.Fatalf("state.diff = %v", m)
	}
	m = call(`{"id":4,"op":"state.restore","commit":"` + strings.Repeat("f", 40) + `"}`)
	if er, _ := m["error"].(map[string]any); er["code"] != "not_found" {
		t.Fatalf("restore unknown = %v", m)
	}
	m = call(`{"id":5,"op":"reset"}`)
	if r, _ := m["result"].(map[string]any); m["error"] != nil || r["killed"] != 0.0 {
		t.Fatalf("reset = %v", m)
	}
}

// TestStatePatchTruncated: a large text change is cut at the limit, and a
// file over the line-diff limit is named like a binary file.
func TestStatePatchTruncated(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	line := strings.Repeat("x", 99) + "\n"
	// Eight files of 768 KiB: diffed line by line, 6 MiB of patch in all.
	for i := range 8 {
		if err := c.WriteFile(ctx, "f"+string(rune('0'+i)), []byte(strings.Repeat(line, 768<<10/100)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WriteFile(ctx, "huge", []byte(strings.Repeat(line, 2<<20/100)), 0); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, c, "big")
	d, err := c.StateDiff(ctx, protocol.StateDiffParams{})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Truncated || len(d.Patch) > 4<<20 || len(d.Patch) < 3<<20 || !strings.HasSuffix(d.Patch, "\n") {
		t.Fatalf("patch of %d bytes, truncated %v", len(d.Patch), d.Truncated)
	}
	if len(d.Files) != 9 {
		t.Fatalf("files = %v", changes(d.Files))
	}
	host(t, e.Root, "rm f*")
	mustCommit(t, c, "only huge left")
	if err := c.WriteFile(ctx, "huge", []byte("small now\n"), 0); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, c, "huge changed")
	d, err = c.StateDiff(ctx, protocol.StateDiffParams{})
	if err != nil || d.Truncated || !strings.Contains(d.Patch, "Binary files a/huge and b/huge differ") {
		t.Fatalf("patch of a huge file = %q, %v", d.Patch, err)
	}
}

// TestStateCommitWithoutTime: a zero time means now.
func TestStateCommitWithoutTime(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	before := time.Now().Add(-time.Second)
	if _, err := e.Client.StateCommit(ctx, protocol.StateCommitParams{Message: "now"}); err != nil {
		t.Fatal(err)
	}
	log, err := e.Client.StateLog(ctx, protocol.StateLogParams{})
	if err != nil || len(log.Commits) != 1 {
		t.Fatalf("log = %+v, %v", log, err)
	}
	cm := log.Commits[0]
	if cm.Time.Before(before) || cm.Time.After(time.Now().Add(time.Second)) || cm.AuthorName != "primer" || cm.AuthorEmail != "primer@localhost" {
		t.Fatalf("commit = %+v; want now, by the default author", cm)
	}
}
