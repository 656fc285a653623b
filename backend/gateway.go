package backend

import (
	"hash/fnv"
	"strconv"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// DefaultGatewayPort is the loopback port inside the sandbox the model
// gateway listens on when the template names none.
const DefaultGatewayPort = 8719

// DefaultGatewayPeriod is the budget period when a budget names none.
const DefaultGatewayPeriod = 24 * time.Hour

// ModelGateway is a template's model gateway (`model_gateway` in the
// backend document): programs in its workspaces call models through a
// loopback port that the runtime tunnels to the platform, which adds the
// provider's key. The sandbox holds only a per-workspace credential that
// is worthless outside that tunnel.
type ModelGateway struct {
	// ProviderID is an LLM provider of the template's tenant.
	ProviderID string `json:"provider_id"`
	// Models are the model names the workspace may call; others are 403.
	Models []string `json:"models"`
	// Port is the loopback port inside the sandbox; when unset,
	// DefaultGatewayPort, or on a host backend a port of the workspace's
	// own (PortFor).
	Port int `json:"port,omitempty"`
	// Budget bounds the calls per period; nil: no bound.
	Budget *GatewayBudget `json:"budget,omitempty"`
}

// GatewayBudget bounds a workspace's and its tenant's gateway use per
// period (a fixed window starting at the Unix epoch); zero fields are no
// bound. Over budget is a 429 in the provider's own error shape.
type GatewayBudget struct {
	// Period is a Go duration ("24h"); DefaultGatewayPeriod when empty.
	Period            string `json:"period,omitempty"`
	WorkspaceTokens   int64  `json:"workspace_tokens,omitempty"`
	WorkspaceRequests int64  `json:"workspace_requests,omitempty"`
	TenantTokens      int64  `json:"tenant_tokens,omitempty"`
	TenantRequests    int64  `json:"tenant_requests,omitempty"`
}

// Host backends' gateway ports (PortFor) are in [hostGatewayPorts,
// hostGatewayPorts+hostGatewaySpan), below Linux's ephemeral range.
const (
	hostGatewayPorts = 20000
	hostGatewaySpan  = 12000
)

// PortFor is the gateway's port in workspace id of backend kind: the
// template's port when it names one; else DefaultGatewayPort in a sandbox
// of its own (container, pod), and on a host backend (local, worktree,
// vm), whose workspaces share the host's loopback, a port derived from
// the workspace id, so that two workspaces on one host do not ask for the
// same one. The environment and the runtime's listener both take it from
// here.
func (g *ModelGateway) PortFor(kind, id string) int {
	switch {
	case g.Port != 0:
		return g.Port
	case wire.IsHostBackend(kind) || kind == wire.BackendVM:
		h := fnv.New32a()
		_, _ = h.Write([]byte(id))
		return hostGatewayPorts + int(h.Sum32()%hostGatewaySpan)
	}
	return DefaultGatewayPort
}

// PeriodOf is the budget's period.
func (b *GatewayBudget) PeriodOf() time.Duration {
	if b == nil || b.Period == "" {
		return DefaultGatewayPeriod
	}
	d, err := time.ParseDuration(b.Period)
	if err != nil || d <= 0 {
		return DefaultGatewayPeriod
	}
	return d
}

// validate checks the gateway's fields; that the provider exists and is
// the tenant's is the API's check (it needs the store).
func (g *ModelGateway) validate(prefix string) error {
	f := prefix + ".model_gateway"
	if g.ProviderID == "" {
		return errs.Field(f+".provider_id", "%s.provider_id: required (an LLM provider's id)", f)
	}
	if len(g.Models) == 0 {
		return errs.Field(f+".models", "%s.models: at least one model name is required", f)
	}
	for i, m := range g.Models {
		if m == "" {
			return errs.Field(f+".models", "%s.models[%d]: empty model name", f, i)
		}
	}
	if g.Port != 0 && (g.Port < 1024 || g.Port > 65535) {
		// Not a privileged port: on a vm host whose runtime runs as root,
		// one below 1024 would take a port of the host's own services.
		return errs.Field(f+".port", "%s.port: %d: want 1024 to 65535 (an unprivileged loopback port)", f, g.Port)
	}
	if b := g.Budget; b != nil {
		if b.Period != "" {
			if d, err := time.ParseDuration(b.Period); err != nil || d <= 0 {
				return errs.Field(f+".budget.period", "%s.budget.period: %q is not a positive Go duration", f, b.Period)
			}
		}
		if b.WorkspaceTokens < 0 || b.WorkspaceRequests < 0 || b.TenantTokens < 0 || b.TenantRequests < 0 {
			return errs.Field(f+".budget", "%s.budget: bounds must not be negative", f)
		}
	}
	return nil
}

// GatewayEnv is env with the variables that point a workspace's programs
// at its model gateway on port (PortFor; OpenAI and Anthropic clients
// read them), the
// credential standing in for the keys. env itself is not changed.
func GatewayEnv(env map[string]string, g *ModelGateway, port int, credential string) map[string]string {
	if g == nil {
		return env
	}
	out := make(map[string]string, len(env)+4)
	for k, v := range env {
		out[k] = v
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	out["OPENAI_BASE_URL"] = base + "/v1"
	out["ANTHROPIC_BASE_URL"] = base
	out["OPENAI_API_KEY"] = credential
	out["ANTHROPIC_API_KEY"] = credential
	return out
}
