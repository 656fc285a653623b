package server_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// aliceUID is the uid of the user the tests' account files hold: far from
// any uid of the machine running them.
const aliceUID = 54321

// usersEnv starts a runtime in mode fsMode whose account files are in a
// temporary directory (never the machine's /etc): alice with her own group
// and the supplementary group extra, and a home under the test's
// directory.
func usersEnv(t *testing.T, fsMode string) (e *runtimetest.Env, etc, home string) {
	t.Helper()
	dir := t.TempDir()
	etc = filepath.Join(dir, "etc")
	home = filepath.Join(dir, "home", "alice")
	for _, d := range []string{etc, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/sh\n# a comment\nbroken line\nalice:x:54321:54321:Alice:" + home + ":/bin/sh\n",
		"group":  "root:x:0:\nalice:x:54321:\nextra:x:54400:bob,alice\nother:x:54401:bob\n",
		"shadow": "root:*:19000:0:99999:7:::\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(home, aliceUID, aliceUID); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	e = runtimetest.StartIn(t, dir, server.Config{FS: fsMode, EtcDir: etc})
	// t.TempDir makes 0700 directories: alice must be able to walk to her
	// home and to the workspace, as in a real sandbox.
	for d := dir; d != filepath.Clean(os.TempDir()) && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e, etc, home
}

// needRoot skips a test that switches users when the runtime could not.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running as another user needs root: run the tests as root (CI does)")
	}
}

func TestExecAsUser(t *testing.T) {
	needRoot(t)
	const script = `id -u; id -g; id -G; echo "$HOME $USER $LOGNAME"; pwd`
	tests := []struct {
		name    string
		fs      string
		cwd     string
		wantDir func(e *runtimetest.Env, home string) string
	}{
		{"whole mode starts at home", protocol.FSWhole, "", func(_ *runtimetest.Env, home string) string { return home }},
		{"root mode starts at the root", protocol.FSRoot, "", func(e *runtimetest.Env, _ string) string { return e.Root }},
		{"a relative cwd is in the root", protocol.FSWhole, "sub", func(e *runtimetest.Env, _ string) string { return filepath.Join(e.Root, "sub") }},
		{"an absolute cwd in whole mode", protocol.FSWhole, "/tmp", func(*runtimetest.Env, string) string { return "/tmp" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _, home := usersEnv(t, tt.fs)
			ctx := runtimetest.Ctx(t)
			if err := os.Mkdir(filepath.Join(e.Root, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			res, err := e.Client.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", script}, User: "alice", Cwd: tt.cwd}, nil, nil)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("exec as alice = %+v, %v (stderr %s)", res, err, res.Stderr)
			}
			want := strings.Join([]string{"54321", "54321", "54321 54400", home + " alice alice", tt.wantDir(e, home)}, "\n") + "\n"
			if string(res.Stdout) != want {
				t.Fatalf("exec as alice printed\n%s\nwant\n%s", res.Stdout, want)
			}
			// No user: the runtime's own, as before.
			res, err = e.Client.Exec(ctx, protocol.ExecRequest{Args: []string{"id", "-u"}}, nil, nil)
			if err != nil || strings.TrimSpace(string(res.Stdout)) != "0" {
				t.Fatalf("exec without a user = %q, %v; want uid 0", res.Stdout, err)
			}
			// The request's env still wins over the user's.
			res, err = e.Client.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $HOME"}, User: "alice", Env: map[string]string{"HOME": "/elsewhere"}}, nil, nil)
			if err != nil || string(res.Stdout) != "/elsewhere\n" {
				t.Fatalf("exec with HOME set = %q, %v", res.Stdout, err)
			}
		})
	}
}

func TestWriteAsUserOwnsWhatItCreates(t *testing.T) {
	needRoot(t)
	e, _, _ := usersEnv(t, protocol.FSWhole)
	ctx, c := runtimetest.Ctx(t), e.Client
	outside := filepath.Join(e.Dir, "out")
	if err := c.WriteFile(ctx, "existing", []byte("root's"), 0); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), int(protocol.DefaultChunkBytes)*2+5) // write.range
	steps := []struct {
		name string
		do   func() error
	}{
		{"write", func() error {
			_, err := c.WriteFileWith(ctx, "a/b/small", strings.NewReader("hi"), 2, client.WriteOptions{User: "alice"})
			return err
		}},
		{"write.range", func() error {
			_, err := c.WriteFileWith(ctx, "r/big", bytes.NewReader(big), int64(len(big)), client.WriteOptions{User: "alice"})
			return err
		}},
		{"mkdir", func() error { return c.MkdirAs(ctx, "m", false, "alice") }},
		{"mkdir parents", func() error { return c.MkdirAs(ctx, "p/q", true, "alice") }},
		{"absolute write", func() error {
			_, err := c.WriteFileWith(ctx, filepath.Join(outside, "f"), strings.NewReader("x"), 1, client.WriteOptions{User: "alice"})
			return err
		}},
		{"rewrite of an existing file", func() error {
			_, err := c.WriteFileWith(ctx, "existing", strings.NewReader("alice's"), 7, client.WriteOptions{User: "alice"})
			return err
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s as alice: %v", s.name, err)
		}
	}
	owners := map[string]uint32{
		"a": aliceUID, "a/b": aliceUID, "a/b/small": aliceUID,
		"r": aliceUID, "r/big": aliceUID,
		"m": aliceUID, "p": aliceUID, "p/q": aliceUID,
		outside: aliceUID, filepath.Join(outside, "f"): aliceUID,
		"existing": 0, // keeps its owner
		".":        0,
	}
	for p, want := range owners {
		host := p
		if !filepath.IsAbs(p) {
			host = filepath.Join(e.Root, p)
		}
		fi, err := os.Lstat(host)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != want || st.Gid != want {
			t.Errorf("%s owned by %d:%d, want %d:%d", p, st.Uid, st.Gid, want, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.Root, "r/big")); !bytes.Equal(b, big) {
		t.Errorf("r/big holds %d bytes, want %d", len(b), len(big))
	}
}

func TestUnknownUser(t *testing.T) {
	for _, fsMode := range []string{protocol.FSRoot, protocol.FSWhole} {
		t.Run(fsMode, func(t *testing.T) {
			e, _, _ := usersEnv(t, fsMode)
			ctx, c := runtimetest.Ctx(t), e.Client
			checks := map[string]error{}
			_, checks["exec"] = c.Exec(ctx, protocol.ExecRequest{Args: []string{"true"}, User: "mallory"}, nil, nil)
			_, checks["write"] = c.WriteFileWith(ctx, "f", strings.NewReader("x"), 1, client.WriteOptions{User: "mallory"})
			checks["mkdir"] = c.MkdirAs(ctx, "d", false, "mallory")
			for op, err := range checks {
				if !errs.Is(err, errs.NotFound) || !strings.Contains(err.Error(), "user mallory: not in the sandbox's") {
					t.Errorf("%s as an unknown user = %v, want not_found naming the user", op, err)
				}
			}
			for _, p := range []string{"f", "d"} {
				if _, err := os.Lstat(filepath.Join(e.Root, p)); err == nil {
					t.Errorf("%s created for an unknown user", p)
				}
			}
		})
	}
}

func TestEnsureUser(t *testing.T) {
	needRoot(t)
	e, etc, _ := usersEnv(t, protocol.FSWhole)
	ctx, c := runtimetest.Ctx(t), e.Client
	home := filepath.Join(e.Dir, "home", "user")
	first, err := c.EnsureUser(ctx, protocol.UserParams{Name: "user", Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Created || first.UID != 1000 || first.GID != 1000 || first.Home != home || first.Name != "user" {
		t.Fatalf("first ensure = %+v, want user 1000:1000 created at %s", first, home)
	}
	again, err := c.EnsureUser(ctx, protocol.UserParams{Name: "user", Home: "/ignored"})
	if err != nil {
		t.Fatal(err)
	}
	first.Created = false
	if again != first {
		t.Fatalf("second ensure = %+v, want %+v", again, first)
	}
	for file, want := range map[string]string{"passwd": "user:x:1000:1000:", "group": "user:x:1000:", "shadow": "user:!:"} {
		b, err := os.ReadFile(filepath.Join(etc, file))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"+want); n != 1 {
			t.Errorf("%s holds %d lines %q, want 1:\n%s", file, n, want, b)
		}
	}
	fi, err := os.Stat(home)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1000 || st.Gid != 1000 || fi.Mode().Perm() != 0o755 {
		t.Fatalf("home %s: %v owned by %d:%d, want 0755 owned by 1000:1000", home, fi.Mode(), st.Uid, st.Gid)
	}
	// The new user runs commands at home.
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "id -u; pwd"}, User: "user"}, nil, nil)
	if err != nil || string(res.Stdout) != "1000\n"+home+"\n" {
		t.Fatalf("exec as the new user = %q %q, %v", res.Stdout, res.Stderr, err)
	}
	// A chosen uid; an existing user's name answers with that user.
	bob, err := c.EnsureUser(ctx, protocol.UserParams{Name: "bob", UID: 2000, Home: filepath.Join(e.Dir, "home", "bob")})
	if err != nil || bob.UID != 2000 || bob.GID != 2000 || !bob.Created {
		t.Fatalf("ensure bob with uid 2000 = %+v, %v", bob, err)
	}
	alice, err := c.EnsureUser(ctx, protocol.UserParams{Name: "alice"})
	if err != nil || alice.UID != aliceUID || alice.Created {
		t.Fatalf("ensure alice = %+v, %v; want the existing user", alice, err)
	}

	refusals := []struct {
		name string
		p    protocol.UserParams
		kind errs.Kind
	}{
		{"uid of another user", protocol.UserParams{Name: "carol", UID: aliceUID}, errs.Conflict},
		{"bad name", protocol.UserParams{Name: "Root:0"}, errs.Invalid},
		{"empty name", protocol.UserParams{}, errs.Invalid},
		{"relative home", protocol.UserParams{Name: "dave", Home: "home/dave"}, errs.Invalid},
		{"home with a colon", protocol.UserParams{Name: "dave", Home: "/home/a:b"}, errs.Invalid},
	}
	for _, r := range refusals {
		if _, err := c.EnsureUser(ctx, r.p); !errs.Is(err, r.kind) {
			t.Errorf("ensure %s = %v, want %v", r.name, err, r.kind)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(etc, "passwd")); strings.Contains(string(b), "carol") || strings.Contains(string(b), "dave") {
		t.Errorf("a refused ensure wrote passwd:\n%s", b)
	}

	// A runtime confined to a directory does not own the machine's users.
	r, etc2, _ := usersEnv(t, protocol.FSRoot)
	if _, err := r.Client.EnsureUser(ctx, protocol.UserParams{Name: "user"}); !errs.Is(err, errs.Invalid) {
		t.Fatalf("ensure in root mode = %v, want invalid", err)
	}
	if b, _ := os.ReadFile(filepath.Join(etc2, "passwd")); strings.Contains(string(b), "user:") {
		t.Fatalf("root mode wrote passwd:\n%s", b)
	}
}

// TestDefaultUser checks a runtime's default user (a template's): what a
// request without a user runs and creates is that user's, in the root as
// before. (A default user the image lacks is created at start by the
// user.ensure code TestEnsureUser covers; not here, where it would make a
// home under the machine's /home.)
func TestDefaultUser(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	e, _, _ := usersEnv(t, protocol.FSWhole)
	ctx := runtimetest.Ctx(t)
	d := runtimetest.StartIn(t, dir, server.Config{FS: protocol.FSWhole, EtcDir: filepath.Join(e.Dir, "etc"), User: "alice"})
	for p := dir; p != filepath.Clean(os.TempDir()) && p != "/"; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	res, err := d.Client.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "id -u; pwd"}}, nil, nil)
	if err != nil || string(res.Stdout) != "54321\n"+d.Root+"\n" {
		t.Fatalf("exec with the default user = %q %q, %v; want alice in the root", res.Stdout, res.Stderr, err)
	}
	res, err = d.Client.Exec(ctx, protocol.ExecRequest{Args: []string{"id", "-u"}, User: "root"}, nil, nil)
	if err != nil || string(res.Stdout) != "0\n" {
		t.Fatalf("exec as root over the default = %q, %v", res.Stdout, err)
	}
	if err := d.Client.WriteFile(ctx, "f", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"f", "."} {
		fi, err := os.Stat(filepath.Join(d.Root, p))
		if err != nil || fi.Sys().(*syscall.Stat_t).Uid != aliceUID {
			t.Fatalf("%s with the default user: %v, %v; want alice's", p, fi, err)
		}
	}
	// So the default user may write in the workspace itself.
	res, err = d.Client.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo x > made-by-alice"}}, nil, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("default user writing in the root = %+v, %v", res, err)
	}
}
