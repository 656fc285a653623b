package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// DefaultTemplate is the template a create without templateID asks for,
// as E2B's default template is named base.
const DefaultTemplate = "base"

// defaultTimeout is a sandbox's life when a create names none (E2B's
// default; the SDKs always send one, 300 s unless told otherwise).
const defaultTimeout = 15 * time.Second

// clientID fills E2B's deprecated, required clientID field.
const clientID = "primer"

// newSandbox is the body of POST /sandboxes and /v2/sandboxes (E2B's
// NewSandbox). Fields Primer has no counterpart for are refused when they
// ask for something, never silently dropped.
type newSandbox struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"`
	AutoPause           *bool             `json:"autoPause"`
	AutoPauseMemory     *bool             `json:"autoPauseMemory"`
	AutoResume          json.RawMessage   `json:"autoResume"`
	Secure              *bool             `json:"secure"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Network             json.RawMessage   `json:"network"`
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	MCP                 json.RawMessage   `json:"mcp"`
	IAM                 json.RawMessage   `json:"iam"`
	VolumeMounts        []json.RawMessage `json:"volumeMounts"`
}

// sandbox is E2B's Sandbox: the answer of a create and a connect, the only
// answers that carry the envd access token.
type sandbox struct {
	TemplateID      string `json:"templateID"`
	SandboxID       string `json:"sandboxID"`
	ClientID        string `json:"clientID"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken"`
	// TrafficAccessToken and Domain are null: port traffic is not served
	// under E2B's names, and the SDK reaches envd at E2B_SANDBOX_URL.
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

// listedSandbox is E2B's ListedSandbox, and with the fields of
// sandboxDetail its SandboxDetail (GET /sandboxes/{id}).
type listedSandbox struct {
	TemplateID   string            `json:"templateID"`
	SandboxID    string            `json:"sandboxID"`
	ClientID     string            `json:"clientID"`
	StartedAt    time.Time         `json:"startedAt"`
	EndAt        time.Time         `json:"endAt"`
	CPUCount     int               `json:"cpuCount"`
	MemoryMB     int64             `json:"memoryMB"`
	DiskSizeMB   int64             `json:"diskSizeMB"`
	Metadata     map[string]string `json:"metadata"`
	State        string            `json:"state"`
	EnvdVersion  string            `json:"envdVersion"`
	VolumeMounts []struct{}        `json:"volumeMounts"`
}

// sandboxDetail is E2B's SandboxDetail. The access token is not in it:
// only a create and a connect hand it out.
type sandboxDetail struct {
	listedSandbox
	Domain    *string   `json:"domain"`
	Lifecycle lifecycle `json:"lifecycle"`
}

// lifecycle is E2B's SandboxLifecycle: what the timeout does (onTimeout
// "pause" for a sandbox made with autoPause, "kill" otherwise). Traffic
// never resumes a paused sandbox here: only a connect does.
type lifecycle struct {
	OnTimeout  string `json:"onTimeout"`
	AutoResume bool   `json:"autoResume"`
}

// lifecycleOf is w's lifecycle.
func lifecycleOf(w *wire.Workspace) lifecycle {
	if w.ExpireAction == wire.ExpireActionPause {
		return lifecycle{OnTimeout: "pause"}
	}
	return lifecycle{OnTimeout: "kill"}
}

// gone reports whether w counts as killed for E2B: a terminating
// workspace is on its way out, and E2B answers a killed sandbox 404.
func gone(w *wire.Workspace) bool { return w.Phase == wire.PhaseTerminating }

func notFound(id string) error {
	return errs.E(errs.NotFound, "sandbox %s: not found", id)
}

// listed is w in E2B's list shape.
func (d *Door) listed(w *wire.Workspace) listedSandbox {
	meta := w.Labels
	if meta == nil {
		meta = map[string]string{}
	}
	return listedSandbox{
		TemplateID: w.TemplateID, SandboxID: w.ID, ClientID: clientID,
		StartedAt: w.CreatedAt.UTC(), EndAt: endAt(w),
		CPUCount: int(math.Ceil(w.CPUCores)), MemoryMB: w.MemoryBytes >> 20,
		Metadata: meta, State: state(w), EnvdVersion: d.envdVersion(),
		VolumeMounts: []struct{}{},
	}
}

// endAt is when w will be deleted by its lifetime: the earliest of its
// deadlines (the zero time when it has none).
func endAt(w *wire.Workspace) time.Time {
	var end time.Time
	for _, t := range []*time.Time{w.ExpiresAt, w.LeaseExpiresAt, w.IdleDeadline} {
		if t != nil && (end.IsZero() || t.Before(end)) {
			end = *t
		}
	}
	return end.UTC()
}

// created is w in E2B's Sandbox shape, with its envd access token.
func (d *Door) created(ctx context.Context, w *wire.Workspace) (sandbox, error) {
	tok, err := d.accessToken(ctx, w.ID)
	if err != nil {
		return sandbox{}, err
	}
	return sandbox{TemplateID: w.TemplateID, SandboxID: w.ID, ClientID: clientID,
		EnvdVersion: d.envdVersion(), EnvdAccessToken: tok}, nil
}

// decode reads a JSON body into v; an empty body leaves v alone. Unknown
// fields are ignored, as E2B's API does: newer SDKs send more.
func decode(r *http.Request, v any) error {
	body := http.MaxBytesReader(nil, r.Body, 1<<20)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return errs.E(errs.Invalid, "request body: %v", err)
	}
	return nil
}

// unsupported refuses the create fields Primer cannot honour, naming them.
func (n *newSandbox) unsupported() error {
	switch {
	case len(n.MCP) > 0 && string(n.MCP) != "null":
		return errs.Field("mcp", "mcp: not supported")
	case len(n.VolumeMounts) > 0:
		return errs.Field("volumeMounts", "volumeMounts: not supported")
	case n.Timeout != nil && *n.Timeout < 0:
		return errs.Field("timeout", "timeout: %d is negative", *n.Timeout)
	}
	return nil
}

// createSandbox makes a workspace of the template (warm from a pool of it
// when one has an idle member: /v1's create takes it) and answers once it
// runs, as E2B's create does: the SDK uses the sandbox at once. The wait is
// bounded by the template's start timeout; a sandbox that does not come up
// is deleted, not left behind.
func (d *Door) createSandbox(w http.ResponseWriter, r *http.Request, api *client.Client) {
	var req newSandbox
	if err := decode(r, &req); err != nil {
		d.fail(w, err)
		return
	}
	if err := req.unsupported(); err != nil {
		d.fail(w, err)
		return
	}
	if req.TemplateID == "" {
		req.TemplateID = DefaultTemplate
	}
	ctx := r.Context()
	ttl := defaultTimeout
	if req.Timeout != nil && *req.Timeout > 0 {
		ttl = time.Duration(*req.Timeout) * time.Second
	}
	// allow_internet_access false narrows the template's egress (/v1's
	// egress deny_all); true, or none, keeps the template's: never widened.
	egress := ""
	if req.AllowInternetAccess != nil && !*req.AllowInternetAccess {
		egress = backend.EgressDenyAll
	}
	// envVars are the workspace's own env: secret, set under every command
	// (/v1 exec, processes, the in-sandbox API's process.Start).
	// autoPause: the timeout pauses the sandbox (its files kept) instead
	// of killing it, and a connect resumes it: /v1's expire_action pause.
	expire := ""
	if req.AutoPause != nil && *req.AutoPause {
		expire = wire.ExpireActionPause
	}
	made, err := api.Create(ctx, wire.CreateWorkspaceRequest{TemplateID: req.TemplateID, Labels: req.Metadata,
		Env: req.EnvVars, Egress: egress, TTL: ttl.String(), ExpireAction: expire})
	if err != nil {
		if errs.FieldOf(err) == "egress" {
			err = errs.Field("allow_internet_access", "allow_internet_access: false: %v", err)
		}
		d.fail(w, templateError(err, req.TemplateID))
		return
	}
	ws := made.Workspace
	if ws.Phase != wire.PhaseRunning {
		ws, err = d.waitRunning(ctx, api, ws, nil)
		if err != nil {
			d.fail(w, err)
			return
		}
	}
	d.ensureUser(ctx, ws.ID)
	out, err := d.created(ctx, ws)
	if err != nil {
		d.fail(w, err)
		return
	}
	d.log.Info("e2b sandbox created", "workspace_id", ws.ID, "template_id", ws.TemplateID, "source", made.Source)
	writeJSON(w, http.StatusCreated, out)
}

// templateError names templateID the E2B way when /v1 says the template
// is not the caller's (E2B answers an unknown template 404... or 400; the
// SDK shows the message either way).
func templateError(err error, templateID string) error {
	if errs.Is(err, errs.NotFound) || (errs.Is(err, errs.Invalid) && errs.FieldOf(err) == "template_id") {
		return errs.E(errs.NotFound, "template %s: not found (templateID is a Primer template id of your tenant): %w", templateID, err)
	}
	return err
}

// waitRunning waits until ws runs, bounded by its template's start timeout
// (tmpl, read when nil). On failure the workspace is deleted.
func (d *Door) waitRunning(ctx context.Context, api *client.Client, ws *wire.Workspace, tmpl *wire.Template) (*wire.Workspace, error) {
	limit := backend.DefaultStartTimeout
	if tmpl == nil {
		if t, err := api.GetTemplate(ctx, ws.TemplateID); err == nil {
			tmpl = t
		}
	}
	if tmpl != nil {
		var c backend.Common
		_ = json.Unmarshal(tmpl.Backend, &c)
		if v, err := time.ParseDuration(c.StartTimeout); err == nil && v > 0 {
			limit = v
		}
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	got, err := api.WaitWorkspace(wctx, ws.ID, wire.PhaseRunning, nil)
	if err == nil {
		return got, nil
	}
	// The caller gets no sandbox, so none may be left running: delete it
	// with the caller's key (on a context the caller's going away does not
	// cancel).
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer dcancel()
	if _, derr := api.DeleteWorkspace(dctx, ws.ID); derr != nil && !errs.Is(derr, errs.NotFound) {
		d.log.Warn("e2b: delete a sandbox that did not start", "workspace_id", ws.ID, "error", derr.Error())
	}
	if errs.Is(err, errs.Timeout) {
		return nil, errs.E(errs.Timeout, "sandbox %s: did not start within %s (the template's start timeout): %w", ws.ID, limit, err)
	}
	return nil, errs.E(errs.Unavailable, "sandbox %s: did not start: %w", ws.ID, err)
}

// workspace returns the sandbox id as /v1 shows it to the caller: 404 when
// it is not the caller's, does not exist or is being killed.
func (d *Door) workspace(ctx context.Context, api *client.Client, id string) (*wire.Workspace, error) {
	ws, err := api.GetWorkspace(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	if gone(ws) {
		return nil, notFound(id)
	}
	return ws, nil
}

func (d *Door) getSandbox(w http.ResponseWriter, r *http.Request, api *client.Client) {
	ws, err := d.workspace(r.Context(), api, r.PathValue("id"))
	if err != nil {
		d.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sandboxDetail{listedSandbox: d.listed(ws), Lifecycle: lifecycleOf(ws)})
}

// killSandbox deletes the sandbox: 204, or 404 when there is none (to
// this caller) or it is already being killed. The delete goes to /v1 even
// then, so a key that may not delete (a viewer) is refused 403 whatever the
// id, exactly as on /v1; deleting a terminating workspace again only
// repeats the request.
func (d *Door) killSandbox(w http.ResponseWriter, r *http.Request, api *client.Client) {
	ctx := r.Context()
	id := r.PathValue("id")
	_, lookErr := d.workspace(ctx, api, id)
	if lookErr != nil && !errs.Is(lookErr, errs.NotFound) {
		d.fail(w, lookErr)
		return
	}
	if _, err := api.DeleteWorkspace(ctx, id); err != nil {
		if errs.Is(err, errs.NotFound) {
			err = notFound(id)
		}
		d.fail(w, err)
		return
	}
	if lookErr != nil {
		d.fail(w, lookErr)
		return
	}
	// /v1's delete is asynchronous: the workflow records terminating a
	// moment later. E2B's kill is not: once it answers, the sandbox is
	// gone for every call (getInfo and connect 404, a second kill false),
	// so the answer waits for terminating, or for the workspace to be gone.
	if _, err := api.WaitWorkspace(ctx, id, wire.PhaseTerminating, nil); err != nil && !errs.Is(err, errs.NotFound) {
		d.fail(w, err)
		return
	}
	d.log.Info("e2b sandbox killed", "workspace_id", id)
	w.WriteHeader(http.StatusNoContent)
}

// timeoutRequest is the body of POST /sandboxes/{id}/timeout and of a
// connect: seconds from now.
type timeoutRequest struct {
	Timeout *int64 `json:"timeout"`
}

// extendTo moves the sandbox's deadlines to timeout seconds from now
// through /v1's extend: never past the template's lifetime.max (400), and
// never earlier than they are unless exact (setTimeout; connect only
// extends). It is the
// door's write check too: /v1 refuses a viewer 403 before it looks at the
// id. A sandbox that does not exist or is being killed is 404; one without
// deadlines is returned with noDeadline set.
func (d *Door) extendTo(ctx context.Context, api *client.Client, id string, timeout time.Duration, exact bool) (ws *wire.Workspace, noDeadline bool, err error) {
	until := time.Now().Add(timeout).UTC().Format(time.RFC3339Nano)
	ws, err = api.ExtendWorkspace(ctx, id, wire.ExtendRequest{Until: until, Exact: exact})
	switch {
	case err == nil:
		return ws, false, nil
	case errs.Is(err, errs.NotFound):
		return nil, false, notFound(id)
	case errs.Is(err, errs.Precondition):
		// Terminating (gone to E2B), or no deadline to extend.
		got, gerr := d.workspace(ctx, api, id)
		if gerr != nil {
			return nil, false, gerr
		}
		return got, true, nil
	}
	return nil, false, err
}

// setTimeout sets the sandbox to expire timeout seconds from now, sooner
// or later than it would have (E2B's semantics: the timeout is reset), never
// past its template's max: 204. A sandbox without deadlines is 409 (it
// lives until it is killed). Its workflow enforces a shortened deadline
// when it next wakes: at the latest one probe interval after it.
func (d *Door) setTimeout(w http.ResponseWriter, r *http.Request, api *client.Client) {
	var req timeoutRequest
	if err := decode(r, &req); err != nil {
		d.fail(w, err)
		return
	}
	if req.Timeout == nil || *req.Timeout <= 0 {
		d.fail(w, errs.Field("timeout", "timeout: required, a positive number of seconds"))
		return
	}
	id := r.PathValue("id")
	_, noDeadline, err := d.extendTo(r.Context(), api, id, time.Duration(*req.Timeout)*time.Second, true)
	if err == nil && noDeadline {
		err = errs.E(errs.Precondition, "sandbox %s: has no timeout (its template has no lifetime and it was made without one); it lives until it is killed", id)
	}
	if err != nil {
		d.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// connectSandbox answers the sandbox with its envd access token (what the
// SDK's Sandbox.connect needs), extending its life to timeout seconds from
// now (default 15 s; E2B: the TTL is only extended). The token lets its
// holder run commands, so a connect is a write: /v1's extend refuses a
// viewer. A paused sandbox is resumed first (E2B: connect resumes) and
// answered 201 once it runs; a running one 200.
func (d *Door) connectSandbox(w http.ResponseWriter, r *http.Request, api *client.Client) {
	var req timeoutRequest
	if err := decode(r, &req); err != nil {
		d.fail(w, err)
		return
	}
	timeout := defaultTimeout
	if req.Timeout != nil {
		if *req.Timeout < 0 {
			d.fail(w, errs.Field("timeout", "timeout: %d is negative", *req.Timeout))
			return
		}
		if *req.Timeout > 0 {
			timeout = time.Duration(*req.Timeout) * time.Second
		}
	}
	ctx := r.Context()
	id := r.PathValue("id")
	status := http.StatusOK
	ws, _, err := d.extendTo(ctx, api, id, timeout, false)
	if err != nil {
		d.fail(w, err)
		return
	}
	if ws.Phase == wire.PhasePaused {
		if _, err := d.resume(ctx, api, ws); err != nil {
			d.fail(w, err)
			return
		}
		// The timeout counts from the resume, which may have taken a
		// while.
		if ws, _, err = d.extendTo(ctx, api, id, timeout, false); err != nil {
			d.fail(w, err)
			return
		}
		status = http.StatusCreated
	}
	// A sandbox made through /v1 meets E2B here first.
	d.ensureUser(ctx, ws.ID)
	out, err := d.created(ctx, ws)
	if err != nil {
		d.fail(w, err)
		return
	}
	writeJSON(w, status, out)
}
