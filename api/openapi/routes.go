package openapi

import (
	"net/http"
	"reflect"

	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/sessiontool"
	"github.com/primerhq/primer/wire"
)

// Statuses named in the table, short.
const (
	s200 = http.StatusOK
	s201 = http.StatusCreated
	s202 = http.StatusAccepted
	s204 = http.StatusNoContent
	s409 = http.StatusConflict
	s413 = http.StatusRequestEntityTooLarge
	s503 = http.StatusServiceUnavailable
	s504 = http.StatusGatewayTimeout
)

var (
	str    = typeOf[string]()
	num    = typeOf[int]()
	flag   = typeOf[bool]()
	noBody reflect.Type
)

// list is wire.Items[T], the {"items":[...]} of every list.
func list[T any]() reflect.Type { return typeOf[wire.Items[T]]() }

// ExecExitLine is the last line of a streamed exec: {"exit": {...}}.
type ExecExitLine struct {
	Exit wire.ExecExit `json:"exit"`
}

// Runtime-touching routes answer 409 when the workspace is not running,
// 503 when its runtime cannot be reached and 504 when it does not answer.
var runtimeErrors = []int{s409, s503, s504}

// workspaceEvents are the SSE events of a workspace's stream and the
// tenant's: each event's name is its type, its data the event.
func workspaceEvents() []Event {
	ev := typeOf[wire.Event]()
	var out []Event
	for _, name := range []string{
		wire.EventProvisioned, wire.EventProvisionFailed, wire.EventDestroyed, wire.EventPhaseChanged,
		wire.EventRecoveryStarted, wire.EventRecovered, wire.EventRecoveryFailed, wire.EventEscalated,
		wire.EventHistoryRewritten, wire.EventSandboxMissing, wire.EventLeased, wire.EventReturned,
		wire.EventExpired, wire.EventLeaseExpired,
	} {
		out = append(out, Event{Name: name, Type: ev})
	}
	return append(out, Event{Name: "error", Type: typeOf[wire.ErrorEnvelope](), Desc: "A store failure; the stream ends."})
}

// Routes is every /v1 route, in the order api.routes registers them.
func Routes() []*Route {
	follow := "true (or Accept: text/event-stream): follow as Server-Sent Events"
	routes := []*Route{
		route("GET", "/openapi.json", "This document").public().
			ok(s200, nil, "The OpenAPI 3.1 document of /v1.").also(Content{Media: MediaJSON, Schema: func(*schemas) Schema { return Schema{"type": "object"} }}),

		route("POST", "/tenants", "Create a tenant (admin)").body(typeOf[wire.TenantSpec]()).
			ok(s201, typeOf[wire.Tenant](), "The tenant.", "Location").errors(s409),
		route("GET", "/tenants", "List tenants").ok(s200, list[wire.Tenant](), "The tenants the caller may see, by id."),
		route("GET", "/tenants/:id", "Get a tenant with its usage").ok(s200, typeOf[wire.TenantInfo](), "The tenant."),
		route("PUT", "/tenants/:id", "Replace a tenant's description and quota (admin)").body(typeOf[wire.TenantSpec]()).
			ok(s200, typeOf[wire.Tenant](), "The tenant."),
		route("DELETE", "/tenants/:id", "Delete an empty tenant (admin)").ok(s204, noBody, "Deleted.").errors(s409),

		route("POST", "/apikeys", "Create an API key").body(typeOf[wire.CreateAPIKeyRequest]()).
			ok(s201, typeOf[wire.CreatedAPIKey](), "The key row and the key, shown this once.", "Location"),
		route("GET", "/apikeys", "List API keys").
			query("tenant", str, "An admin's filter by tenant.").query("tree", str, "1: the keys as a tree, each with its depth.").
			ok(s200, nil, "The keys, oldest first.").
			also(Content{Media: MediaJSON, Schema: func(g *schemas) Schema {
				return Schema{"anyOf": []any{g.of(list[wire.APIKey]()), g.of(list[wire.APIKeyNode]())}}
			}}),
		route("GET", "/apikeys/:id", "Get an API key").ok(s200, typeOf[wire.APIKey](), "The key (never its secret)."),
		route("POST", "/apikeys/:id/revoke", "Revoke a key and its subtree").ok(s200, typeOf[wire.RevokedAPIKey](), "The revoked key."),
		route("DELETE", "/apikeys/:id", "Revoke a key and its subtree").ok(s200, typeOf[wire.RevokedAPIKey](), "The revoked key."),

		route("GET", "/audit", "Read the audit log").
			query("tenant", str, "An admin's filter by tenant.").query("after", num, "Entries after this id, oldest first.").
			query("limit", num, "1 to 1000 (default 100).").
			ok(s200, list[wire.AuditEntry](), "The entries."),

		route("POST", "/providers", "Create a provider").body(typeOf[wire.ProviderSpec]()).
			ok(s201, typeOf[wire.Provider](), "The provider.", "Location").errors(s409),
		route("GET", "/providers", "List providers").ok(s200, list[wire.Provider](), "The providers, by id."),
		route("GET", "/providers/:id", "Get a provider").ok(s200, typeOf[wire.Provider](), "The provider."),
		route("PUT", "/providers/:id", "Replace a provider").body(typeOf[wire.ProviderSpec]()).
			ok(s200, typeOf[wire.Provider](), "The provider.").errors(s409),
		route("DELETE", "/providers/:id", "Delete a provider").ok(s204, noBody, "Deleted.").errors(s409),

		route("POST", "/templates", "Create a template").body(typeOf[wire.TemplateSpec]()).
			ok(s201, typeOf[wire.Template](), "The template (env values redacted).", "Location").errors(s409, http.StatusNotFound),
		route("GET", "/templates", "List templates").query("provider_id", str, "Only this provider's.").
			ok(s200, list[wire.Template](), "The templates, by id."),
		route("GET", "/templates/:id", "Get a template").ok(s200, typeOf[wire.Template](), "The template."),
		route("PUT", "/templates/:id", "Replace a template").body(typeOf[wire.TemplateSpec]()).
			ok(s200, typeOf[wire.Template](), "The template.").errors(s409),
		route("DELETE", "/templates/:id", "Delete a template").ok(s204, noBody, "Deleted.").errors(s409),

		route("POST", "/llm-providers", "Create a model provider").body(typeOf[wire.LLMProviderSpec]()).
			ok(s201, typeOf[wire.LLMProviderView](), "The provider (api_key redacted).", "Location").errors(s409),
		route("GET", "/llm-providers", "List model providers").ok(s200, list[wire.LLMProviderView](), "The providers."),
		route("GET", "/llm-providers/:id", "Get a model provider").ok(s200, typeOf[wire.LLMProviderView](), "The provider."),
		route("PUT", "/llm-providers/:id", "Replace a model provider").body(typeOf[wire.LLMProviderSpec]()).
			ok(s200, typeOf[wire.LLMProviderView](), "The provider."),
		route("DELETE", "/llm-providers/:id", "Delete a model provider").ok(s204, noBody, "Deleted.").errors(s409),

		route("POST", "/agents", "Create an agent").body(typeOf[wire.AgentSpec]()).
			ok(s201, typeOf[wire.Agent](), "The agent.", "Location").errors(s409),
		route("GET", "/agents", "List agents").ok(s200, list[wire.Agent](), "The agents."),
		route("GET", "/agents/:id", "Get an agent").ok(s200, typeOf[wire.Agent](), "The agent."),
		route("PUT", "/agents/:id", "Replace an agent").body(typeOf[wire.AgentSpec]()).
			ok(s200, typeOf[wire.Agent](), "The agent."),
		route("DELETE", "/agents/:id", "Delete an agent").ok(s204, noBody, "Deleted.").errors(s409),

		route("POST", "/workspaces", "Create a workspace (warm from a pool, or cold)").body(typeOf[wire.CreateWorkspaceRequest]()).
			ok(s201, typeOf[wire.Created](), "The workspace and where it came from.", "Location").errors(http.StatusNotFound, s409),
		route("GET", "/workspaces", "List workspaces").
			query("phase", str, "pending, running, paused, failed, escalated or terminating.").query("template_id", str, "").
			query("provider_id", str, "").query("backend", str, "").query("pool_id", str, "").
			query("pool_state", str, "idle, leased or returning.").query("limit", num, "At most this many (0: all).").
			ok(s200, list[wire.Workspace](), "The workspaces, newest first."),
		route("GET", "/workspaces/:id", "Get a workspace").ok(s200, typeOf[wire.Workspace](), "The workspace."),
		route("DELETE", "/workspaces/:id", "Delete a workspace").ok(s202, typeOf[wire.Workspace](), "The workspace, terminating."),
		route("GET", "/workspaces/:id/files", "List the workspace root").query("stat", flag, "true: the root's FileInfo.").
			ok(s200, nil, "The root's entries, or with stat=true its FileInfo.").
			also(Content{Media: MediaJSON, Schema: listingOrInfo}).errors(runtimeErrors...),
		route("GET", "/workspaces/:id/files/*path", "Read a file or list a directory").
			query("stat", flag, "true: the path's FileInfo, not its content.").
			ok(s200, nil, "A file's bytes (X-Primer-File-Mode, Last-Modified), a directory's listing, or with stat=true the FileInfo.", "X-Primer-File-Mode", "Last-Modified").
			also(Content{Media: MediaBytes, Schema: binary}).
			also(Content{Media: MediaJSON, Schema: listingOrInfo}).errors(append(runtimeErrors, s413)...),
		route("PUT", "/workspaces/:id/files/*path", "Write a file (or make a directory)").
			query("mkdir", flag, "true: make a directory (and its parents).").query("user", str, "The sandbox user that owns what the request creates.").
			header("X-Primer-File-Mode", "The permission bits in octal (default 0644).").
			bytesBody().ok(s200, typeOf[protocol.FileInfo](), "The written file.").errors(append(runtimeErrors, http.StatusTooManyRequests)...),
		route("DELETE", "/workspaces/:id/files/*path", "Delete a file or directory").
			query("recursive", flag, "true: a non-empty directory too.").ok(s204, noBody, "Deleted.").errors(runtimeErrors...),
		route("POST", "/workspaces/:id/exec", "Run a command").body(typeOf[wire.ExecSpec]()).
			ok(s200, typeOf[wire.ExecResponse](), "Its exit and output; with stream (or Accept: application/x-ndjson) one JSON line per chunk, then the exit line (or an error envelope).").
			also(Content{Media: MediaNDJSON, Schema: func(g *schemas) Schema {
				return Schema{"anyOf": []any{g.of(typeOf[wire.ExecChunk]()), g.of(typeOf[ExecExitLine]()), g.of(typeOf[wire.ErrorEnvelope]())}}
			}}).errors(runtimeErrors...),
		route("POST", "/workspaces/:id/processes", "Start a background process").body(typeOf[wire.ProcessSpec]()).
			ok(s201, typeOf[wire.Process](), "The process.", "Location").errors(runtimeErrors...),
		route("GET", "/workspaces/:id/processes", "List processes").ok(s200, typeOf[wire.ProcessList](), "Running processes and the last that ended.").errors(runtimeErrors...),
		route("GET", "/workspaces/:id/processes/:pid", "Get a process").ok(s200, typeOf[wire.Process](), "The process.").errors(runtimeErrors...),
		attach(route("GET", "/workspaces/:id/processes/:pid/attach", "Attach to a process (WebSocket)")).
			query("replay", flag, "true: first the last 16 KiB of output the runtime kept.").errors(runtimeErrors...),
		route("POST", "/workspaces/:id/processes/:pid/input", "Write to a process's stdin").body(typeOf[wire.ProcessInput]()).
			ok(s204, noBody, "Written.").errors(runtimeErrors...),
		route("POST", "/workspaces/:id/processes/:pid/signal", "Signal a process").body(typeOf[wire.ProcessSignal]()).
			ok(s204, noBody, "Sent.").errors(runtimeErrors...),
		route("POST", "/workspaces/:id/processes/:pid/resize", "Resize a process's terminal").body(typeOf[wire.TerminalSize]()).
			ok(s204, noBody, "Resized.").errors(runtimeErrors...),
		route("POST", "/workspaces/:id/processes/:pid/close-stdin", "Close a process's stdin").optionalBody(typeOf[struct{}]()).
			ok(s204, noBody, "Closed.").errors(runtimeErrors...),
		route("GET", "/workspaces/:id/events", "A workspace's events").
			query("after", num, "Events after this id.").query("follow", str, follow).
			header("Last-Event-ID", "Resume a stream after this id (wins over after).").
			ok(s200, list[wire.Event](), "The stored events, oldest first; following, an SSE stream that ends after workspace.destroyed.").
			sse(workspaceEvents()...).errors(http.StatusTooManyRequests),
		route("GET", "/events", "The tenant's events across its workspaces").
			query("tenant", str, "An admin's filter by tenant.").query("after", num, "Events after this id.").
			query("limit", num, "1 to 1000 (default 256).").query("follow", str, follow).
			header("Last-Event-ID", "Resume after this id (wins over after).").
			ok(s200, typeOf[wire.TenantEventPage](), "A page of events and the newest id; following, an SSE stream that never ends on its own.").
			sse(workspaceEvents()...),
		route("POST", "/workspaces/:id/return", "Return a leased workspace to its pool").ok(s202, typeOf[wire.Workspace](), "The workspace, returning.").errors(s409),
		route("POST", "/workspaces/:id/recover", "Recover a failed or escalated workspace now").ok(s202, typeOf[wire.Workspace](), "The workspace.").errors(s409),
		route("POST", "/workspaces/:id/extend", "Move a workspace's deadlines").body(typeOf[wire.ExtendRequest]()).
			ok(s200, typeOf[wire.Workspace](), "The workspace with its new deadlines.").errors(s409),
		route("POST", "/workspaces/:id/snapshots", "Snapshot a workspace").optionalBody(typeOf[wire.CreateSnapshotRequest]()).
			ok(s202, typeOf[wire.Snapshot](), "The snapshot, creating.", "Location").errors(s409),
		route("POST", "/workspaces/:id/fork", "Fork a workspace into count new ones").body(typeOf[wire.ForkRequest]()).
			ok(s201, typeOf[wire.Forked](), "The implicit snapshot and the new workspaces, pending.").errors(s409),
		route("POST", "/workspaces/:id/pause", "Pause a running workspace").optionalBody(typeOf[wire.PauseRequest]()).
			ok(s202, typeOf[wire.Workspace](), "The workspace, as it is when the pause is asked for.").errors(s409),
		route("POST", "/workspaces/:id/resume", "Resume a paused workspace").
			ok(s202, typeOf[wire.Workspace](), "The workspace, as it is when the resume is asked for.").errors(s409),
		route("GET", "/snapshots", "List snapshots").
			query("workspace_id", str, "Only this workspace's.").query("phase", str, "creating, ready, failed or deleting.").
			ok(s200, list[wire.Snapshot](), "The snapshots, newest first."),
		route("GET", "/snapshots/:id", "Get a snapshot").ok(s200, typeOf[wire.Snapshot](), "The snapshot."),
		route("DELETE", "/snapshots/:id", "Delete a snapshot").ok(s202, typeOf[wire.Snapshot](), "The snapshot, deleting."),

		route("POST", "/pools", "Create a warm pool").body(typeOf[wire.PoolSpec]()).
			ok(s201, typeOf[wire.PoolView](), "The pool.", "Location").errors(s409),
		route("GET", "/pools", "List pools").query("template_id", str, "Only this template's.").ok(s200, list[wire.PoolView](), "The pools, by id."),
		route("GET", "/pools/:id", "Get a pool").ok(s200, typeOf[wire.PoolView](), "The pool with its counts."),
		route("PUT", "/pools/:id", "Replace a pool").body(typeOf[wire.PoolSpec]()).ok(s200, typeOf[wire.PoolView](), "The pool."),
		route("DELETE", "/pools/:id", "Delete a pool").ok(s202, typeOf[wire.PoolView](), "The pool as it was."),
		route("POST", "/pools/:id/lease", "Lease a workspace").optionalBody(typeOf[wire.LeaseRequest]()).
			ok(s200, typeOf[wire.Lease](), "A warm lease: an idle running member.").
			ok(s201, typeOf[wire.Lease](), "A cold lease: a new workspace, pending.", "Location").errors(s409),

		route("POST", "/suites", "Create an eval suite").suiteBody().
			ok(s201, typeOf[wire.SuiteView](), "The suite.", "Location").errors(s409),
		route("GET", "/suites", "List suites").ok(s200, list[wire.Suite](), "The suites, by id."),
		route("GET", "/suites/:id", "Get a suite").ok(s200, typeOf[wire.SuiteView](), "The suite with its schedule's status."),
		route("PUT", "/suites/:id", "Replace a suite and its cases").suiteBody().ok(s200, typeOf[wire.SuiteView](), "The suite."),
		route("DELETE", "/suites/:id", "Delete a suite").ok(s204, noBody, "Deleted."),
		route("GET", "/suites/:id/cases", "A suite's cases").query("format", str, "json (default) or jsonl.").
			ok(s200, list[eval.Case](), "The cases in order (env values redacted).").
			also(Content{Media: MediaNDJSON, Type: typeOf[eval.Case]()}),
		route("POST", "/suites/:id/schedule/pause", "Pause a suite's schedule").ok(s200, typeOf[wire.SuiteView](), "The suite.").errors(s409),
		route("POST", "/suites/:id/schedule/resume", "Resume a suite's schedule").ok(s200, typeOf[wire.SuiteView](), "The suite.").errors(s409),
		route("POST", "/suites/:id/schedule/trigger", "Start a scheduled run now").ok(s202, typeOf[wire.SuiteView](), "The suite.").errors(s409),
		route("POST", "/suites/:id/runs", "Run a suite").optionalBody(typeOf[wire.RunRequest]()).
			ok(s201, typeOf[wire.RunView](), "The run.", "Location"),

		route("GET", "/runs", "List runs").query("suite_id", str, "").
			query("status", str, "pending, running, succeeded, canceled or failed.").query("limit", num, "At most this many (0: all).").
			ok(s200, list[wire.Run](), "The runs, newest first."),
		route("GET", "/runs/:id", "Get a run with its progress").ok(s200, typeOf[wire.RunView](), "The run."),
		route("GET", "/runs/:id/results", "A run's case results").query("format", str, "json (default), jsonl or junit.").
			ok(s200, list[wire.CaseResult](), "The results in case order.").
			also(Content{Media: MediaNDJSON, Type: typeOf[wire.CaseResult]()}).
			also(Content{Media: MediaXML, Schema: func(*schemas) Schema { return Schema{"type": "string"} }}),
		route("GET", "/runs/:id/compare", "Compare a run with another").query("base", str, "The run to compare with (required).").
			ok(s200, typeOf[eval.Comparison](), "Regressions, fixes, new and missing cases, score changes."),
		route("POST", "/runs/:id/cancel", "Cancel a run").ok(s202, typeOf[wire.RunView](), "The run.").errors(s409),
		route("GET", "/runs/:id/events", "Follow a run's progress (SSE)").
			ok(s200, nil, "progress at once and on every change, then finished with the run.").
			sse(Event{Name: "progress", Type: typeOf[wire.Progress]()}, Event{Name: "finished", Type: typeOf[wire.RunView]()},
				Event{Name: "error", Type: typeOf[wire.ErrorEnvelope](), Desc: "A store failure; the stream ends."}),

		route("POST", "/sessions", "Open a session on a workspace").body(typeOf[wire.CreateSessionRequest]()).
			ok(s201, typeOf[wire.Session](), "The session.", "Location").errors(s409),
		route("GET", "/sessions", "List sessions").query("workspace_id", str, "").query("status", str, "open or ended.").
			ok(s200, list[wire.Session](), "The sessions, newest first."),
		route("GET", "/sessions/:id", "Get a session").ok(s200, typeOf[wire.Session](), "The session."),
		route("POST", "/sessions/:id/end", "End a session").optionalBody(typeOf[wire.EndSessionRequest]()).
			ok(s200, typeOf[wire.Session](), "The session, ended."),
		toolRoute(route("POST", "/sessions/:id/tools/:tool", "Call a session tool (recorded as a commit)")),
		route("GET", "/sessions/:id/history", "The session's commits").query("include_resumed", flag, "true: also the lost sessions it resumed.").
			ok(s200, typeOf[wire.History](), "The commits, newest first.").errors(runtimeErrors...),
		route("GET", "/sessions/:id/diff", "A diff of the workspace's history").
			query("commit", str, "A commit against its parent.").query("from", str, "").query("to", str, "").
			ok(s200, typeOf[wire.Diff](), "The diff.").errors(runtimeErrors...),
		route("POST", "/sessions/:id/restore", "Restore the workspace's files to a commit").body(typeOf[wire.RestoreRequest]()).
			ok(s200, typeOf[wire.Restore](), "The new commit and what changed.").errors(runtimeErrors...),
		route("POST", "/sessions/:id/run", "Run an agent in the session").body(typeOf[wire.RunAgentRequest]()).
			ok(s202, typeOf[wire.SessionRun](), "The agent run, started.").errors(s409),
		route("POST", "/sessions/:id/cancel", "Cancel the session's agent run").ok(s202, typeOf[wire.SessionCancel](), "Cancel requested.").errors(s409),
		route("GET", "/sessions/:id/transcript", "The session's transcript").query("follow", str, follow).
			header("Last-Event-ID", "Resume a stream after this entry's seq.").
			ok(s200, typeOf[wire.Transcript](), "The transcript; following, each final entry as an event named by its role, then end with the run.").
			sse(Event{Name: wire.RoleUser, Type: typeOf[wire.TranscriptEntry]()}, Event{Name: wire.RoleAssistant, Type: typeOf[wire.TranscriptEntry]()},
				Event{Name: wire.RoleTool, Type: typeOf[wire.TranscriptEntry]()}, Event{Name: "end", Type: typeOf[wire.SessionRun]()},
				Event{Name: "error", Type: typeOf[wire.ErrorEnvelope](), Desc: "A store failure; the stream ends."}).errors(s409),
	}
	return append(routes, portRoutes()...)
}

// listingOrInfo is a directory's listing or, with stat=true, a FileInfo.
func listingOrInfo(g *schemas) Schema {
	return Schema{"anyOf": []any{g.of(typeOf[wire.DirListing]()), g.of(typeOf[protocol.FileInfo]())}}
}

// binary is the schema of raw bytes.
func binary(*schemas) Schema { return Schema{"type": "string", "format": "binary"} }

// bytesBody makes the body the file's raw bytes.
func (r *Route) bytesBody() *Route {
	r.Body = &Body{Media: []string{MediaBytes}, Schema: binary, Desc: "The file's bytes."}
	return r
}

// suiteBody is a suite document: JSON, or JSONL (the spec, then a case a line).
func (r *Route) suiteBody() *Route {
	r.Body = &Body{Type: typeOf[eval.SuiteSpec](), Media: []string{MediaJSON, MediaNDJSON, "application/jsonl"},
		Desc: "The suite's spec with its cases; as JSONL the spec on the first line, then one case a line."}
	return r
}

// portRoutes describe the port proxy, one route per method it forwards.
func portRoutes() []*Route {
	var out []*Route
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		r := route(m, "/workspaces/:id/ports/:port/*path", "Send a request to a port inside the workspace")
		r.Desc = "A reverse proxy to 127.0.0.1:{port} inside the workspace, through its runtime connection " +
			"(so under egress deny_all too): HTTP/1.1 with bodies streamed both ways, SSE flushed as it comes, " +
			"and upgrades (WebSocket) on GET. The program sees Host 127.0.0.1:{port}, X-Forwarded-For, -Host, " +
			"-Proto and X-Forwarded-Prefix (/v1/workspaces/{id}/ports/{port}); the Authorization header and the " +
			"console's cookie are removed. Needs a member or admin key whatever the method. Nothing listening " +
			"on the port is 502 (bad_gateway), a runtime from before tunnels 501 (not_implemented)."
		r.Responses = append(r.Responses, Response{Status: http.StatusOK,
			Desc:    "Whatever the program answers: its status, headers and body, passed through.",
			Content: []Content{{Media: "*/*", Schema: binary}}})
		if m == http.MethodGet {
			r.Responses = append(r.Responses, Response{Status: http.StatusSwitchingProtocols, Desc: "Upgraded by the program (WebSocket); bytes pass through both ways."})
		}
		if m == http.MethodPost {
			r.Desc += " One path is not forwarded: POST .../ports/{port}/preview (body optional: {\"ttl\"}) makes " +
				"a preview link to the port, as POST /v1/workspaces/{id}/previews does, and answers 201 with the " +
				"link (PreviewLink); a program's own POST /preview is reached through a link or a port-forward."
			r.Responses = append(r.Responses, Response{Status: http.StatusCreated,
				Desc:    "The program's 201, passed through; or, for the path preview, the link made (PreviewLink, its url shown this once).",
				Content: []Content{{Media: MediaJSON, Type: typeOf[wire.PreviewLink]()}, {Media: "*/*", Schema: binary}}})
		}
		out = append(out, r.errors(http.StatusBadRequest, s409, http.StatusNotImplemented, http.StatusBadGateway, s503, s504))
	}
	fwd := route("GET", "/workspaces/:id/port-forward/:port", "Connect to a port inside the workspace (WebSocket)")
	fwd.Desc = "A WebSocket (send Connection: Upgrade, Upgrade: websocket) carrying one TCP connection to " +
		"127.0.0.1:{port} inside the workspace, through its runtime connection: binary messages are the bytes " +
		"each way; the text message \"eof\" says its sender will send no more (a half-close); a close frame " +
		"ends it. primectl workspace port-forward opens one per local connection. Refusals come before the " +
		"upgrade, as for the port proxy: nothing listening is 502, a runtime from before tunnels 501."
	fwd.Responses = append(fwd.Responses, Response{Status: http.StatusSwitchingProtocols, Desc: "Upgraded to a WebSocket."})
	out = append(out, fwd.errors(http.StatusBadRequest, s409, http.StatusNotImplemented, http.StatusBadGateway, s503, s504))
	return append(out, previewRoutes()...)
}

// previewRoutes describe preview links: signed, expiring, revocable URLs
// a browser opens with no key.
func previewRoutes() []*Route {
	create := route("POST", "/workspaces/:id/previews", "Make a preview link to a port inside the workspace").
		body(typeOf[wire.PreviewRequest]()).
		ok(s201, typeOf[wire.PreviewLink](), "The link; its url is shown this once.").errors(http.StatusBadRequest)
	create.Desc = "A signed link that opens 127.0.0.1:{port} inside the workspace in a browser with no API key, " +
		"through the workspace's runtime connection, until ttl (default 1h, at most 168h; a duration or seconds) " +
		"passes, it is revoked, or the workspace is deleted or returned to its pool; a dead link answers 403 " +
		"saying why. Without a preview host the url is /preview/{token}/ on this host, served in a sandboxed " +
		"(opaque) origin; with one (primer serve --preview-url) it is {port}-{id}.{domain}, its own origin. " +
		"Needs a member or admin key."
	return []*Route{
		route("GET", "/workspaces/:id/ports", "List the ports programs listen on inside the workspace").
			ok(s200, list[protocol.ListeningPort](), "TCP ports listening on loopback or any address, by port, the runtime's own left out.").
			errors(s409, http.StatusNotImplemented, s503, s504),
		create,
		route("GET", "/workspaces/:id/previews", "List a workspace's live preview links").
			ok(s200, list[wire.Preview](), "Links neither revoked nor expired, newest first, without their urls."),
		route("DELETE", "/workspaces/:id/previews/:preview", "Revoke a preview link").
			ok(s200, typeOf[wire.Preview](), "The link, revoked; it answers 403 from now on."),
	}
}

// attach describes the process attach WebSocket.
func attach(r *Route) *Route {
	r.WebSocket = &WebSocket{
		Desc:   "JSON text messages; data is base64. The server sends output messages, then one exit and closes; error answers a refused message. The client sends input, resize, signal and close_stdin.",
		Client: typeOf[wire.AttachMessage](), Server: typeOf[wire.AttachMessage](),
	}
	r.Responses = append(r.Responses, Response{Status: http.StatusSwitchingProtocols, Desc: "Upgraded to a WebSocket."})
	return r.errors(http.StatusBadRequest)
}

// toolRoute describes POST /v1/sessions/{id}/tools/{tool}: the body and
// answer depend on the tool.
func toolRoute(r *Route) *Route {
	r.Body = &Body{Schema: func(g *schemas) Schema {
		return Schema{"anyOf": []any{g.of(typeOf[sessiontool.ExecArgs]()), g.of(typeOf[sessiontool.WriteArgs]()), g.of(typeOf[sessiontool.ReadArgs]())}}
	}, Desc: "workspace__exec: ExecArgs; workspace__write: WriteArgs; workspace__read: ReadArgs."}
	r.ok(s200, nil, "The tool's result with the commit that recorded it.").
		also(Content{Media: MediaJSON, Schema: func(g *schemas) Schema {
			return Schema{"anyOf": []any{g.of(typeOf[wire.ToolExecResult]()), g.of(typeOf[wire.ToolWriteResult]()), g.of(typeOf[wire.ToolReadResult]())}}
		}})
	return r.errors(append(runtimeErrors, s413, http.StatusTooManyRequests)...)
}
