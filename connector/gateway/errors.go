package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/primerhq/primer/wire"
)

// refusal is a gateway's own answer (not the provider's), written in the
// error shape of the API the caller speaks so its client reports it as it
// would the provider's.
type refusal struct {
	status  int
	message string
	// openAIType and openAICode are OpenAI's error.type and error.code;
	// anthropicType is Anthropic's error.type.
	openAIType, openAICode, anthropicType string
}

// The gateway's refusals.
func unauthorized(msg string) refusal {
	return refusal{http.StatusUnauthorized, msg, "invalid_request_error", "invalid_api_key", "authentication_error"}
}
func forbidden(msg string) refusal {
	return refusal{http.StatusForbidden, msg, "invalid_request_error", "model_not_allowed", "permission_error"}
}
func overBudget(msg string) refusal {
	return refusal{http.StatusTooManyRequests, msg, "insufficient_quota", "insufficient_quota", "rate_limit_error"}
}
func badRequest(status int, msg string) refusal {
	return refusal{status, msg, "invalid_request_error", "invalid_request", "invalid_request_error"}
}
func notFound(msg string) refusal {
	return refusal{http.StatusNotFound, msg, "invalid_request_error", "unknown_url", "not_found_error"}
}
func upstream(status int, msg string) refusal {
	return refusal{status, msg, "api_error", "upstream_error", "api_error"}
}

// write sends r in kind's shape (wire.LLMOpenAI or wire.LLMAnthropic).
func (r refusal) write(w http.ResponseWriter, kind string) {
	var body any
	if kind == wire.LLMAnthropic {
		body = map[string]any{"type": "error", "error": map[string]any{"type": r.anthropicType, "message": r.message}}
	} else {
		body = map[string]any{"error": map[string]any{"message": r.message, "type": r.openAIType, "param": nil, "code": r.openAICode}}
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.status)
	_, _ = w.Write(b)
}
