package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/primerhq/primer/wire"
)

// JSON returns the document, indented, with a final newline: the bytes
// GET /v1/openapi.json serves and docs/openapi.json holds. It is built
// once.
func JSON() []byte {
	docOnce.Do(func() {
		b, err := json.MarshalIndent(Build(Routes()), "", "  ")
		if err != nil {
			panic(fmt.Sprintf("openapi: marshal the document: %v", err))
		}
		docJSON = append(b, '\n')
	})
	return bytes.Clone(docJSON)
}

var (
	docOnce sync.Once
	docJSON []byte
)

// Build assembles the OpenAPI 3.1 document of routes.
func Build(routes []*Route) Schema {
	g := newSchemas()
	errRef := g.of(typeOf[wire.ErrorEnvelope]())
	paths := Schema{}
	for _, r := range routes {
		p := OpenAPIPath(r.Path)
		item, _ := paths[p].(Schema)
		if item == nil {
			item = Schema{}
			paths[p] = item
		}
		item[strings.ToLower(r.Method)] = operation(g, r, errRef)
	}
	return Schema{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"info": Schema{
			"title":       "Primer API",
			"version":     wire.Version, // the server's, which the SDKs are published under
			"description": "Primer's REST API (docs/API.md): providers, templates, warm pools, workspaces with their files, exec, processes and events, sessions and their tools, agents, eval suites and runs, tenants, API keys and the audit log. Every error is the envelope {\"error\":{\"code\",\"message\",\"details\"}}.",
		},
		"servers":  []any{Schema{"url": "/"}},
		"security": []any{Schema{"bearer": []any{}}},
		"paths":    paths,
		"components": Schema{
			"schemas": g.defs,
			"responses": Schema{"Error": Schema{
				"description": "An error, in the envelope: code is the error kind (invalid 400, unauthenticated 401, forbidden 403, not_found 404, conflict and failed_precondition 409, too_large 413, resource_exhausted 429, internal 500, unavailable 503, timeout 504; method_not_allowed 405; from the port proxy bad_gateway 502 and not_implemented 501).",
				"content":     Schema{MediaJSON: Schema{"schema": errRef}},
			}},
			"securitySchemes": Schema{"bearer": Schema{
				"type": "http", "scheme": "bearer", "bearerFormat": "pmr.<key id>.<secret>",
				"description": "An API key (primectl apikey create; the first admin key is <data dir>/admin.key).",
			}},
		},
	}
}

// operation is r's OpenAPI operation object.
func operation(g *schemas, r *Route, errRef Schema) Schema {
	op := Schema{
		"operationId": operationID(r),
		"summary":     r.Summary,
		"tags":        []string{tagOf(r.Path)},
	}
	if r.Public {
		op["security"] = []any{}
	}
	var params []any
	for _, name := range r.pathParams() {
		s := Schema{"type": "string"}
		desc := ""
		switch name {
		case "pid":
			s = Schema{"type": "integer"}
		case "port":
			s = Schema{"type": "integer", "minimum": 1, "maximum": 65535}
			desc = "A TCP port on the workspace's loopback (127.0.0.1), 1 to 65535."
		}
		switch {
		case strings.HasSuffix(r.Path, "/ports/:port/*"+name):
			desc = "The path (and query) the program on the port is sent, from its root; may be empty. Escaping is kept."
			s["x-wildcard"] = true
		case strings.HasSuffix(r.Path, "*"+name):
			desc = "A path inside the workspace, relative to its root; a leading slash (files//etc/hosts) names an absolute path on an isolating backend. May hold slashes."
			s["x-wildcard"] = true
		}
		p := Schema{"name": name, "in": "path", "required": true, "schema": s}
		if desc != "" {
			p["description"] = desc
		}
		params = append(params, p)
	}
	for _, q := range r.Query {
		params = append(params, param(g, q, "query"))
	}
	for _, h := range r.Header {
		params = append(params, param(g, h, "header"))
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if r.Body != nil {
		op["requestBody"] = requestBody(g, r.Body)
	}
	responses := Schema{}
	for _, resp := range r.Responses {
		responses[strconv.Itoa(resp.Status)] = response(g, resp)
	}
	for _, st := range r.errorStatuses() {
		key := strconv.Itoa(st)
		if _, ok := responses[key]; ok {
			continue
		}
		responses[key] = Schema{"$ref": "#/components/responses/Error"}
	}
	responses["default"] = Schema{"$ref": "#/components/responses/Error"}
	op["responses"] = responses
	if r.Desc != "" {
		op["description"] = r.Desc
	}
	if ws := r.WebSocket; ws != nil {
		op["description"] = "A WebSocket (send Connection: Upgrade, Upgrade: websocket). " + ws.Desc
		op["x-websocket"] = Schema{"clientMessages": g.of(ws.Client), "serverMessages": g.of(ws.Server)}
	}
	return op
}

func param(g *schemas, p Param, in string) Schema {
	t := p.Type
	if t == nil {
		t = str
	}
	out := Schema{"name": p.Name, "in": in, "schema": g.of(t)}
	if p.Description != "" {
		out["description"] = p.Description
	}
	if p.Required {
		out["required"] = true
	}
	return out
}

func requestBody(g *schemas, b *Body) Schema {
	var s Schema
	if b.Schema != nil {
		s = b.Schema(g)
	} else {
		s = g.of(b.Type)
	}
	media := b.Media
	if len(media) == 0 {
		media = []string{MediaJSON}
	}
	content := Schema{}
	for _, m := range media {
		content[m] = Schema{"schema": s}
	}
	out := Schema{"required": !b.Optional, "content": content}
	if b.Desc != "" {
		out["description"] = b.Desc
	}
	return out
}

func response(g *schemas, resp Response) Schema {
	out := Schema{"description": resp.Desc}
	if len(resp.Headers) > 0 {
		h := Schema{}
		for _, name := range resp.Headers {
			h[name] = Schema{"schema": Schema{"type": "string"}}
		}
		out["headers"] = h
	}
	if len(resp.Content) == 0 {
		return out
	}
	content := Schema{}
	for _, c := range resp.Content {
		m := Schema{}
		switch {
		case c.Events != nil:
			// The stream is text; each event's data line is JSON of the
			// event's schema (x-sse-events).
			m["schema"] = Schema{"type": "string", "description": "Server-Sent Events: id, event and data lines; a comment line (: keep-alive) when idle."}
			var evs []any
			for _, e := range c.Events {
				ev := Schema{"event": e.Name, "data": g.of(e.Type)}
				if e.Desc != "" {
					ev["description"] = e.Desc
				}
				evs = append(evs, ev)
			}
			m["x-sse-events"] = evs
		case c.Schema != nil:
			m["schema"] = c.Schema(g)
		default:
			m["schema"] = g.of(c.Type)
		}
		if c.Media == MediaNDJSON {
			m["x-ndjson"] = "The schema is that of each line."
		}
		if _, dup := content[c.Media]; dup {
			panic("openapi: " + resp.Desc + ": media type " + c.Media + " twice")
		}
		content[c.Media] = m
	}
	out["content"] = content
	return out
}

// operationID is the method and the path's words in camel case:
// GET /v1/workspaces/{id}/files -> getWorkspacesIdFiles.
func operationID(r *Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(r.Method))
	for _, seg := range strings.Split(strings.TrimPrefix(r.Path, "/v1/"), "/") {
		seg = strings.TrimLeft(seg, ":*")
		for _, word := range strings.FieldsFunc(seg, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			b.WriteString(strings.ToUpper(word[:1]) + word[1:])
		}
	}
	return b.String()
}

// tagOf groups a route by its first path segment.
func tagOf(path string) string {
	seg, _, _ := strings.Cut(strings.TrimPrefix(path, "/v1/"), "/")
	return seg
}
