package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
)

// recipeConfigTOML is the config_toml the backend tests' templates carry
// (local, worktree, container on each engine, Kubernetes; vm next): every
// backend must show it as harness.toml, byte for byte, mode 0600. It names
// the env variable that holds the key, never the key.
const recipeConfigTOML = "# written by primer\n[model]\nname = \"recipe-model\"\napi_key_env = \"API_KEY\"\n\n[[tools]]\nname = \"python\"\n"

// recipeConfigJSON is recipeConfigTOML as a JSON (and YAML flow) string,
// for `config_toml: ...` in a template document.
var recipeConfigJSON = strconv.Quote(recipeConfigTOML)

// checkHarnessTOML shows workspace id's harness.toml: its content through
// the files API, its mode 0600 through both the files API and a `stat` in
// the workspace, and its owner, the user the workspace's commands run as.
func checkHarnessTOML(t *testing.T, p *primer, ctx context.Context, id string) {
	t.Helper()
	got, err := p.api.ReadFile(ctx, id, backend.HarnessPath)
	if err != nil || string(got) != recipeConfigTOML {
		t.Errorf("%s = %q, %v; want the template's config_toml %q", backend.HarnessPath, got, err, recipeConfigTOML)
	}
	fi, err := p.api.StatFile(ctx, id, backend.HarnessPath)
	if err != nil || fi.IsDir || fi.Mode&0o7777 != 0o600 {
		t.Errorf("stat %s through the API = %+v, %v; want a file of mode 0600", backend.HarnessPath, fi, err)
	}
	res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"sh", "-c", "stat -c '%a %u' " + backend.HarnessPath + "; id -u"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("stat %s in the workspace = %+v, %v", backend.HarnessPath, res, err)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 2 || lines[0] != fmt.Sprintf("600 %s", lines[1]) {
		t.Errorf("stat -c '%%a %%u' %s; id -u = %q; want mode 600, owned by the workspace's user", backend.HarnessPath, res.Stdout)
	}
	t.Logf("%s: %s", backend.HarnessPath, strings.ReplaceAll(strings.TrimSpace(res.Stdout), "\n", ", uid of exec "))
}
