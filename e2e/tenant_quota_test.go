package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// TestTenantQuotaConcurrentCreates is issue 13's quota test on the real
// platform (Temporal, workflows, the local backend): 50 concurrent creates
// in a tenant with max_workspaces 10 give exactly 10 workspaces (201) and
// 40 refusals (429 naming the quota, its limit and the use); a deleted
// workspace keeps its place until it is gone, and only then does a create
// succeed; another tenant is not held back meanwhile. On SQLite and on
// PostgreSQL, whose row lock is what holds the quota there.
func TestTenantQuotaConcurrentCreates(t *testing.T) {
	for _, db := range []struct {
		name string
		opts func(t *testing.T) []option
	}{
		{"sqlite", func(*testing.T) []option { return nil }},
		{"postgres", func(t *testing.T) []option { return []option{withPostgres(t)} }},
	} {
		t.Run(db.name, func(t *testing.T) { testTenantQuota(t, startPrimer(t, db.opts(t)...)) })
	}
}

func testTenantQuota(t *testing.T, p *primer) {
	ctx := ctxT(t, 3*time.Minute)
	store := p.srv.Store()
	const tenant, limit, attempts = "quota", 10, 50
	if err := store.CreateTenant(ctx, &wire.Tenant{ID: tenant, Quota: wire.Quota{MaxWorkspaces: limit}}); err != nil {
		t.Fatal(err)
	}
	// An admin of tenant "quota": only admins may create workspaces on the
	// local backend, and an admin creates in its own tenant.
	id, key, hash := models.NewAPIKey()
	if err := store.CreateAPIKey(ctx, &wire.APIKey{ID: id, TenantID: tenant, Role: wire.RoleAdmin, Hash: hash, Name: "quota test"}); err != nil {
		t.Fatal(err)
	}
	api := client.New(p.srv.URL(), client.WithToken(key), p.checked)
	var created []string
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, ws := range created {
			if _, err := api.DeleteWorkspace(cctx, ws); err != nil && !errs.Is(err, errs.NotFound) {
				t.Errorf("cleanup: delete %s: %v", ws, err)
				continue
			}
			if err := api.WaitGone(cctx, ws, nil); err != nil {
				t.Errorf("cleanup: %s not gone: %v", ws, err)
			}
		}
	})

	type answer struct {
		status int
		id     string
		msg    string
	}
	create := func(key string) answer {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.srv.URL()+"/v1/workspaces",
			bytes.NewReader([]byte(`{"template_id":"`+wire.DefaultTemplateID+`"}`)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		// 50 creates at once on a loaded CI machine queue on SQLite's one
		// writer and on the embedded Temporal: wait for each answer as long
		// as the test may take, not the SDK's 30 s (a CI run timed out
		// creates that would have been answered).
		hc := *p.hc
		hc.Timeout = 0
		resp, err := hc.Do(req)
		if err != nil {
			return answer{msg: err.Error()}
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var env struct {
			wire.Workspace
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &env)
		if env.Error.Message != "" {
			return answer{status: resp.StatusCode, msg: env.Error.Code + ": " + env.Error.Message}
		}
		return answer{status: resp.StatusCode, id: env.ID, msg: string(body)}
	}

	answers := make([]answer, attempts)
	var wg sync.WaitGroup
	for i := range attempts {
		wg.Go(func() { answers[i] = create(key) })
	}
	wg.Wait()
	full := "tenant quota: quota max_workspaces: limit 10, in use 10"
	var ok, refused int
	for _, a := range answers {
		switch {
		case a.status == http.StatusCreated && a.id != "":
			ok++
			created = append(created, a.id)
		case a.status == http.StatusTooManyRequests && strings.Contains(a.msg, "resource_exhausted: ") && strings.Contains(a.msg, full):
			refused++
		default:
			t.Errorf("create: http %d %s; want 201, or 429 saying %q", a.status, a.msg, full)
		}
	}
	if ok != limit || refused != attempts-limit {
		t.Fatalf("%d concurrent creates: %d created, %d refused; want %d and %d", attempts, ok, refused, limit, attempts-limit)
	}
	countQuota := func() int {
		t.Helper()
		all, err := store.ListWorkspaces(ctx, models.WorkspaceFilter{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, w := range all {
			if w.TenantID == tenant {
				n++
			}
		}
		return n
	}
	if n := countQuota(); n != limit {
		t.Fatalf("%d workspaces of tenant %s exist, want %d", n, tenant, limit)
	}
	if u, err := store.TenantUsage(ctx, tenant); err != nil || u.Workspaces != limit {
		t.Fatalf("TenantUsage(%s) = %+v, %v; want %d workspaces", tenant, u, err, limit)
	}

	// Another tenant is not held back by this one's quota.
	other := create(p.key)
	if other.status != http.StatusCreated {
		t.Fatalf("the default tenant's create while quota is full: http %d %s", other.status, other.msg)
	}
	created = append(created, other.id)

	// A deleted workspace counts until its row is gone: creates are refused
	// while it is there, and one succeeds only once it is gone.
	gone := created[0]
	if w, err := api.DeleteWorkspace(ctx, gone); err != nil || w.Phase != wire.PhaseTerminating {
		t.Fatalf("delete %s = %+v, %v; want terminating", gone, w, err)
	}
	sawRefusal := false
	deadline := time.Now().Add(time.Minute)
	for {
		a := create(key)
		if a.status == http.StatusCreated {
			created = append(created, a.id)
			if _, err := store.GetWorkspace(ctx, gone); !errs.Is(err, errs.NotFound) {
				t.Fatalf("a create succeeded while deleted %s still exists (%v)", gone, err)
			}
			break
		}
		if a.status != http.StatusTooManyRequests || !strings.Contains(a.msg, full) {
			t.Fatalf("create after a delete: http %d %s; want 429 saying %q until %s is gone", a.status, a.msg, full, gone)
		}
		// Refused: the deleted one must still have been there.
		if _, err := store.GetWorkspace(ctx, gone); err == nil {
			sawRefusal = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("no create succeeded within a minute of deleting %s", gone)
		}
		time.Sleep(20 * time.Millisecond) // pacing the polls, not synchronisation
	}
	if !sawRefusal {
		t.Logf("%s was gone before the first create after its delete: the terminating case was not observed this time", gone)
	}
	if n := countQuota(); n != limit {
		t.Errorf("after delete and create: %d workspaces of tenant %s, want %d", n, tenant, limit)
	}
}
