package backend_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/backend/worktree"
	"github.com/primerhq/primer/errs"
)

// parser is one backend's config parser, wrapped to return what it parsed
// as a value that can be encoded again.
type parser struct {
	kind  string
	parse func(doc json.RawMessage) (any, error)
}

// providerParsers are the provider config parsers of every backend kind:
// what the registry's Validate runs before it builds a backend.
var providerParsers = []parser{
	{"local", func(d json.RawMessage) (any, error) { return local.ParseProviderConfig(d, "local") }},
	{"worktree", func(d json.RawMessage) (any, error) { return local.ParseProviderConfig(d, worktree.Type) }},
	{"container", func(d json.RawMessage) (any, error) { return container.ParseProviderConfig(d) }},
	{"kubernetes", func(d json.RawMessage) (any, error) { return kubernetes.ParseProviderConfig(d) }},
	{"vm", func(d json.RawMessage) (any, error) { return vm.ParseProviderConfig(d) }},
}

// templateParsers are the template backend decoders of every backend kind:
// what ValidateTemplate runs.
var templateParsers = []parser{
	{"local", func(d json.RawMessage) (any, error) { return local.ParseTemplate(d) }},
	{"worktree", func(d json.RawMessage) (any, error) { return worktree.ParseTemplate(d) }},
	{"container", func(d json.RawMessage) (any, error) { return container.ParseTemplate(d) }},
	{"kubernetes", func(d json.RawMessage) (any, error) { return kubernetes.ParseTemplate(d) }},
	{"vm", func(d json.RawMessage) (any, error) { return vm.ParseTemplate(d) }},
}

// checkParsers runs doc through every parser: none may panic, a refusal
// must be an Invalid error naming a field, and a document one accepts must
// come back the same when what it parsed is encoded and parsed again (the
// stored form of a config is accepted by the parser that made it).
func checkParsers(t *testing.T, ps []parser, doc []byte) {
	for _, p := range ps {
		v, err := p.parse(doc)
		if err != nil {
			if errs.KindOf(err) != errs.Invalid || errs.FieldOf(err) == "" {
				t.Fatalf("%s: refusal %v: want Invalid naming a field, got kind %v field %q", p.kind, err, errs.KindOf(err), errs.FieldOf(err))
			}
			continue
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: accepted %q, but encoding what it parsed fails: %v", p.kind, doc, err)
		}
		v2, err := p.parse(again)
		if err != nil {
			t.Fatalf("%s: accepted %q, refused its own encoding %s: %v", p.kind, doc, again, err)
		}
		if !reflect.DeepEqual(v, v2) {
			t.Fatalf("%s: accepted %q as %+v, its encoding %s parses as %+v", p.kind, doc, v, again, v2)
		}
	}
}

// FuzzProviderConfig feeds provider config documents to every backend's
// parser. Seeds (testdata/fuzz/FuzzProviderConfig) are the README's and
// API.md's provider documents.
func FuzzProviderConfig(f *testing.F) {
	f.Fuzz(func(t *testing.T, doc []byte) { checkParsers(t, providerParsers, doc) })
}

// FuzzTemplateConfig feeds template backend documents to every backend's
// template decoder. Seeds (testdata/fuzz/FuzzTemplateConfig) are the
// README's and API.md's template documents.
func FuzzTemplateConfig(f *testing.F) {
	f.Fuzz(func(t *testing.T, doc []byte) { checkParsers(t, templateParsers, doc) })
}
