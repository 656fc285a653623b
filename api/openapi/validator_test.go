package openapi

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/primerhq/primer/internal/testenv"
)

// TestIndependentValidatorAccepts runs an OpenAPI validator that is not
// ours (npm's @seriousme/openapi-schema-validator, pinned by
// api/openapi/validator/package-lock.json) on the generated document. It
// skips outside CI when node or the package is missing, saying how to
// install them; under CI=true it fails instead.
func TestIndependentValidatorAccepts(t *testing.T) {
	const install = "cd api/openapi/validator && npm ci (.ci/run does)"
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(t, "node is not on PATH (%v); install Node.js, then %s", err, install)
	}
	if _, err := os.Stat(filepath.Join("validator", "node_modules", "@seriousme", "openapi-schema-validator", "package.json")); err != nil {
		testenv.Missing(t, "the OpenAPI validator is not installed (%v): %s", err, install)
	}
	doc := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(doc, JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "validate.mjs", doc)
	cmd.Dir = "validator"
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "valid: OpenAPI 3.1") {
		t.Fatalf("the validator refuses the document (%v):\n%s", err, out)
	}
}

// TestIndependentValidatorRefuses shows the validator run above can fail:
// a document with a dangling $ref and one with a response lacking its
// description are refused.
func TestIndependentValidatorRefuses(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(t, "node is not on PATH (%v)", err)
	}
	if _, err := os.Stat(filepath.Join("validator", "node_modules", "@seriousme", "openapi-schema-validator", "package.json")); err != nil {
		testenv.Missing(t, "the OpenAPI validator is not installed (%v): cd api/openapi/validator && npm ci", err)
	}
	for name, doc := range map[string]string{
		"dangling ref":   `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Nowhere"}}}}}}}}}`,
		"no description": `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{}}}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("node", "validate.mjs", file)
			cmd.Dir = "validator"
			if out, err := cmd.CombinedOutput(); err == nil {
				t.Fatalf("the validator accepts a bad document:\n%s", out)
			}
		})
	}
}
