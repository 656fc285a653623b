package api

import (
	"encoding/json"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// checkModelGateway refuses a template whose model_gateway names an LLM
// provider that is not the template's tenant's, even one the caller (an
// operator) can see: the gateway adds that provider's key to the calls of
// the tenant's workspaces. 400 on the field, as an unknown reference.
func (s *server) checkModelGateway(c *gin.Context, doc json.RawMessage, tenant string) error {
	var common backend.Common
	if err := json.Unmarshal(doc, &common); err != nil {
		return errs.Field("spec.backend", "spec.backend: %v", err)
	}
	g := common.ModelGateway
	if g == nil {
		return nil
	}
	p, err := s.llmProviderOf(c, g.ProviderID)
	if err == nil && p.TenantID != tenant {
		err = errs.E(errs.NotFound, "llm provider %s not found", g.ProviderID)
	}
	if err != nil {
		return asRef(err, "spec.backend.model_gateway.provider_id", "llm provider", g.ProviderID)
	}
	return nil
}
