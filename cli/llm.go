package cli

import (
	"context"
	"io"
	"strconv"

	"github.com/primerhq/primer/wire"
)

// getLLM prints one model provider or agent.
func (a *app) getLLM(ctx context.Context, kind, id string) error {
	c := a.client()
	if kind == kindLLM {
		p, err := c.GetLLMProvider(ctx, id)
		if err != nil {
			return err
		}
		return a.printObject(p, a.llmProviderTable([]wire.LLMProviderView{*p}))
	}
	ag, err := c.GetAgent(ctx, id)
	if err != nil {
		return err
	}
	return a.printObject(ag, a.agentTable([]wire.Agent{*ag}))
}

// listLLM prints the model providers or the agents.
func (a *app) listLLM(ctx context.Context, kind string) error {
	c := a.client()
	if kind == kindLLM {
		ps, err := c.ListLLMProviders(ctx)
		if err != nil {
			return err
		}
		return a.printObject(list[wire.LLMProviderView]{nonNil(ps)}, a.llmProviderTable(ps))
	}
	as, err := c.ListAgents(ctx)
	if err != nil {
		return err
	}
	return a.printObject(list[wire.Agent]{nonNil(as)}, a.agentTable(as))
}

// llmProviderTable shows where a provider's key comes from, never the key.
func (a *app) llmProviderTable(ps []wire.LLMProviderView) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "KIND", "BASE URL", "KEY", "AGE")
		for _, p := range ps {
			key := "stored"
			if p.APIKeyEnv != "" {
				key = "env " + p.APIKeyEnv
			}
			row(w, p.ID, p.Kind, p.BaseURL, key, a.age(p.CreatedAt))
		}
	}
}

func (a *app) agentTable(as []wire.Agent) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "PROVIDER", "MODEL", "MAX TURNS", "TIMEOUT", "AGE", "DESCRIPTION")
		for _, ag := range as {
			row(w, ag.ID, ag.Model.ProviderID, ag.Model.ModelName, strconv.Itoa(ag.MaxTurns), ag.Timeout, a.age(ag.CreatedAt), ag.Description)
		}
	}
}
