package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// TestTenantAuditAndSecrets is issue 13's "audit entries for a full
// walkthrough" and "keys never appear in logs, events, workflow history or
// any response after creation". An admin makes a tenant and a member key,
// runs a workspace through create, exec, files and delete with a secret in
// its template's env; the member works in its own tenant (sees nothing of
// the admin's, cannot reach the admin's template or workspace, makes and
// revokes a viewer key); a viewer write is refused (403) and a revoked key
// too (401). The audit log then holds exactly those mutating requests, in
// order, and the member sees only its tenant's. Last, everything the test
// can read (every response after a key's creation, the server's log at
// debug level, the workspace's events, the audit log, the history of every
// workflow, every file of the data dir) is searched for the keys, their
// secret parts, their hashes and the env value: only admin.key holds the
// admin key, and the database only the hashes.
func TestTenantAuditAndSecrets(t *testing.T) {
	var logs lockedBuffer
	p := startPrimerLog(t, &logs)
	ctx := ctxT(t, 5*time.Minute)
	h := &recorder{t: t, url: p.srv.URL()}

	const envValue = "s3cr3t-value-123"
	adminKey := p.key
	adminID := keyID(t, adminKey)
	var want []auditWant
	// expect records the audit entry a request must leave.
	expect := func(action, resource string, status int, key, tenant, result string) {
		want = append(want, auditWant{Action: action, Resource: resource, Status: status, KeyID: key, TenantID: tenant, Result: result})
	}

	// Admin: a tenant and its member key (the key's one response is not
	// recorded: it is the one place the key may appear).
	h.do(adminKey, "POST", "/v1/tenants", map[string]any{"id": "acme", "description": "a team"}, 201, nil)
	expect("tenants.create", "tenants/acme", 201, adminID, wire.DefaultTenantID, "ok")
	var member createdKey
	h.doSecret(adminKey, "POST", "/v1/apikeys", map[string]any{"tenant_id": "acme", "role": "member", "name": "acme member"}, 201, &member)
	expect("apikeys.create", "apikeys/"+member.ID, 201, adminID, wire.DefaultTenantID, "ok")
	if member.Key == "" || member.ID != keyID(t, member.Key) || member.TenantID != "acme" || member.Role != wire.RoleMember {
		t.Fatalf("created member key: %+v", member)
	}

	// Admin, default tenant: a template with a secret in its env, and a
	// workspace of it through exec, files and delete.
	h.do(adminKey, "POST", "/v1/templates", map[string]any{
		"id": "secret-env", "provider_id": wire.LocalProviderID,
		"backend": map[string]any{"kind": "local", "env": map[string]string{"SECRET_ENV": envValue}},
	}, 201, nil)
	expect("templates.create", "templates/secret-env", 201, adminID, wire.DefaultTenantID, "ok")
	var ws wire.Workspace
	h.do(adminKey, "POST", "/v1/workspaces", map[string]any{"template_id": "secret-env"}, 201, &ws)
	expect("workspaces.create", "workspaces/"+ws.ID, 201, adminID, wire.DefaultTenantID, "ok")
	eventually(t, time.Minute, "workspace running", func() bool {
		var w wire.Workspace
		h.do(adminKey, "GET", "/v1/workspaces/"+ws.ID, nil, 200, &w)
		return w.Phase == wire.PhaseRunning
	})
	// The env reached the command; its value never travels in a request
	// or response, only its digest does.
	var res wire.ExecResponse
	h.do(adminKey, "POST", "/v1/workspaces/"+ws.ID+"/exec", map[string]any{"command": []string{"sh", "-c", `printf %s "$SECRET_ENV" | sha256sum`}}, 200, &res)
	expect("workspaces.exec", "workspaces/"+ws.ID, 200, adminID, wire.DefaultTenantID, "ok")
	digest := sha256.Sum256([]byte(envValue))
	if res.ExitCode != 0 || !strings.HasPrefix(res.Stdout, hex.EncodeToString(digest[:])) {
		t.Errorf("exec: %+v, want the sha256 of the template's env value", res)
	}
	h.do(adminKey, "PUT", "/v1/workspaces/"+ws.ID+"/files/notes/a.txt", []byte("hello\n"), 200, nil)
	expect("workspaces.files.update", "workspaces/"+ws.ID+"/files/notes/a.txt", 200, adminID, wire.DefaultTenantID, "ok")
	if got := h.do(adminKey, "GET", "/v1/workspaces/"+ws.ID+"/files/notes/a.txt", nil, 200, nil); string(got) != "hello\n" {
		t.Errorf("file read back: %q", got)
	}
	h.do(adminKey, "GET", "/v1/templates/secret-env", nil, 200, nil)
	h.do(adminKey, "GET", "/v1/templates", nil, 200, nil)

	// The workspace's workflow carries its tenant.
	desc, err := p.srv.TemporalClient().DescribeWorkflowExecution(ctx, workflows.WorkflowID(ws.ID), "")
	if err != nil {
		t.Fatal(err)
	}
	var tenant string
	if pl := desc.WorkflowExecutionInfo.GetSearchAttributes().GetIndexedFields()["PrimerTenant"]; pl == nil {
		t.Errorf("workflow %s has no PrimerTenant search attribute", workflows.WorkflowID(ws.ID))
	} else if err := converter.GetDefaultDataConverter().FromPayload(pl, &tenant); err != nil || tenant != wire.DefaultTenantID {
		t.Errorf("PrimerTenant = %q (%v), want %q", tenant, err, wire.DefaultTenantID)
	}

	// Member, tenant acme: sees nothing of the default tenant's, and
	// reaching for it is a 404 like an unknown id.
	memberID := member.ID
	var wss struct{ Items []wire.Workspace }
	h.do(member.Key, "GET", "/v1/workspaces", nil, 200, &wss)
	if len(wss.Items) != 0 {
		t.Errorf("the member lists %d workspaces, want none: %+v", len(wss.Items), wss.Items)
	}
	h.do(member.Key, "GET", "/v1/workspaces/"+ws.ID, nil, 404, nil)
	h.do(member.Key, "POST", "/v1/workspaces/"+ws.ID+"/exec", map[string]any{"command": []string{"true"}}, 404, nil)
	expect("workspaces.exec", "workspaces/"+ws.ID, 404, memberID, "acme", "not_found")
	h.do(member.Key, "POST", "/v1/pools", map[string]any{"id": "acme-pool", "template_id": "secret-env", "size": 1}, 404, nil)
	expect("pools.create", "pools", 404, memberID, "acme", "not_found") // a refused create names no object
	var viewer createdKey
	h.doSecret(member.Key, "POST", "/v1/apikeys", map[string]any{"role": "viewer", "name": "acme viewer"}, 201, &viewer)
	expect("apikeys.create", "apikeys/"+viewer.ID, 201, memberID, "acme", "ok")
	if viewer.Key == "" || viewer.TenantID != "acme" || viewer.Role != wire.RoleViewer || viewer.CreatedBy != memberID {
		t.Fatalf("created viewer key: %+v", viewer)
	}
	// A viewer reads, and may not write.
	h.do(viewer.Key, "GET", "/v1/workspaces", nil, 200, nil)
	h.do(viewer.Key, "POST", "/v1/workspaces", map[string]any{"template_id": wire.DefaultTemplateID}, 403, nil)
	expect("workspaces.create", "workspaces", 403, viewer.ID, "acme", "forbidden")
	h.do(member.Key, "POST", "/v1/apikeys/"+viewer.ID+"/revoke", nil, 200, nil)
	expect("apikeys.revoke", "apikeys/"+viewer.ID, 200, memberID, "acme", "ok")
	// A revoked key is no key: 401, recorded without a key or tenant.
	h.do(viewer.Key, "POST", "/v1/workspaces", map[string]any{"template_id": wire.DefaultTemplateID}, 401, nil)
	expect("workspaces.create", "workspaces", 401, "", "", "unauthenticated")
	h.do(member.Key, "GET", "/v1/apikeys", nil, 200, nil)
	h.do(adminKey, "GET", "/v1/apikeys", nil, 200, nil)
	h.do(adminKey, "GET", "/v1/apikeys/"+memberID, nil, 200, nil)
	h.do(adminKey, "GET", "/v1/tenants", nil, 200, nil)

	// The data dir while the workspace runs (its directory included).
	runningFiles, _ := dataDirFiles(t, p.cfg.DataDir)

	// Admin: the workspace goes.
	h.do(adminKey, "DELETE", "/v1/workspaces/"+ws.ID, nil, 202, nil)
	expect("workspaces.delete", "workspaces/"+ws.ID, 202, adminID, wire.DefaultTenantID, "ok")
	eventually(t, time.Minute, "workspace gone", func() bool {
		return h.status(adminKey, "GET", "/v1/workspaces/"+ws.ID) == 404
	})
	var evs struct{ Items []wire.Event }
	h.do(adminKey, "GET", "/v1/workspaces/"+ws.ID+"/events", nil, 200, &evs)
	if len(evs.Items) < 3 {
		t.Errorf("workspace events: %d, want the walkthrough's", len(evs.Items))
	}

	// The audit log: exactly the mutating requests above, in order.
	var all struct{ Items []wire.AuditEntry }
	h.do(adminKey, "GET", "/v1/audit?limit=1000", nil, 200, &all)
	slices.Reverse(all.Items) // newest first -> in order
	if got := auditWants(all.Items); !slices.Equal(got, want) {
		t.Errorf("audit log as admin:\n%s\nwant:\n%s", auditTable(got), auditTable(want))
	}
	for _, e := range all.Items {
		if e.Address == "" || e.CreatedAt.IsZero() {
			t.Errorf("audit entry %d has no address or time: %+v", e.ID, e)
		}
	}
	var acmeWant []auditWant
	for _, w := range want {
		if w.TenantID == "acme" {
			acmeWant = append(acmeWant, w)
		}
	}
	var mine struct{ Items []wire.AuditEntry }
	h.do(member.Key, "GET", "/v1/audit?tenant=default", nil, 200, &mine) // ?tenant is an admin's filter only
	slices.Reverse(mine.Items)
	if got := auditWants(mine.Items); !slices.Equal(got, acmeWant) {
		t.Errorf("audit log as the member:\n%s\nwant acme's only:\n%s", auditTable(got), auditTable(acmeWant))
	}

	// Now search everything for the secrets.
	secrets := map[string]string{"env value": envValue}
	hashes := map[string]string{}
	for name, key := range map[string]string{"admin key": adminKey, "member key": member.Key, "viewer key": viewer.Key} {
		secrets[name] = key
		secrets[name+"'s secret part"] = key[strings.LastIndex(key, ".")+1:]
		hashes[name+"'s hash"] = models.HashAPIKey(key)
	}
	everywhere := map[string][]byte{
		"api responses": h.transcript.Bytes(),
		"server log":    []byte(logs.String()),
		"audit log":     mustJSON(t, all.Items),
		"events":        mustJSON(t, evs.Items),
		"histories":     histories(ctx, t, p, ws.ID),
	}
	if !strings.Contains(logs.String(), memberID) {
		t.Errorf("the server log does not name the member key %s: is it captured at all?", memberID)
	}
	files, dbs := dataDirFiles(t, p.cfg.DataDir)
	everywhere["files of the data dir"] = files
	everywhere["files of the data dir, workspace running"] = runningFiles
	for where, content := range everywhere {
		t.Logf("searching %s: %d bytes", where, len(content))
		for _, set := range []map[string]string{secrets, hashes} {
			for name, s := range set {
				if leaks(content, s) {
					t.Errorf("%s holds the %s", where, name)
				}
			}
		}
	}
	// The databases: the keys only as hashes. The embedded Temporal's
	// database holds no key and no env value either.
	for db, content := range dbs {
		t.Logf("searching %s: %d bytes", db, len(content))
		for name, s := range secrets {
			if strings.HasSuffix(name, "key") || strings.HasSuffix(name, "part") || db != "primer.db" {
				if leaks(content, s) {
					t.Errorf("%s holds the %s", db, name)
				}
			}
		}
	}
	for name, hash := range hashes {
		if !bytes.Contains(dbs["primer.db"], []byte(hash)) {
			t.Errorf("primer.db does not hold the %s: is the database read at all?", name)
		}
	}
	if !bytes.Contains(dbs["temporal.db"], []byte(ws.ID)) {
		t.Errorf("temporal.db does not name workspace %s: is it read at all?", ws.ID)
	}
	key, err := os.ReadFile(p.srv.AdminKeyPath())
	if err != nil || strings.TrimSpace(string(key)) != adminKey {
		t.Errorf("admin.key: %v, want the admin key alone", err)
	}
}

// createdKey is the answer to POST /v1/apikeys.
type createdKey struct {
	wire.APIKey
	Key string `json:"key"`
}

// auditWant is what an audit entry must say.
type auditWant struct {
	Action, Resource string
	Status           int
	KeyID, TenantID  string
	Result           string
}

func auditWants(es []wire.AuditEntry) []auditWant {
	out := make([]auditWant, 0, len(es))
	for _, e := range es {
		out = append(out, auditWant{e.Action, e.Resource, e.Status, e.KeyID, e.TenantID, e.Result})
	}
	return out
}

func auditTable(ws []auditWant) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "  %-26s %-48s %d %-22s %-8s %s\n", w.Action, w.Resource, w.Status, w.KeyID, w.TenantID, w.Result)
	}
	return b.String()
}

// keyID is the id part of an API key.
func keyID(t *testing.T, key string) string {
	t.Helper()
	id, err := models.ParseAPIKey(key)
	if err != nil {
		t.Fatalf("parse api key: %v", err)
	}
	return id
}

// leaks reports whether content holds s as is or base64-encoded.
func leaks(content []byte, s string) bool {
	return bytes.Contains(content, []byte(s)) ||
		bytes.Contains(content, []byte(base64.StdEncoding.EncodeToString([]byte(s)))) ||
		bytes.Contains(content, []byte(base64.RawURLEncoding.EncodeToString([]byte(s))))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recorder sends API requests and keeps every response (status line,
// headers and body) in transcript, but those of doSecret.
type recorder struct {
	t          *testing.T
	url        string
	transcript bytes.Buffer
}

// do sends body (JSON, or raw bytes) with key, fails the test unless the
// status is want, decodes a JSON answer into out (when not nil) and returns
// the body.
func (r *recorder) do(key, method, path string, body any, want int, out any) []byte {
	r.t.Helper()
	return r.send(key, method, path, body, want, out, true)
}

// doSecret is do for the one response that may hold a secret (a key's
// creation): it is not recorded.
func (r *recorder) doSecret(key, method, path string, body any, want int, out any) []byte {
	r.t.Helper()
	return r.send(key, method, path, body, want, out, false)
}

func (r *recorder) send(key, method, path string, body any, want int, out any, record bool) []byte {
	r.t.Helper()
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case []byte:
		rd, ctype = bytes.NewReader(b), "application/octet-stream"
	default:
		rd, ctype = bytes.NewReader(mustJSON(r.t, b)), "application/json"
	}
	req, err := http.NewRequest(method, r.url+path, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if record {
		fmt.Fprintf(&r.transcript, "%s %s -> %s\n", method, path, resp.Status)
		resp.Header.Write(&r.transcript)
		r.transcript.Write(data)
		r.transcript.WriteString("\n")
	}
	if resp.StatusCode != want {
		r.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			r.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return data
}

// status sends a request without a body and returns its status, recording
// the response.
func (r *recorder) status(key, method, path string) int {
	r.t.Helper()
	req, err := http.NewRequest(method, r.url+path, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	fmt.Fprintf(&r.transcript, "%s %s -> %s\n", method, path, resp.Status)
	resp.Header.Write(&r.transcript)
	r.transcript.Write(data)
	r.transcript.WriteString("\n")
	return resp.StatusCode
}

// histories is every event of every workflow of the namespace, open and
// closed, each in its protobuf wire form, in which payloads (inputs,
// results, failures, search attributes, memos) are bytes as they are.
func histories(ctx context.Context, t *testing.T, p *primer, wsID string) []byte {
	t.Helper()
	tc := p.srv.TemporalClient()
	var out bytes.Buffer
	var token []byte
	seen := 0
	found := false
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: token})
		if err != nil {
			t.Fatalf("list workflows: %v", err)
		}
		for _, ex := range resp.Executions {
			seen++
			found = found || ex.Execution.WorkflowId == workflows.WorkflowID(wsID)
			it := tc.GetWorkflowHistory(ctx, ex.Execution.WorkflowId, ex.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					t.Fatalf("history of %s: %v", ex.Execution.WorkflowId, err)
				}
				b, err := proto.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				out.Write(b)
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	if !found {
		t.Errorf("the workflows listed (%d) do not include workspace %s's", seen, wsID)
	}
	return out.Bytes()
}

// dataDirFiles reads every file under dir: the SQLite databases (with their
// -wal, -shm and -journal files) by base name into dbs, the rest but
// admin.key into files.
func dataDirFiles(t *testing.T, dir string) (files []byte, dbs map[string][]byte) {
	t.Helper()
	dbs = map[string][]byte{}
	var buf bytes.Buffer
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		name := d.Name()
		for _, suffix := range []string{"-wal", "-shm", "-journal"} {
			name = strings.TrimSuffix(name, suffix)
		}
		switch {
		case strings.HasSuffix(name, ".db"):
			dbs[name] = append(dbs[name], data...)
		case path == filepath.Join(dir, client.AdminKeyFile):
		default:
			fmt.Fprintf(&buf, "== %s\n", path)
			buf.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), dbs
}
