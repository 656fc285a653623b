package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPrimectlWalkthrough is the README's walkthrough: YAML documents, create
// a workspace with --wait, exec with its exit code, files put/get --content,
// events, get -o yaml, delete --wait; and the Temporal web UI answers.
func TestPrimectlWalkthrough(t *testing.T) {
	p := startPrimer(t, withUI())
	root := t.TempDir()
	manifest := `kind: workspace_provider
spec:
  id: scratch
  provider: local
  config: {kind: local, root_path: ` + root + `}
---
kind: workspace_template
spec:
  id: scratch-python
  provider_id: scratch
  backend:
    kind: local
    env: {GREETING: hello}
    files: {README.txt: "scratch space\n"}
    init: ["mkdir -p out"]
`
	out, errOut, code := p.primectl(manifest, "create", "-f", "-")
	if code != 0 || !strings.Contains(out, "workspace_provider/scratch created") || !strings.Contains(out, "workspace_template/scratch-python created") {
		t.Fatalf("create -f: code %d\nstdout %s\nstderr %s", code, out, errOut)
	}

	out, errOut, code = p.primectl("", "create", "workspace", "--set", "template_id=scratch-python", "--wait")
	m := regexp.MustCompile(`workspace/(ws-[0-9a-f]+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("create workspace --wait: code %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	id := m[1]
	if !strings.Contains(errOut, "running") {
		t.Errorf("--wait showed no progress to running: %q", errOut)
	}

	// The template's files and init ran; its env reaches exec.
	if _, err := os.Stat(filepath.Join(root, id, "out")); err != nil {
		t.Errorf("init command did not run: %v", err)
	}
	out, _, code = p.primectl("", "workspace", "exec", id, "--", "sh", "-c", "cat README.txt; echo $GREETING; exit 5")
	if code != 5 || out != "scratch space\nhello\n" {
		t.Errorf("exec: code %d stdout %q; want 5 and the README plus $GREETING", code, out)
	}

	if _, errOut, code = p.primectl("print(6 * 7)\n", "workspace", "files", "put", id, "snippet.py", "-"); code != 0 {
		t.Fatalf("files put: %d %s", code, errOut)
	}
	out, _, code = p.primectl("", "workspace", "files", "get", id, "snippet.py", "--content")
	if code != 0 || out != "print(6 * 7)\n" {
		t.Errorf("files get --content = %q (code %d)", out, code)
	}
	out, _, code = p.primectl("", "workspace", "files", "get", id, "../outside", "--content")
	if code == 0 || out != "" {
		t.Errorf("files get ../outside: code %d stdout %q; want an error", code, out)
	}

	out, _, code = p.primectl("", "workspace", "events", id)
	if code != 0 || !strings.Contains(out, "workspace.provisioned") || !strings.Contains(out, "workspace.phase_changed") {
		t.Errorf("events: code %d\n%s", code, out)
	}
	out, _, code = p.primectl("", "get", "workspace", id, "-o", "yaml")
	if code != 0 || !strings.Contains(out, "phase: running") || !strings.Contains(out, "template_id: scratch-python") {
		t.Errorf("get -o yaml: code %d\n%s", code, out)
	}
	if strings.Contains(strings.ToLower(out), "token") {
		t.Errorf("workspace output mentions a token:\n%s", out)
	}

	// The Temporal web UI is served.
	resp, err := http.Get(p.srv.TemporalUIAddress())
	if err != nil {
		t.Fatalf("temporal ui: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(strings.ToLower(string(body)), "<html") {
		t.Errorf("temporal ui: status %d, body %.80q", resp.StatusCode, body)
	}

	out, errOut, code = p.primectl("", "delete", "workspace", id, "--wait")
	if code != 0 {
		t.Fatalf("delete --wait: %d %s %s", code, out, errOut)
	}
	_, _, code = p.primectl("", "get", "workspace", id)
	if code != 1 {
		t.Errorf("get after delete exit code = %d, want 1 (not found)", code)
	}
	if _, err := os.Stat(filepath.Join(root, id)); !os.IsNotExist(err) {
		t.Errorf("workspace dir left: %v", err)
	}

	// The reserved provider is protected.
	_, errOut, code = p.primectl("kind: workspace_provider\nspec: {id: local, provider: local, config: {kind: local, root_path: /tmp}}\n", "create", "-f", "-")
	if code == 0 || !strings.Contains(errOut, "conflict") {
		t.Errorf("create local again: code %d stderr %q; want conflict", code, errOut)
	}
}
