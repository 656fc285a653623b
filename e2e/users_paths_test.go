package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/errs"
)

// TestUsersAndWholePathsOnDocker: a container template's user, which its
// image lacks, is made at start and runs commands in the workspace by
// default; a request naming a user (root, or that one) runs as it, at its
// home;
// absolute paths reach the whole container through /v1 files and exec's
// cwd, through the Go client and primectl; the history stays closed to
// them.
func TestUsersAndWholePathsOnDocker(t *testing.T) {
	e := containertest.Known()[0] // docker
	containertest.Require(t, e)
	p := startPrimer(t, withContainers(t))
	containerTemplate(t, p, e, "py-user", `{"kind":"container","image":"`+containertest.PythonImage+`","user":"user"}`)
	ws := createRunning(t, p, "py-user")
	ctx := ctxT(t, 3*time.Minute)

	run := func(req client.ExecRequest) string {
		t.Helper()
		req.WorkspaceID = ws.ID
		res, err := p.api.Exec(ctx, req)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exec %q as %q in %q = %+v, %v", req.Command, req.User, req.Cwd, res, err)
		}
		return res.Stdout
	}
	sh := []string{"sh", "-c", `id -un; id -u; pwd; echo "$HOME"`}
	if got := run(client.ExecRequest{Command: sh}); !strings.HasPrefix(got, "user\n1000\n/workspace\n") {
		t.Errorf("exec with the template's user printed %q, want user 1000 in /workspace", got)
	}
	if got := run(client.ExecRequest{Command: sh, User: "root"}); got != "root\n0\n/root\n/root\n" {
		t.Errorf("exec as root printed %q, want root at its home", got)
	}
	if got := run(client.ExecRequest{Command: sh, User: "user"}); got != "user\n1000\n/home/user\n/home/user\n" {
		t.Errorf("exec naming user printed %q, want its home", got)
	}
	if got := run(client.ExecRequest{Command: []string{"pwd"}, Cwd: "/tmp"}); got != "/tmp\n" {
		t.Errorf("exec in /tmp printed %q", got)
	}
	// The default user writes in the workspace.
	run(client.ExecRequest{Command: []string{"sh", "-c", "echo hi > mine.txt"}})

	// Files by absolute path: the container's hostname is the workspace id.
	b, err := p.api.ReadFile(ctx, ws.ID, "/etc/hostname")
	if err != nil || strings.TrimSpace(string(b)) != ws.ID {
		t.Fatalf("read /etc/hostname = %q, %v; want %s", b, err, ws.ID)
	}
	if _, err := p.api.WriteFile(ctx, ws.ID, "/tmp/abs/new.txt", strings.NewReader("abs")); err != nil {
		t.Fatal(err)
	}
	if got := run(client.ExecRequest{Command: []string{"stat", "-c", "%U %s", "/tmp/abs/new.txt", "/tmp/abs"}}); got != "user 3\nuser 4096\n" {
		t.Errorf("a file written by absolute path: %q, want the template user's", got)
	}
	fi, err := p.api.StatFile(ctx, ws.ID, "/tmp/abs/new.txt")
	if err != nil || fi.Path != "/tmp/abs/new.txt" || fi.Size != 3 {
		t.Fatalf("stat by absolute path = %+v, %v", fi, err)
	}
	if _, err := p.api.WriteFile(ctx, ws.ID, "/workspace/.state/HEAD", strings.NewReader("x")); !errs.Is(err, errs.Forbidden) {
		t.Errorf("write of the history by absolute path = %v, want forbidden", err)
	}

	// primectl takes the same.
	out, stderr, code := p.primectl("", "workspace", "exec", ws.ID, "--user", "root", "--cwd", "/tmp", "--", "sh", "-c", "id -u; pwd")
	if code != 0 || out != "0\n/tmp\n" {
		t.Fatalf("primectl exec --user root --cwd /tmp = %q %q (exit %d)", out, stderr, code)
	}
	out, stderr, code = p.primectl("", "workspace", "files", "get", ws.ID, "/etc/hostname", "--content")
	if code != 0 || strings.TrimSpace(out) != ws.ID {
		t.Fatalf("primectl files get /etc/hostname = %q %q (exit %d)", out, stderr, code)
	}

	// The workspace is deleted: its container goes with it.
	if _, err := p.api.DeleteWorkspace(ctx, ws.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := p.api.WaitGone(ctx, ws.ID, nil); err != nil {
		t.Fatalf("wait gone: %v", err)
	}
}
