package openapi

import (
	"reflect"

	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/sessiontool"
	"github.com/primerhq/primer/wire"
)

// typeOf is T's reflect.Type.
func typeOf[T any]() reflect.Type { return reflect.TypeOf((*T)(nil)).Elem() }

// customTypes are the types with a JSON encoding of their own
// (MarshalJSON/UnmarshalJSON), which reflection cannot see.
var customTypes = map[reflect.Type]func() Schema{
	// eval.Duration is written as a Go duration ("30s"); a number is read
	// as seconds.
	typeOf[eval.Duration](): func() Schema {
		return Schema{"type": []any{"string", "number"}, "description": `A Go duration ("30s", "5m"); a number is seconds. Written as a string ("" for none).`}
	},
	// eval.File is text, or {"base64": "..."} for bytes.
	typeOf[eval.File](): func() Schema {
		return Schema{"oneOf": []any{
			Schema{"type": "string"},
			Schema{"type": "object", "properties": Schema{"base64": Schema{"type": "string", "contentEncoding": "base64"}}, "required": []string{"base64"}, "additionalProperties": false},
		}}
	},
	// eval.Command is args (a list) or a script for sh -c (a string).
	typeOf[eval.Command](): func() Schema {
		return Schema{"anyOf": []any{
			Schema{"type": "array", "items": Schema{"type": "string"}},
			Schema{"type": "string"},
			Schema{"type": "null"},
		}}
	},
}

// object is a JSON object of any fields (a backend's own document).
func anyObject(desc string) func(*schemas) Schema {
	return func(*schemas) Schema {
		return Schema{"type": "object", "additionalProperties": true, "description": desc}
	}
}

// fieldOverrides give the json.RawMessage fields their shape, keyed by the
// component's Go type name and the JSON field name. It is filled in init:
// its functions reflect, and reflecting reads it.
var fieldOverrides map[string]func(*schemas) Schema

func init() {
	fieldOverrides = map[string]func(*schemas) Schema{
		"Provider.config": func(*schemas) Schema {
			return Schema{"type": []any{"object", "null"}, "additionalProperties": true,
				"description": "The provider type's config document (docs/API.md, Providers), inline secrets redacted; null when the caller may not see it (another tenant's shared provider) or it no longer decodes."}
		},
		"ProviderSpec.config":    anyObject("The provider type's config document (docs/API.md, Providers)."),
		"Template.backend":       anyObject("The backend document, with its kind (docs/API.md, Templates)."),
		"TemplateSpec.backend":   anyObject("The backend document, with its kind (docs/API.md, Templates)."),
		"Event.data":             anyObject("The event's fields; they depend on its type (docs/API.md, Events)."),
		"HistoryEntry.arguments": anyObject("The tool call's arguments, secrets replaced."),
		"HistoryEntry.result":    anyObject("The tool call's result summary."),
		"Suite.spec":             func(g *schemas) Schema { return g.of(typeOf[eval.SuiteSpec]()) },
		"SuiteCase.spec":         func(g *schemas) Schema { return g.of(typeOf[eval.Case]()) },
		"Run.selection":          func(g *schemas) Schema { return g.of(typeOf[eval.Selection]()) },
		"CaseResult.artifacts":   func(g *schemas) Schema { return g.of(typeOf[[]eval.Artifact]()) },
		"CaseResult.attempts":    func(g *schemas) Schema { return g.of(typeOf[[]eval.Attempt]()) },
	}
}

// requiredOverrides replace the omitempty rule for request bodies whose
// Go fields have no omitempty but may be left out (the handler fills the
// default or checks the combination itself).
var requiredOverrides = map[reflect.Type][]string{
	typeOf[sessiontool.ExecArgs]():  nil,
	typeOf[sessiontool.WriteArgs](): {"path", "content"},
	typeOf[sessiontool.ReadArgs]():  {"path"},
	typeOf[wire.TenantSpec]():       nil,
}
