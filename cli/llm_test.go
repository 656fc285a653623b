package cli

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/primerhq/primer/api"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/starter"
	"github.com/primerhq/primer/wire"
)

// agentYAML is the seed's model provider and code-runner agent.
const agentYAML = `kind: llm_provider
spec:
  id: test-model
  kind: openai
  base_url: http://127.0.0.1:8999/v1
  api_key: sk-cli-test-0d9e-secret
---
kind: agent
spec:
  id: code-runner
  description: Runs a snippet and reports what it printed
  model: {provider_id: test-model, model_name: test, max_tokens: 1024}
  system_prompt:
    - You run code in the workspace.
    - Report what it printed.
  tools: []
`

// realAPI serves the real API over a fresh SQLite store and returns its
// URL, an admin key and the store. Only the routes that need no workflow
// engine (providers, agents) are meant to be used.
func realAPI(t *testing.T) (string, string, *models.Store) {
	t.Helper()
	ctx := context.Background()
	store, err := models.Open(ctx, models.Config{SQLitePath: filepath.Join(t.TempDir(), "primer.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if err := store.EnsureDefaults(ctx, filepath.Join(t.TempDir(), "workspaces")); err != nil {
		t.Fatal(err)
	}
	reg := backend.NewRegistry(map[string]backend.Factory{})
	// The documents' model servers are on loopback: allowlisted, as an
	// admin would (PRIMER_OUTBOUND_ALLOW).
	allow, err := outbound.Parse("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Config{Store: store, Starter: &starter.Starter{Store: store},
		Connector: &connector.Connector{Store: store, Backends: reg}, Backends: reg, Metrics: metrics.New(), Outbound: allow})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	id, key, hash := models.NewAPIKey()
	if err := store.CreateAPIKey(ctx, &wire.APIKey{ID: id, TenantID: wire.DefaultTenantID, Role: wire.RoleAdmin, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	return srv.URL, key, store
}

func primectl(t *testing.T, url, key, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--url", url, "--token", key}, args...)
	code := Run(context.Background(), full, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// TestCreateAgentDocuments: create -f of llm_provider and agent documents
// against the real API; get, list and delete them; the key is stored and
// never printed.
func TestCreateAgentDocuments(t *testing.T) {
	url, key, store := realAPI(t)
	file := filepath.Join(t.TempDir(), "code-runner.yaml")
	if err := os.WriteFile(file, []byte(agentYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	r := primectl(t, url, key, "", "create", "-f", file)
	if r.code != 0 || r.stdout != "llm_provider/test-model created\nagent/code-runner created\n" {
		t.Fatalf("create -f: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	ctx := context.Background()
	p, err := store.GetLLMProvider(ctx, "test-model")
	if err != nil || p.APIKey != "sk-cli-test-0d9e-secret" || p.Kind != wire.LLMOpenAI {
		t.Fatalf("stored provider %+v, %v", p, err)
	}
	a, err := store.GetAgent(ctx, "code-runner")
	if err != nil || a.Model.ModelName != "test" || a.Model.MaxTokens != 1024 || len(a.SystemPrompt) != 2 || a.MaxTurns != wire.DefaultAgentMaxTurns {
		t.Fatalf("stored agent %+v, %v", a, err)
	}

	for _, args := range [][]string{
		{"get", "llm_provider", "test-model"}, {"get", "llm_provider", "test-model", "-o", "json"},
		{"get", "llm", "test-model", "-o", "yaml"}, {"list", "llm_providers"}, {"list", "llm_providers", "-o", "json"},
		{"get", "agent", "code-runner"}, {"list", "agents", "-o", "yaml"},
	} {
		r := primectl(t, url, key, "", args...)
		if r.code != 0 || strings.Contains(r.stdout+r.stderr, "sk-cli-test-0d9e-secret") {
			t.Fatalf("%v: code %d, or the key printed: %q %q", args, r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "test-model") {
			t.Fatalf("%v: %q", args, r.stdout)
		}
	}
	if r := primectl(t, url, key, "", "get", "agent", "code-runner"); !strings.Contains(r.stdout, "code-runner") || !strings.Contains(r.stdout, "50") {
		t.Fatalf("agent table %q", r.stdout)
	}

	// A bad document: the server's 400 names the field.
	bad := strings.Replace(agentYAML, "tools: []", "tools: [workspace__exec]", 1)
	bad = strings.Replace(bad, "id: code-runner", "id: other", 1)
	bad = strings.Replace(bad, "id: test-model\n  kind", "id: test-model-2\n  kind", 1)
	r = primectl(t, url, key, bad, "create", "-f", "-")
	if r.code == 0 || !strings.Contains(r.stderr, "spec.tools[0]") || !strings.Contains(r.stderr, "implicit") ||
		!strings.Contains(r.stderr, "created before the error: llm_provider/test-model-2") {
		t.Fatalf("implicit tool: code %d stderr %q", r.code, r.stderr)
	}
	// An unknown kind is refused before anything is sent.
	r = primectl(t, url, key, "kind: llm\nspec: {id: x}\n", "create", "-f", "-")
	if r.code == 0 || !strings.Contains(r.stderr, `unknown kind "llm"`) || !strings.Contains(r.stderr, "llm_provider") {
		t.Fatalf("unknown kind: code %d stderr %q", r.code, r.stderr)
	}

	if r := primectl(t, url, key, "", "delete", "agent", "code-runner", "other"); r.code == 0 {
		t.Fatalf("delete of a missing agent succeeded: %q", r.stdout)
	}
	if _, err := store.GetAgent(ctx, "code-runner"); err == nil {
		t.Fatal("agent code-runner still there")
	}
	if r := primectl(t, url, key, "", "delete", "llm_provider", "test-model", "test-model-2"); r.code != 0 ||
		r.stdout != "llm_provider/test-model deleted\nllm_provider/test-model-2 deleted\n" {
		t.Fatalf("delete providers: %d %q %q", r.code, r.stdout, r.stderr)
	}
}
