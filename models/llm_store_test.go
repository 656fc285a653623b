package models

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// TestLLMStore runs the model provider and agent store on every dialect.
func TestLLMStore(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			for _, tc := range llmStoreCases {
				t.Run(tc.name, func(t *testing.T) {
					tc.run(t, t.Context(), d.open(t))
				})
			}
		})
	}
}

func wantKind(t *testing.T, err error, kind errs.Kind, what string) {
	t.Helper()
	if !errs.Is(err, kind) {
		t.Fatalf("%s: error %v, want kind %v", what, err, kind)
	}
}

var llmStoreCases = []storeCase{
	{"provider CRUD keeps the key", func(t *testing.T, ctx context.Context, s *Store) {
		p := &wire.LLMProvider{ID: "oa", TenantID: "t1", Kind: wire.LLMOpenAI, BaseURL: "http://127.0.0.1:9/v1", APIKey: "sk-secret"}
		if err := s.CreateLLMProvider(ctx, p); err != nil {
			t.Fatal(err)
		}
		wantKind(t, s.CreateLLMProvider(ctx, &wire.LLMProvider{ID: "oa", Kind: wire.LLMOpenAI, BaseURL: "x"}), errs.Conflict, "duplicate")
		got, err := s.GetLLMProvider(ctx, "oa")
		if err != nil {
			t.Fatal(err)
		}
		if got.APIKey != "sk-secret" || got.TenantID != "t1" || got.Kind != wire.LLMOpenAI || got.CreatedAt.IsZero() {
			t.Fatalf("got %+v", got)
		}
		if k, err := LLMKey(got); err != nil || k != "sk-secret" {
			t.Fatalf("Key() = %q, %v", k, err)
		}
		// The row marshals without its key (json:"-").
		b, _ := json.Marshal(got)
		if strings.Contains(string(b), "sk-secret") {
			t.Fatalf("marshalled row holds the key: %s", b)
		}

		upd := &wire.LLMProvider{ID: "oa", Kind: wire.LLMAnthropic, BaseURL: "http://127.0.0.1:9/v2", APIKeyEnv: "PRIMER_TEST_LLM_KEY"}
		if err := s.UpdateLLMProvider(ctx, upd); err != nil {
			t.Fatal(err)
		}
		if upd.APIKey != "" || upd.APIKeyEnv != "PRIMER_TEST_LLM_KEY" || upd.Kind != wire.LLMAnthropic || upd.TenantID != "t1" {
			t.Fatalf("updated %+v", upd)
		}
		t.Setenv("PRIMER_TEST_LLM_KEY", "")
		if _, err := LLMKey(upd); err == nil || !strings.Contains(err.Error(), "PRIMER_TEST_LLM_KEY") {
			t.Fatalf("Key() of an unset variable: %v", err)
		}
		t.Setenv("PRIMER_TEST_LLM_KEY", "from-env")
		if k, err := LLMKey(upd); err != nil || k != "from-env" {
			t.Fatalf("Key() = %q, %v", k, err)
		}
		wantKind(t, s.UpdateLLMProvider(ctx, &wire.LLMProvider{ID: "nope", Kind: wire.LLMOpenAI}), errs.NotFound, "update unknown")

		if err := s.CreateLLMProvider(ctx, &wire.LLMProvider{ID: "other", TenantID: "t2", Kind: wire.LLMOpenAI, BaseURL: "x", APIKey: "k"}); err != nil {
			t.Fatal(err)
		}
		ps, err := s.ListLLMProviders(ctx, "t1")
		if err != nil || len(ps) != 1 || ps[0].ID != "oa" {
			t.Fatalf("list t1 = %+v, %v", ps, err)
		}
		if ps, _ = s.ListLLMProviders(ctx, ""); len(ps) != 2 {
			t.Fatalf("list all = %d rows", len(ps))
		}
		if err := s.DeleteLLMProvider(ctx, "oa"); err != nil {
			t.Fatal(err)
		}
		wantKind(t, s.DeleteLLMProvider(ctx, "oa"), errs.NotFound, "delete twice")
		_, err = s.GetLLMProvider(ctx, "oa")
		wantKind(t, err, errs.NotFound, "get deleted")
	}},
	{"agent CRUD and its provider", func(t *testing.T, ctx context.Context, s *Store) {
		err := s.CreateAgent(ctx, &wire.Agent{ID: "a", Model: wire.AgentModel{ProviderID: "ghost", ModelName: "m"}})
		if errs.FieldOf(err) != "model.provider_id" {
			t.Fatalf("agent on an unknown provider: %v (field %q)", err, errs.FieldOf(err))
		}
		if err := s.CreateLLMProvider(ctx, &wire.LLMProvider{ID: "p", Kind: wire.LLMOpenAI, BaseURL: "x", APIKey: "k"}); err != nil {
			t.Fatal(err)
		}
		temp := 0.5
		a := &wire.Agent{ID: "code-runner", TenantID: "t1", Description: "runs code",
			Model:        wire.AgentModel{ProviderID: "p", ModelName: "gpt", Temperature: &temp, MaxTokens: 512},
			SystemPrompt: []string{"You run code.", "Be brief."}, MaxTurns: 7, Timeout: "5m"}
		if err := s.CreateAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetAgent(ctx, "code-runner")
		if err != nil {
			t.Fatal(err)
		}
		if got.Model.ProviderID != "p" || got.Model.ModelName != "gpt" || got.Model.Temperature == nil || *got.Model.Temperature != 0.5 ||
			got.Model.MaxTokens != 512 || len(got.SystemPrompt) != 2 || got.SystemPrompt[1] != "Be brief." ||
			got.MaxTurns != 7 || got.Timeout != "5m" || got.TenantID != "t1" || got.Description != "runs code" {
			t.Fatalf("got %+v", got)
		}
		wantKind(t, s.DeleteLLMProvider(ctx, "p"), errs.Conflict, "delete a provider in use")

		// Update clears what the new spec leaves out.
		upd := &wire.Agent{ID: "code-runner", Model: wire.AgentModel{ProviderID: "p", ModelName: "gpt-2"}, Tools: []string{"x"}, MaxTurns: 50, Timeout: "30m"}
		if err := s.UpdateAgent(ctx, upd); err != nil {
			t.Fatal(err)
		}
		if upd.Description != "" || len(upd.SystemPrompt) != 0 || upd.Model.Temperature != nil || upd.Model.ModelName != "gpt-2" ||
			len(upd.Tools) != 1 || upd.MaxTurns != 50 || upd.TenantID != "t1" {
			t.Fatalf("updated %+v", upd)
		}
		err = s.UpdateAgent(ctx, &wire.Agent{ID: "code-runner", Model: wire.AgentModel{ProviderID: "ghost", ModelName: "m"}})
		if errs.FieldOf(err) != "model.provider_id" {
			t.Fatalf("update to an unknown provider: %v", err)
		}
		wantKind(t, s.UpdateAgent(ctx, &wire.Agent{ID: "nope", Model: wire.AgentModel{ProviderID: "p"}}), errs.NotFound, "update unknown")

		if as, err := s.ListAgents(ctx, "t1"); err != nil || len(as) != 1 {
			t.Fatalf("list t1 = %+v, %v", as, err)
		}
		if as, _ := s.ListAgents(ctx, "t2"); len(as) != 0 {
			t.Fatalf("list t2 = %+v", as)
		}
		if err := s.DeleteAgent(ctx, "code-runner"); err != nil {
			t.Fatal(err)
		}
		wantKind(t, s.DeleteAgent(ctx, "code-runner"), errs.NotFound, "delete twice")
		if err := s.DeleteLLMProvider(ctx, "p"); err != nil {
			t.Fatalf("delete the provider once unused: %v", err)
		}
	}},
}
