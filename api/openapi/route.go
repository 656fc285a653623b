package openapi

import (
	"net/http"
	"reflect"
	"sort"
	"strings"
)

// Media types the routes answer with besides JSON.
const (
	MediaJSON   = "application/json"
	MediaNDJSON = "application/x-ndjson"
	MediaSSE    = "text/event-stream"
	MediaBytes  = "application/octet-stream"
	MediaXML    = "application/xml"
)

// Route describes one /v1 route as gin serves it (Method and Path exactly
// as engine.Routes() lists them: /v1/workspaces/:id/files/*path).
type Route struct {
	Method, Path string
	Summary      string
	// Public routes need no API key.
	Public bool
	Query  []Param
	Header []Param
	Body   *Body
	// Responses are the answers that are not errors; Errors the statuses
	// that answer with the error envelope beyond those every route has
	// (errorStatuses).
	Responses []Response
	Errors    []int
	// WebSocket says the route upgrades: its messages each way.
	WebSocket *WebSocket
	// Desc is the operation's description, when its summary is not enough.
	Desc string
}

// Param is a query or header parameter (path parameters come from the path).
type Param struct {
	Name, Description string
	Type              reflect.Type // default string
	Required          bool
}

// Body is a request body: JSON of Type unless Media says otherwise.
type Body struct {
	Type     reflect.Type
	Media    []string // default MediaJSON
	Optional bool
	// Schema replaces Type's schema (a oneOf of several types).
	Schema func(*schemas) Schema
	Desc   string
}

// Response is one non-error answer: a status and its body in one or more
// media types.
type Response struct {
	Status  int
	Desc    string
	Content []Content
	Headers []string // names of response headers (Location, ...)
}

// Content is one media type of a response: Type (JSON, or one NDJSON line),
// Raw (bytes or text), or SSE events by name.
type Content struct {
	Media  string
	Type   reflect.Type
	Schema func(*schemas) Schema
	Events []Event
}

// Event is one named SSE event and the JSON of its data line.
type Event struct {
	Name string
	Type reflect.Type
	Desc string
}

// WebSocket describes the messages of an upgraded connection.
type WebSocket struct {
	Desc           string
	Client, Server reflect.Type
}

// route starts a Route; the builder methods below fill it.
func route(method, path, summary string) *Route {
	return &Route{Method: method, Path: "/v1" + path, Summary: summary}
}

func (r *Route) public() *Route { r.Public = true; return r }

func (r *Route) query(name string, t reflect.Type, desc string) *Route {
	r.Query = append(r.Query, Param{Name: name, Type: t, Description: desc})
	return r
}

func (r *Route) header(name, desc string) *Route {
	r.Header = append(r.Header, Param{Name: name, Description: desc})
	return r
}

func (r *Route) body(t reflect.Type) *Route { r.Body = &Body{Type: t}; return r }

func (r *Route) optionalBody(t reflect.Type) *Route {
	r.Body = &Body{Type: t, Optional: true}
	return r
}

// ok adds a JSON answer of type t (nil: no body) with status.
func (r *Route) ok(status int, t reflect.Type, desc string, headers ...string) *Route {
	resp := Response{Status: status, Desc: desc, Headers: headers}
	if t != nil {
		resp.Content = []Content{{Media: MediaJSON, Type: t}}
	}
	r.Responses = append(r.Responses, resp)
	return r
}

// also adds another media type to the last answer.
func (r *Route) also(c Content) *Route {
	last := &r.Responses[len(r.Responses)-1]
	last.Content = append(last.Content, c)
	return r
}

// sse adds an SSE stream to the last answer.
func (r *Route) sse(events ...Event) *Route {
	return r.also(Content{Media: MediaSSE, Events: events})
}

func (r *Route) errors(statuses ...int) *Route { r.Errors = append(r.Errors, statuses...); return r }

// pathParams are the route's path parameters in order (:id, *path).
func (r *Route) pathParams() []string {
	var out []string
	for _, seg := range strings.Split(r.Path, "/") {
		if strings.HasPrefix(seg, ":") || strings.HasPrefix(seg, "*") {
			out = append(out, seg[1:])
		}
	}
	return out
}

// OpenAPIPath is the route's path as OpenAPI writes it: {id}, {path}.
func (r *Route) OpenAPIPath() string { return OpenAPIPath(r.Path) }

// OpenAPIPath turns a gin path into an OpenAPI one.
func OpenAPIPath(ginPath string) string {
	segs := strings.Split(ginPath, "/")
	for i, seg := range segs {
		if strings.HasPrefix(seg, ":") || strings.HasPrefix(seg, "*") {
			segs[i] = "{" + seg[1:] + "}"
		}
	}
	return strings.Join(segs, "/")
}

// errorStatuses are every status r answers with the error envelope: those
// every authenticated route has, those its shape implies, and its own.
func (r *Route) errorStatuses() []int {
	set := map[int]bool{http.StatusInternalServerError: true}
	for _, s := range r.Errors {
		set[s] = true
	}
	if !r.Public {
		// No, a bad or a revoked key; a role that may not; a throttled
		// address.
		set[http.StatusUnauthorized], set[http.StatusForbidden], set[http.StatusTooManyRequests] = true, true, true
		if r.Method != http.MethodGet {
			// The audit log could not take the entry.
			set[http.StatusServiceUnavailable] = true
		}
	}
	if len(r.pathParams()) > 0 {
		set[http.StatusNotFound] = true
	}
	if r.Body != nil || len(r.Query) > 0 {
		set[http.StatusBadRequest] = true
	}
	if r.Body != nil {
		set[http.StatusRequestEntityTooLarge] = true
	}
	out := make([]int, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}
