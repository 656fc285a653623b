package api

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" driver, to break the audit table behind the store's back

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// TestAuditFailureRefusesRequest: when the audit log cannot take a
// request's entry the request is refused (503) and nothing is done; once
// the log works again, the same requests go through and are recorded.
func TestAuditFailureRefusesRequest(t *testing.T) {
	h := newHarness(t)
	db, err := sql.Open("sqlite", filepath.Join(h.dir, "primer.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER audit_down BEFORE INSERT ON audit_entries BEGIN SELECT RAISE(ABORT, 'audit down'); END`); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, method, path string
		body               any
		done               func() bool
	}{
		{"tenant create", "POST", "/v1/tenants", `{"id":"team"}`, func() bool {
			_, err := h.store.GetTenant(ctx, "team")
			return err == nil
		}},
		{"key create", "POST", "/v1/apikeys", `{"role":"viewer","name":"unaudited"}`, func() bool {
			ks, err := h.store.ListAPIKeys(ctx, wire.DefaultTenantID)
			return err != nil || len(ks) != 1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.do(tc.method, tc.path, tc.body).expectError(t, 503, "unavailable", "", "audit: the request could not be recorded, so it was not carried out")
			if tc.done() {
				t.Errorf("%s %s was carried out though its audit entry was not written", tc.method, tc.path)
			}
		})
	}
	if _, err := db.Exec(`DROP TRIGGER audit_down`); err != nil {
		t.Fatal(err)
	}
	h.do("POST", "/v1/tenants", `{"id":"team"}`).expect(t, 201)
	es, err := h.store.ListAudit(ctx, models.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Action != "tenants.create" || es[0].Status != 201 || es[0].Result != "ok" || es[0].Resource != "tenants/team" {
		t.Errorf("audit after the log came back = %+v", es)
	}
}

// TestAuditSanitisedResource: a files path with bytes that are not UTF-8
// and a NUL is recorded percent-encoded (on PostgreSQL such an entry was
// refused by the database and lost).
func TestAuditSanitisedResource(t *testing.T) {
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	h.do("PUT", "/v1/workspaces/"+w.ID+"/files/odd%FF%00name.txt", "x")
	es, err := h.store.ListAudit(context.Background(), models.AuditFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := "workspaces/" + w.ID + "/files/odd%FF%00name.txt"
	if len(es) != 1 || es[0].Resource != want || es[0].Result == wire.AuditPending || !strings.HasPrefix(es[0].Action, "workspaces.files") {
		t.Errorf("audit entry = %+v, want resource %q with its outcome", es, want)
	}
}
