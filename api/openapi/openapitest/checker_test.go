package openapitest_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/primerhq/primer/api/openapi"
	"github.com/primerhq/primer/api/openapi/openapitest"
)

const workspace = `{"id":"ws-1","tenant_id":"default","template_id":"t","provider_id":"local","backend":"local","phase":"running","template_generation":1,"workflow_id":"workspace-ws-1","created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05.123456Z"}`

// TestChecker drives canned answers through a Checker: conforming ones
// pass, and each kind of mismatch is reported.
func TestChecker(t *testing.T) {
	doc, err := openapitest.Load(openapi.JSON())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path string
		status             int
		ctype, body        string
		want               string // "" for no failure, else a part of it
	}{
		{"workspace", "GET", "/v1/workspaces/ws-1", 200, "application/json", workspace, ""},
		{"list", "GET", "/v1/workspaces", 200, "application/json", `{"items":[` + workspace + `]}`, ""},
		{"extra field", "GET", "/v1/workspaces/ws-1", 200, "application/json", strings.Replace(workspace, `"id"`, `"secret":"x","id"`, 1), `field "secret" is not in the document`},
		{"missing field", "GET", "/v1/workspaces/ws-1", 200, "application/json", strings.Replace(workspace, `"phase":"running",`, "", 1), `required field "phase" is missing`},
		{"wrong type", "GET", "/v1/workspaces/ws-1", 200, "application/json", strings.Replace(workspace, `"template_generation":1`, `"template_generation":"1"`, 1), "is not of type"},
		{"bad time", "GET", "/v1/workspaces/ws-1", 200, "application/json", strings.Replace(workspace, `"2026-01-02T03:04:05Z"`, `"yesterday"`, 1), "not a date-time"},
		{"error envelope", "GET", "/v1/workspaces/ws-2", 404, "application/json", `{"error":{"code":"not_found","message":"m","details":{}}}`, ""},
		{"bad envelope", "GET", "/v1/workspaces/ws-2", 404, "application/json", `{"error":{"code":"not_found"}}`, `required field "message"`},
		{"undeclared status", "GET", "/v1/workspaces/ws-1", 201, "application/json", workspace, "status 201 is not in the document"},
		{"unknown route", "GET", "/v1/nothing/here", 200, "application/json", `{}`, "not in the document"},
		{"unknown route 404", "GET", "/v1/nothing/here", 404, "application/json", `{"error":{"code":"not_found","message":"m","details":{}}}`, ""},
		{"media type", "GET", "/v1/workspaces/ws-1", 200, "text/plain", "hi", `media type "text/plain"`},
		{"file bytes", "GET", "/v1/workspaces/ws-1/files/a/b.txt", 200, "application/octet-stream", "bytes", ""},
		{"absolute file", "GET", "/v1/workspaces/ws-1/files//etc/hosts", 200, "application/octet-stream", "bytes", ""},
		{"no content", "DELETE", "/v1/providers/p", 204, "", "", ""},
		{"ndjson", "POST", "/v1/workspaces/ws-1/exec", 200, "application/x-ndjson", `{"stream":"stdout","data":"hi"}` + "\n" + `{"exit":{"exit_code":0,"duration_ms":1,"timed_out":false}}` + "\n", ""},
		{"ndjson extra", "POST", "/v1/workspaces/ws-1/exec", 200, "application/x-ndjson", `{"stream":"stdout","data":"hi","x":1}` + "\n", "line 1: matches none of anyOf"},
		{"sse", "GET", "/v1/runs/r/events", 200, "text/event-stream", ": keep-alive\n\nevent: progress\ndata: {\"total\":1,\"pending\":1,\"running\":0,\"pass\":0,\"fail\":0,\"error\":0,\"canceled\":0,\"pass_rate\":0,\"duration_p50_ms\":0,\"duration_p95_ms\":0}\n\n", ""},
		{"sse bad data", "GET", "/v1/runs/r/events", 200, "text/event-stream", "event: progress\ndata: {\"total\":1}\n\n", `required field "pending"`},
		{"sse unknown event", "GET", "/v1/runs/r/events", 200, "text/event-stream", "event: surprise\ndata: {}\n\n", `event "surprise" is not in the document`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.ctype != "" {
					w.Header().Set("Content-Type", tc.ctype)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c := openapitest.NewChecker(doc, nil)
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			resp, err := (&http.Client{Transport: c}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(got) != tc.body {
				t.Errorf("the caller read %q, want %q", got, tc.body)
			}
			fails := strings.Join(c.Failures(), "\n")
			switch {
			case tc.want == "" && fails != "":
				t.Errorf("failures for a conforming answer:\n%s", fails)
			case tc.want != "" && !strings.Contains(fails, tc.want):
				t.Errorf("failures %q, want one saying %q", fails, tc.want)
			}
		})
	}
}
