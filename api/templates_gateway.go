package api

import (
	"encoding/json"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// checkModelGateway refuses a template whose model_gateway names an LLM
// provider the caller's tenant cannot see (400 on the field, as an unknown
// reference; another tenant's provider is unknown too).
func (s *server) checkModelGateway(c *gin.Context, doc json.RawMessage) error {
	var common backend.Common
	if err := json.Unmarshal(doc, &common); err != nil {
		return errs.Field("spec.backend", "spec.backend: %v", err)
	}
	g := common.ModelGateway
	if g == nil {
		return nil
	}
	if _, err := s.llmProviderOf(c, g.ProviderID); err != nil {
		return asRef(err, "spec.backend.model_gateway.provider_id", "llm provider", g.ProviderID)
	}
	return nil
}
