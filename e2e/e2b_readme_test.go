package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/wire"
)

// readmeSection returns the README's section under heading (a "## "
// line), up to the next "## " heading.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", heading)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// fenced returns the first fenced block of lang in text.
func fenced(t *testing.T, text, lang string) string {
	t.Helper()
	_, rest, ok := strings.Cut(text, "```"+lang+"\n")
	if !ok {
		t.Fatalf("no ```%s block in:\n%s", lang, text)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("unterminated ```%s block", lang)
	}
	return block
}

// TestE2BSDKReadme runs the README's "E2B SDK" section as written: the
// "Containers" section's provider and template (primectl create -f), a
// member key from `primectl apikey create`, the three variables (on the
// test's port), and the example program, unmodified, on the pinned SDK.
func TestE2BSDKReadme(t *testing.T) {
	dir := e2bScriptsDir(t)
	e := containertest.Known()[0]
	containertest.Require(t, e)
	section := readmeSection(t, "E2B SDK")
	vars := fenced(t, section, "sh")
	for _, want := range []string{
		"export E2B_API_URL=http://127.0.0.1:8080/e2b ",
		"export E2B_SANDBOX_URL=http://127.0.0.1:8080/e2b/envd ",
		"export E2B_API_KEY=$(primectl apikey create --role member --name e2b)",
	} {
		if !strings.Contains(vars, want) {
			t.Fatalf("the README's variables lack %q:\n%s", want, vars)
		}
	}
	program := fenced(t, section, "js")

	p := startPrimer(t, withContainers(t))
	t.Cleanup(func() { e2bDeleteAll(t, p) })
	manifest := filepath.Join(t.TempDir(), "sandbox.yaml")
	if err := os.WriteFile(manifest, []byte(fenced(t, readmeSection(t, "Containers: a sandboxed code interpreter"), "yaml")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := p.primectl("", "create", "-f", manifest); code != 0 {
		t.Fatalf("primectl create -f: %d %s %s", code, out, errOut)
	}
	key, errOut, code := p.primectl("", "apikey", "create", "--role", "member", "--name", "e2b")
	if code != 0 {
		t.Fatalf("primectl apikey create: %d %s", code, errOut)
	}

	// The program runs where the SDK is installed, as `npm install e2b`
	// next to it would have it.
	work := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "demo.mjs"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "demo.mjs")
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"E2B_API_URL="+p.srv.URL()+"/e2b",
		"E2B_SANDBOX_URL="+p.srv.URL()+"/e2b/envd",
		"E2B_API_KEY="+strings.TrimSpace(key))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node demo.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("the README's example printed:\n%s", stdout.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^hello from \S+ 0$`).MatchString(lines[0]) || lines[1] != "written through E2B" ||
		!regexp.MustCompile(`^\[ 'ws-[0-9a-f]+' \]$`).MatchString(lines[2]) {
		t.Fatalf("the README's example printed %q; want hello from <host> 0, the file, and the one sandbox listed", lines)
	}
	// Its kill deleted the one workspace it made.
	list, err := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ws := range list {
		if ws.Phase != wire.PhaseTerminating {
			t.Errorf("after the example's kill: %s is %s", ws.ID, ws.Phase)
		}
	}
}
