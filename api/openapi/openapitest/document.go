package openapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"sort"
	"strconv"
	"strings"
)

// Document is a parsed OpenAPI document that answers can be checked against.
type Document struct {
	v      validator
	routes []docRoute
	errRef map[string]any // the error envelope's schema
	// responses are #/components/responses.
	responses map[string]any
}

// docRoute is one path with its operations, as segments to match.
type docRoute struct {
	path     string
	segs     []string // "{id}" for a parameter
	wildcard bool     // the last segment takes the rest of the path
	ops      map[string]map[string]any
}

// Load parses an OpenAPI document (openapi.JSON()).
func Load(doc []byte) (*Document, error) {
	var raw struct {
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas   map[string]any `json:"schemas"`
			Responses map[string]any `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("openapitest: parse the document: %w", err)
	}
	d := &Document{v: validator{components: raw.Components.Schemas},
		errRef: map[string]any{"$ref": "#/components/schemas/ErrorEnvelope"}}
	for p, item := range raw.Paths {
		r := docRoute{path: p, ops: map[string]map[string]any{}}
		r.segs = strings.Split(strings.TrimPrefix(p, "/"), "/")
		for m, op := range item {
			r.ops[strings.ToUpper(m)] = op
			for _, prm := range asList(op["parameters"]) {
				pm, _ := prm.(map[string]any)
				if sch, _ := pm["schema"].(map[string]any); pm["in"] == "path" && sch["x-wildcard"] == true {
					r.wildcard = true
				}
			}
		}
		d.routes = append(d.routes, r)
	}
	// Literal segments win over parameters: sort so the most literal
	// route is tried first.
	sort.Slice(d.routes, func(i, j int) bool { return literals(d.routes[i]) > literals(d.routes[j]) })
	d.responses = raw.Components.Responses
	return d, nil
}

func literals(r docRoute) int {
	n := 0
	for _, s := range r.segs {
		if !strings.HasPrefix(s, "{") {
			n += 2
		}
	}
	if r.wildcard {
		n-- // /files/{path} after /files
	}
	return n
}

func asList(v any) []any { l, _ := v.([]any); return l }

// match finds the route that serves path (without the query).
func (d *Document) match(path string) (*docRoute, bool) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := range d.routes {
		r := &d.routes[i]
		if matchSegs(r, segs) {
			return r, true
		}
	}
	return nil, false
}

func matchSegs(r *docRoute, segs []string) bool {
	if r.wildcard {
		// /v1/workspaces/{id}/files/{path}: the path may be empty or hold
		// slashes (files//etc/hosts).
		if len(segs) < len(r.segs) {
			return false
		}
	} else if len(segs) != len(r.segs) {
		return false
	}
	for i, s := range r.segs {
		if strings.HasPrefix(s, "{") {
			if i == len(r.segs)-1 && r.wildcard {
				return true
			}
			if segs[i] == "" {
				return false
			}
			continue
		}
		if s != segs[i] {
			return false
		}
	}
	return true
}

// schemaFor returns the schema of an answer to method path with status in
// media type mt, and how to read it: "json", "ndjson", "sse" (with the
// events' schemas), or "" for a body not checked (bytes, text).
func (d *Document) schemaFor(method, path string, status int, contentType string) (kind string, s map[string]any, events map[string]map[string]any, err error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	r, ok := d.match(path)
	var op map[string]any
	if ok {
		op = r.ops[method]
	}
	if op == nil {
		// An unknown route or method is answered by the router (404, 405)
		// in the envelope; a route a test adds (a panic) by the envelope
		// too. TestOpenAPIDescribesEveryRoute holds the served routes to
		// the document.
		if status >= 400 {
			return "json", d.errRef, nil, nil
		}
		return "", nil, nil, fmt.Errorf("%s %s: %d: the route is not in the document", method, path, status)
	}
	responses, _ := op["responses"].(map[string]any)
	resp, ok := responses[strconv.Itoa(status)].(map[string]any)
	if !ok {
		if resp, ok = responses["default"].(map[string]any); !ok || status < 400 {
			return "", nil, nil, fmt.Errorf("%s %s (%s): status %d is not in the document", method, path, r.path, status)
		}
	}
	resp = d.deref(resp)
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		return "none", nil, nil, nil
	}
	m, ok := content[mt].(map[string]any)
	if !ok {
		return "", nil, nil, fmt.Errorf("%s %s (%s): %d: media type %q is not in the document", method, path, r.path, status, mt)
	}
	s, _ = m["schema"].(map[string]any)
	switch mt {
	case "application/json":
		return "json", s, nil, nil
	case "application/x-ndjson":
		return "ndjson", s, nil, nil
	case "text/event-stream":
		events = map[string]map[string]any{}
		for _, e := range asList(m["x-sse-events"]) {
			em, _ := e.(map[string]any)
			name, _ := em["event"].(string)
			events[name], _ = em["data"].(map[string]any)
		}
		return "sse", nil, events, nil
	}
	return "", nil, nil, nil
}

// deref follows a response's $ref into components/responses.
func (d *Document) deref(resp map[string]any) map[string]any {
	if ref, ok := resp["$ref"].(string); ok {
		if name, found := strings.CutPrefix(ref, "#/components/responses/"); found {
			if r, ok := d.responses[name].(map[string]any); ok {
				return r
			}
		}
	}
	return resp
}

// CheckJSON validates one JSON value (body) against schema s.
func (d *Document) checkJSON(body []byte, s map[string]any, at string) []string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []string{fmt.Sprintf("%s: not JSON: %v", at, err)}
	}
	return d.v.validate(v, s, at)
}
