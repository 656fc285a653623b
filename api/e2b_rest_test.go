package api

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// Request bodies as the SDKs send them (e2b 2.51.0 on npm; the Python SDK's
// sandbox_api.py): the JS SDK posts to /v2/sandboxes and leaves unset
// options out, the Python SDK posts to /sandboxes with every field.
const (
	jsCreateBody = `{"templateID":"default","metadata":{"team":"evals"},"timeout":300}`
	pyCreateBody = `{"templateID":"default","timeout":300,"secure":true,"allow_internet_access":true,` +
		`"metadata":{"team":"evals"},"envVars":{"E2B_SECRET":"s3cret-env-value"}}`
)

// e2bSandbox is E2B's Sandbox answer.
type e2bSandbox struct {
	TemplateID         string  `json:"templateID"`
	SandboxID          string  `json:"sandboxID"`
	ClientID           string  `json:"clientID"`
	EnvdVersion        string  `json:"envdVersion"`
	EnvdAccessToken    string  `json:"envdAccessToken"`
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

// e2bListed is E2B's ListedSandbox / SandboxDetail.
type e2bListed struct {
	TemplateID      string            `json:"templateID"`
	SandboxID       string            `json:"sandboxID"`
	ClientID        string            `json:"clientID"`
	StartedAt       time.Time         `json:"startedAt"`
	EndAt           time.Time         `json:"endAt"`
	Metadata        map[string]string `json:"metadata"`
	State           string            `json:"state"`
	EnvdVersion     string            `json:"envdVersion"`
	EnvdAccessToken string            `json:"envdAccessToken"`
}

// e2bErr is E2B's error body.
type e2bErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// e2b sends an E2B request with key as X-API-KEY (none when empty).
func (h *harness) e2b(key, method, path, body string, header ...string) response {
	h.t.Helper()
	hdr := append([]string{"Authorization", ""}, header...)
	if key != "" {
		hdr = append(hdr, "X-API-KEY", key)
	}
	return h.do(method, "/e2b"+path, body, hdr...)
}

// e2bError checks an E2B error answer: status, the same code in the body,
// and a message fragment.
func (r response) e2bError(t *testing.T, status int, msg string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	var e e2bErr
	r.decode(t, &e)
	if e.Code != status || e.Message == "" || !strings.Contains(e.Message, msg) {
		t.Fatalf("error body %s, want code %d and a message containing %q", r.body, status, msg)
	}
}

// expectColdStart expects one workspace workflow start and plays its
// first step: the workspace runs. It returns the started workspace ids.
func (h *harness) expectColdStart() *[]string {
	var ids []string
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) {
			in := args.Get(3).(workflows.WorkspaceInput)
			ids = append(ids, in.WorkspaceID)
			if err := h.store.SetWorkspacePhase(context.Background(), in.WorkspaceID, wire.PhaseRunning, ""); err != nil {
				h.t.Errorf("set phase: %v", err)
			}
		}).Return(&mocks.WorkflowRun{}, nil).Once()
	return &ids
}

// e2bKey is the E2B form of key.
func e2bKey(t *testing.T, key string) string {
	t.Helper()
	k, ok := models.E2BKey(key)
	if !ok {
		t.Fatalf("key has no e2b form")
	}
	return k
}

func TestE2BCreate(t *testing.T) {
	tests := []struct {
		name, path, body string
		e2bForm          bool
	}{
		{"js sdk, v2 path, pmr key", "/v2/sandboxes", jsCreateBody, false},
		{"python sdk, v1 path, e2b_ key", "/sandboxes", pyCreateBody, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			// An admin's: the default template is on the host (local).
			key := h.adminKey
			if tt.e2bForm {
				key = e2bKey(t, key)
			}
			started := h.expectColdStart()
			before := time.Now()
			r := h.e2b(key, "POST", tt.path, tt.body).expect(t, http.StatusCreated)
			var sb e2bSandbox
			r.decode(t, &sb)
			if len(*started) != 1 || sb.SandboxID != (*started)[0] || sb.TemplateID != "default" || sb.ClientID == "" ||
				sb.EnvdVersion == "" || !strings.HasPrefix(sb.EnvdAccessToken, "e2bat_") || sb.Domain != nil {
				t.Fatalf("create = %s", r.body)
			}
			ws, err := h.store.GetWorkspace(context.Background(), sb.SandboxID)
			if err != nil {
				t.Fatal(err)
			}
			// metadata became labels, timeout the workspace's ttl.
			if ws.Labels["team"] != "evals" || ws.ExpiresAt == nil ||
				ws.ExpiresAt.Before(before.Add(299*time.Second)) || ws.ExpiresAt.After(time.Now().Add(301*time.Second)) {
				t.Fatalf("workspace = %+v", ws)
			}
			// The token is not the runtime's, and no read hands it out again.
			if ws.RuntimeToken != "" && strings.Contains(sb.EnvdAccessToken, ws.RuntimeToken) {
				t.Fatal("the envd access token holds the runtime token")
			}
			for _, p := range []string{"/sandboxes/" + sb.SandboxID, "/v2/sandboxes", "/sandboxes"} {
				got := h.e2b(key, "GET", p, "").expect(t, 200)
				if bytes.Contains(got.body, []byte(sb.EnvdAccessToken)) {
					t.Fatalf("GET %s shows the envd access token: %s", p, got.body)
				}
			}
		})
	}
}

func TestE2BCreateWarm(t *testing.T) {
	h := newHarness(t)
	h.pool("p", 1)
	idle := h.member("p", wire.PhaseRunning, wire.PoolIdle)
	notified := h.expectNotify("p", 1)
	// No ExecuteWorkflow expected: the mock fails the test on a cold start.
	r := h.e2b(h.adminKey, "POST", "/v2/sandboxes", pyCreateBody).expect(t, http.StatusCreated)
	var sb e2bSandbox
	r.decode(t, &sb)
	if sb.SandboxID != idle.ID {
		t.Fatalf("create = %s, want the pool's idle member %s", r.body, idle.ID)
	}
	h.srv.bg.Wait()
	if *notified != 1 {
		t.Fatalf("pool woken %d times, want 1", *notified)
	}
	ws, err := h.store.GetWorkspace(context.Background(), idle.ID)
	if err != nil || ws.PoolID != "" || ws.Labels["team"] != "evals" || ws.ExpiresAt == nil || ws.Env["E2B_SECRET"] != "s3cret-env-value" {
		t.Fatalf("taken member = %+v (%v)", ws, err)
	}
}

// TestE2BEnvVars: envVars become the workspace's own env, which every
// exec and process gets under its own, and which no answer shows.
func TestE2BEnvVars(t *testing.T) {
	h := newHarness(t)
	started := h.expectColdStart()
	r := h.e2b(h.adminKey, "POST", "/sandboxes", pyCreateBody).expect(t, http.StatusCreated)
	var sb e2bSandbox
	r.decode(t, &sb)
	ws, err := h.store.GetWorkspace(context.Background(), sb.SandboxID)
	if err != nil || len(*started) != 1 || ws.Env["E2B_SECRET"] != "s3cret-env-value" {
		t.Fatalf("workspace env = %v (%v)", ws, err)
	}
	for _, got := range []response{r,
		h.do("GET", "/v1/workspaces/"+sb.SandboxID, nil).expect(t, 200),
		h.do("GET", "/v1/workspaces", nil).expect(t, 200),
		h.e2b(h.adminKey, "GET", "/sandboxes/"+sb.SandboxID, "").expect(t, 200),
		h.e2b(h.adminKey, "GET", "/v2/sandboxes", "").expect(t, 200),
	} {
		if bytes.Contains(got.body, []byte("s3cret-env-value")) {
			t.Fatalf("an answer shows the env value: %s", got.body)
		}
	}

	// Exec and processes on a running workspace with its own env: the
	// request's env wins over it.
	run, _ := h.runningWorkspace()
	if err := h.store.SetWorkspaceEnv(context.Background(), run.ID, map[string]string{"E2B_SECRET": "s3cret-env-value", "B": "ws"}); err != nil {
		t.Fatal(err)
	}
	var res wire.ExecResponse
	h.do("POST", "/v1/workspaces/"+run.ID+"/exec", `{"command":["sh","-c","echo $E2B_SECRET-$B"],"env":{"B":"req"}}`).
		expect(t, 200).decode(t, &res)
	if res.Stdout != "s3cret-env-value-req\n" {
		t.Fatalf("exec stdout %q, want the workspace's env under the request's", res.Stdout)
	}
}

func TestE2BCreateRefusals(t *testing.T) {
	h := newHarness(t) // no workflow start expected for any of these
	viewer := h.newKey(wire.DefaultTenantID, wire.RoleViewer)
	tests := []struct {
		name, key, body string
		status          int
		msg             string
	}{
		{"no key", "", jsCreateBody, 401, "authorization"},
		{"malformed e2b key", "e2b_00", jsCreateBody, 401, "malformed"},
		{"viewer", viewer, jsCreateBody, 403, "viewer"},
		{"unknown template", h.adminKey, `{"templateID":"nope","timeout":300}`, 404, "nope"},
		{"default template base is missing", h.adminKey, `{"timeout":300}`, 404, "base"},
		{"env var name", h.adminKey, `{"templateID":"default","envVars":{"A=B":"secret-value"}}`, 400, "A=B"},
		{"env on a missing template", h.adminKey, `{"templateID":"nope","envVars":{"A":"secret-value"}}`, 404, "nope"},
		{"no internet on a local template", h.adminKey, `{"templateID":"default","allow_internet_access":false}`, 400, "no network of its own"},
		{"malformed body", h.adminKey, `{"templateID":`, 400, "request body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.e2b(tt.key, "POST", "/v2/sandboxes", tt.body)
			r.e2bError(t, tt.status, tt.msg)
			if bytes.Contains(r.body, []byte("secret-value")) {
				t.Fatalf("the answer echoes an env value: %s", r.body)
			}
		})
	}
	ws, _ := h.store.ListWorkspaces(context.Background(), models.WorkspaceFilter{})
	if len(ws) != 0 {
		t.Fatalf("refused creates left %d workspaces", len(ws))
	}
}

// TestE2BCreateFailedStart: a sandbox that ends failed before it runs is
// a 503 and is deleted, not left behind.
func TestE2BCreateFailedStart(t *testing.T) {
	h := newHarness(t)
	var id string
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(args mock.Arguments) {
			id = args.Get(3).(workflows.WorkspaceInput).WorkspaceID
			_ = h.store.SetWorkspacePhase(context.Background(), id, wire.PhaseFailed, "image not found")
		}).Return(&mocks.WorkflowRun{}, nil).Once()
	deleted := false
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, mock.Anything, workflows.SignalDelete, mock.Anything,
		mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(mock.Arguments) { deleted = true }).Return(&mocks.WorkflowRun{}, nil).Once()
	h.e2b(h.adminKey, "POST", "/v2/sandboxes", jsCreateBody).e2bError(t, 503, "image not found")
	if !deleted {
		t.Fatalf("the sandbox %s that did not start was not deleted", id)
	}
}

func TestE2BGetKillTimeoutConnect(t *testing.T) {
	h := newHarness(t)
	h.lifetimeTemplate()
	ws := h.mortal(wire.PhaseRunning, time.Now())
	member := h.newKey(wire.DefaultTenantID, wire.RoleMember)
	viewer := h.newKey(wire.DefaultTenantID, wire.RoleViewer)
	ghost := models.NewID("ws")

	// get
	var got e2bListed
	h.e2b(member, "GET", "/sandboxes/"+ws.ID, "").expect(t, 200).decode(t, &got)
	// endAt is the first deadline: here the idle one (10m; expiry 30m).
	if got.SandboxID != ws.ID || got.TemplateID != "life" || got.State != "running" || got.EnvdAccessToken != "" ||
		got.EndAt.Sub(*ws.IdleDeadline).Abs() > time.Millisecond {
		t.Fatalf("get = %+v, workspace %+v", got, ws)
	}
	h.e2b(member, "GET", "/sandboxes/"+ghost, "").e2bError(t, 404, ghost)

	// timeout: 204, the expiry moves to 50 minutes from now; past the
	// template's max (1h) it is 400; a viewer may not.
	h.e2b(member, "POST", "/sandboxes/"+ws.ID+"/timeout", `{"timeout":3000}`).expect(t, 204)
	after, _ := h.store.GetWorkspace(context.Background(), ws.ID)
	if after.ExpiresAt == nil || after.ExpiresAt.Before(time.Now().Add(49*time.Minute)) {
		t.Fatalf("expiry after timeout = %v", after.ExpiresAt)
	}
	// A shorter timeout shortens it (E2B resets the timeout to now plus
	// the value); connect only extends.
	h.e2b(member, "POST", "/sandboxes/"+ws.ID+"/timeout", `{"timeout":120}`).expect(t, 204)
	after, _ = h.store.GetWorkspace(context.Background(), ws.ID)
	if after.ExpiresAt == nil || after.ExpiresAt.After(time.Now().Add(2*time.Minute)) || after.ExpiresAt.Before(time.Now().Add(time.Minute)) {
		t.Fatalf("expiry after a shorter timeout (120 s) = %v, want about 2 minutes from now", after.ExpiresAt)
	}
	h.e2b(member, "POST", "/v2/sandboxes/"+ws.ID+"/connect", `{"timeout":60}`).expect(t, 200)
	if again, _ := h.store.GetWorkspace(context.Background(), ws.ID); !again.ExpiresAt.Equal(*after.ExpiresAt) {
		t.Fatalf("expiry after a connect with a shorter timeout = %v, want it kept at %v", again.ExpiresAt, after.ExpiresAt)
	}
	h.e2b(member, "POST", "/sandboxes/"+ws.ID+"/timeout", `{"timeout":7200}`).e2bError(t, 400, "max")
	h.e2b(viewer, "POST", "/sandboxes/"+ws.ID+"/timeout", `{"timeout":60}`).e2bError(t, 403, "viewer")
	h.e2b(member, "POST", "/sandboxes/"+ghost+"/timeout", `{"timeout":60}`).e2bError(t, 404, ghost)

	// connect (JS: v2 path; Python: v1 path): 200 with the same token the
	// create would have handed out.
	var c1, c2 e2bSandbox
	h.e2b(member, "POST", "/v2/sandboxes/"+ws.ID+"/connect", `{"timeout":300}`).expect(t, 200).decode(t, &c1)
	h.e2b(member, "POST", "/sandboxes/"+ws.ID+"/connect", `{"timeout":300}`).expect(t, 200).decode(t, &c2)
	if c1.SandboxID != ws.ID || c1.EnvdAccessToken == "" || c1.EnvdAccessToken != c2.EnvdAccessToken {
		t.Fatalf("connect = %+v, %+v", c1, c2)
	}
	h.e2b(member, "POST", "/v2/sandboxes/"+ghost+"/connect", `{"timeout":300}`).e2bError(t, 404, ghost)

	// kill: a viewer may not; 204; then the sandbox is gone to E2B (404
	// on get, kill, connect and envd) while its workflow destroys it.
	h.e2b(viewer, "DELETE", "/sandboxes/"+ws.ID, "").e2bError(t, 403, "viewer")
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, ws.WorkflowID, workflows.SignalDelete, mock.Anything,
		mock.Anything, workflows.WorkspaceWorkflowName, mock.Anything).
		Run(func(mock.Arguments) {
			_ = h.store.SetWorkspacePhase(context.Background(), ws.ID, wire.PhaseTerminating, "deleted by user")
		}).Return(&mocks.WorkflowRun{}, nil).Twice() // the second kill repeats the request: 404 all the same
	h.e2b(member, "DELETE", "/sandboxes/"+ws.ID, "").expect(t, 204)
	h.e2b(member, "DELETE", "/sandboxes/"+ws.ID, "").e2bError(t, 404, ws.ID)
	h.e2b(member, "GET", "/sandboxes/"+ws.ID, "").e2bError(t, 404, ws.ID)
	h.e2b(member, "POST", "/v2/sandboxes/"+ws.ID+"/connect", `{"timeout":300}`).e2bError(t, 404, ws.ID)
	h.e2b("", "GET", "/envd/health", "", "E2b-Sandbox-Id", ws.ID, "X-Access-Token", c1.EnvdAccessToken).e2bError(t, 404, ws.ID)
}

func TestE2BList(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	// Five sandboxes, a second apart, the odd ones labelled app=web (a key
	// and value that need encoding: "my app" = "web/1").
	var ids []string
	start := time.Now().Add(-time.Hour)
	for i := range 5 {
		id := models.NewID("ws")
		w := &wire.Workspace{ID: id, TemplateID: wire.DefaultTemplateID, ProviderID: wire.LocalProviderID,
			Backend: wire.BackendLocal, Phase: wire.PhaseRunning, WorkflowID: workflows.WorkflowID(id),
			CreatedAt: start.Add(time.Duration(i) * time.Second)}
		if i%2 == 1 {
			w.Labels = map[string]string{"my app": "web/1"}
		}
		if err := h.store.CreateWorkspace(ctx, w); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Not listed: one being killed, an idle pool member.
	h.workspace(wire.PhaseTerminating)
	h.pool("p", 1)
	h.member("p", wire.PhaseRunning, wire.PoolIdle)

	list := func(path string) ([]string, string) {
		t.Helper()
		r := h.e2b(h.adminKey, "GET", path, "").expect(t, 200)
		var got []e2bListed
		r.decode(t, &got)
		var out []string
		for _, s := range got {
			out = append(out, s.SandboxID)
		}
		return out, r.header.Get("X-Next-Token")
	}
	same := func(got, want []string) bool { return strings.Join(got, ",") == strings.Join(want, ",") }

	// The JS SDK's encoding of metadata {"my app": "web/1"}: each key and
	// value encoded, the pairs as a query string, then the parameter.
	jsMeta := "metadata=my%252520app%3Dweb%25252F1"
	// The Python SDK's: urlencode of the quoted pairs.
	pyMeta := "metadata=my%2520app%3Dweb%252F1"
	tests := []struct {
		name, path string
		want       []string
	}{
		{"all, newest first", "/v2/sandboxes", []string{ids[4], ids[3], ids[2], ids[1], ids[0]}},
		{"oldest first", "/v2/sandboxes?order=asc", ids},
		{"js metadata", "/v2/sandboxes?" + jsMeta, []string{ids[3], ids[1]}},
		{"python metadata", "/v2/sandboxes?" + pyMeta, []string{ids[3], ids[1]}},
		{"v1 list with metadata", "/sandboxes?" + jsMeta, []string{ids[3], ids[1]}},
		{"running", "/v2/sandboxes?state=running,paused", []string{ids[4], ids[3], ids[2], ids[1], ids[0]}},
		{"paused: none", "/v2/sandboxes?state=paused", nil},
		{"template", "/v2/sandboxes?template=default&startedAfter=" + start.Add(1500*time.Millisecond).UTC().Format(time.RFC3339Nano),
			[]string{ids[4], ids[3], ids[2]}},
		{"other template", "/v2/sandboxes?template=nope", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next := list(tt.path)
			if !same(got, tt.want) || next != "" {
				t.Fatalf("list %s = %v (next %q), want %v", tt.path, got, next, tt.want)
			}
		})
	}

	t.Run("pages", func(t *testing.T) {
		var all []string
		path := "/v2/sandboxes?limit=2"
		for range 5 {
			got, next := list(path)
			all = append(all, got...)
			if next == "" {
				break
			}
			path = "/v2/sandboxes?limit=2&nextToken=" + next
		}
		if !same(all, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}) {
			t.Fatalf("paged list = %v", all)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, q := range []string{"limit=0", "limit=101", "limit=x", "nextToken=%21%21", "state=dead", "order=up", "startedAfter=yesterday"} {
			h.e2b(h.adminKey, "GET", "/v2/sandboxes?"+q, "").e2bError(t, 400, "")
		}
	})
}

// TestE2BEnvdRouter: an envd request reaches the sandbox only with the
// access token its create handed out; the token never shows in a log.
func TestE2BEnvdRouter(t *testing.T) {
	var logs bytes.Buffer
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	started := h.expectColdStart()
	var sb e2bSandbox
	h.e2b(h.adminKey, "POST", "/v2/sandboxes", jsCreateBody).expect(t, 201).decode(t, &sb)
	other := h.workspace(wire.PhaseRunning)

	envd := func(id, tok string) response {
		hdr := []string{}
		if id != "" {
			hdr = append(hdr, "E2b-Sandbox-Id", id)
		}
		if tok != "" {
			hdr = append(hdr, "X-Access-Token", tok)
		}
		return h.e2b("", "GET", "/envd/health", "", hdr...)
	}
	// The right token passes the router: the placeholder answers 501
	// until the in-sandbox API is wired.
	if r := envd(sb.SandboxID, sb.EnvdAccessToken); r.status != http.StatusNotImplemented {
		t.Fatalf("right token: status %d %s", r.status, r.body)
	}
	envd(sb.SandboxID, "").e2bError(t, 401, "missing")
	envd(sb.SandboxID, sb.EnvdAccessToken+"0").e2bError(t, 401, "wrong")
	envd(other.ID, sb.EnvdAccessToken).e2bError(t, 401, "wrong") // another sandbox's token
	envd("", sb.EnvdAccessToken).e2bError(t, 400, "E2b-Sandbox-Id")
	// Without its token nobody learns whether a sandbox exists: an id of
	// none is refused as another's is.
	envd(models.NewID("ws"), sb.EnvdAccessToken).e2bError(t, 401, "wrong")
	envd(models.NewID("ws"), "").e2bError(t, 401, "missing")
	if len(*started) != 1 || strings.Contains(logs.String(), sb.EnvdAccessToken) {
		t.Fatalf("the envd access token is in the logs (or no start: %v)", *started)
	}
	// The token derives from a stored platform secret: a second API over
	// the same store (another replica, a restart) accepts it too.
	h2 := newHarness(t, func(c *Config) { c.Store = h.store })
	r := h2.e2b("", "GET", "/envd/health", "", "E2b-Sandbox-Id", sb.SandboxID, "X-Access-Token", sb.EnvdAccessToken)
	if r.status != http.StatusNotImplemented {
		t.Fatalf("second replica: status %d %s", r.status, r.body)
	}
	// A sandbox's own token stops working with it: 404 while it is being
	// killed and once it is gone.
	if err := h.store.SetWorkspacePhase(context.Background(), sb.SandboxID, wire.PhaseTerminating, "deleted by user"); err != nil {
		t.Fatal(err)
	}
	envd(sb.SandboxID, sb.EnvdAccessToken).e2bError(t, 404, "not found")
	if err := h.store.DeleteWorkspace(context.Background(), sb.SandboxID); err != nil {
		t.Fatal(err)
	}
	envd(sb.SandboxID, sb.EnvdAccessToken).e2bError(t, 404, "not found")
	envd(sb.SandboxID, sb.EnvdAccessToken+"0").e2bError(t, 401, "wrong")
}

// TestE2BKeyInCreateResponse: a created key comes with its e2b_ form,
// which passes the Python SDK's check and authenticates as the key.
func TestE2BKeyInCreateResponse(t *testing.T) {
	h := newHarness(t)
	var k wire.CreatedAPIKey
	h.do("POST", "/v1/apikeys", `{"role":"viewer"}`).expect(t, 201).decode(t, &k)
	if !pythonKeyCheck(k.E2BKey) {
		t.Fatalf("e2b_key %q does not pass the Python SDK's check", k.E2BKey)
	}
	h.e2b(k.E2BKey, "GET", "/v2/sandboxes", "").expect(t, 200)
	// The same key: revoking it stops the e2b_ form too.
	h.do("POST", "/v1/apikeys/"+k.ID+"/revoke", `{}`).expect(t, 200)
	h.e2b(k.E2BKey, "GET", "/v2/sandboxes", "").e2bError(t, 401, "revoked")
}

// pythonKeyCheck is the Python SDK's client-side check, ^e2b_[0-9a-f]+$.
func pythonKeyCheck(k string) bool {
	rest, ok := strings.CutPrefix(k, "e2b_")
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

var _ = client.StartWorkflowOptions{}
var _ = json.Marshal
