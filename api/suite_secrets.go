package api

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
)

// A suite's env values (the defaults' and every case's) and its webhook
// URL may be secrets, like a template's: responses show Redacted instead,
// and a document sent back with Redacted keeps the stored value, so
// get-edit-put round trips (`primectl suite cases` then `create --cases`
// on PUT) work. A placeholder with nothing stored behind it is refused.

// redactSuite returns su whose spec's default env values and webhook URL
// are Redacted.
func redactSuite(su wire.Suite) wire.Suite {
	var spec eval.SuiteSpec
	if len(su.Spec) == 0 || json.Unmarshal(su.Spec, &spec) != nil {
		return su
	}
	spec.Defaults.Env = redactedEnv(spec.Defaults.Env)
	if spec.WebhookURL != "" {
		spec.WebhookURL = Redacted
	}
	if raw, err := json.Marshal(spec); err == nil {
		su.Spec = raw
	} else {
		su.Spec = json.RawMessage(`{}`)
	}
	return su
}

// redactCase returns a stored case document with its env values Redacted.
func redactCase(raw json.RawMessage) json.RawMessage {
	var c eval.Case
	if json.Unmarshal(raw, &c) != nil || len(c.Env) == 0 {
		return raw
	}
	c.Env = redactedEnv(c.Env)
	out, err := json.Marshal(c)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return out
}

func redactedEnv(env map[string]string) map[string]string {
	if len(env) == 0 {
		return env
	}
	out := make(map[string]string, len(env))
	for k := range env {
		out[k] = Redacted
	}
	return out
}

// unredactSuite puts the stored values back where spec holds Redacted: the
// defaults' env and webhook URL from the stored suite, a case's env from
// the stored case of the same id. old is nil on create.
func (s *server) unredactSuite(ctx context.Context, spec *eval.SuiteSpec, old *wire.Suite) error {
	if !hasPlaceholder(spec) {
		return nil
	}
	var stored eval.SuiteSpec
	storedCases := map[string]map[string]string{}
	if old != nil {
		if err := json.Unmarshal(old.Spec, &stored); err != nil {
			return errs.E(errs.Other, "suite %s: decode stored spec: %w", old.ID, err)
		}
		rows, err := s.cfg.Store.ListSuiteCases(ctx, old.ID)
		if err != nil {
			return err
		}
		for _, r := range rows {
			var c eval.Case
			if json.Unmarshal(r.Spec, &c) == nil {
				storedCases[c.ID] = c.Env
			}
		}
	}
	if spec.WebhookURL == Redacted {
		if stored.WebhookURL == "" {
			return errs.Field("spec.webhook_url", "spec.webhook_url: %s is a placeholder, and the stored suite has no webhook", Redacted)
		}
		spec.WebhookURL = stored.WebhookURL
	}
	env, err := unredactEnv(spec.Defaults.Env, stored.Defaults.Env, "spec.defaults.env")
	if err != nil {
		return err
	}
	spec.Defaults.Env = env
	for i := range spec.Cases {
		c := &spec.Cases[i]
		env, err := unredactEnv(c.Env, storedCases[c.ID], fmt.Sprintf("spec.cases[%d].env", i))
		if err != nil {
			return err
		}
		c.Env = env
	}
	return nil
}

// unredactEnv returns env with each Redacted value replaced by old's.
func unredactEnv(env, old map[string]string, field string) (map[string]string, error) {
	var out map[string]string
	for k, v := range env {
		if v != Redacted {
			continue
		}
		ov, ok := old[k]
		if !ok {
			return nil, errs.Field(field+"."+k, "%s.%s: %s is a placeholder, and the stored suite has no value for it", field, k, Redacted)
		}
		if out == nil {
			out = maps.Clone(env)
		}
		out[k] = ov
	}
	if out == nil {
		return env, nil
	}
	return out, nil
}

// hasPlaceholder reports whether any value of spec is Redacted.
func hasPlaceholder(spec *eval.SuiteSpec) bool {
	if spec.WebhookURL == Redacted {
		return true
	}
	envs := []map[string]string{spec.Defaults.Env}
	for i := range spec.Cases {
		envs = append(envs, spec.Cases[i].Env)
	}
	for _, env := range envs {
		for _, v := range env {
			if v == Redacted {
				return true
			}
		}
	}
	return false
}
