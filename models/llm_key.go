package models

import (
	"os"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// LLMKey is the provider's API key: APIKey, or the worker's APIKeyEnv
// variable. Invalid if neither gives one; the error never holds a key.
func LLMKey(p *wire.LLMProvider) (string, error) {
	if p.APIKey != "" {
		return p.APIKey, nil
	}
	if p.APIKeyEnv == "" {
		return "", errs.E(errs.Invalid, "llm provider %s: no api_key or api_key_env", p.ID)
	}
	if v := os.Getenv(p.APIKeyEnv); v != "" {
		return v, nil
	}
	return "", errs.E(errs.Invalid, "llm provider %s: environment variable %s is not set on the worker", p.ID, p.APIKeyEnv)
}
