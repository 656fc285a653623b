package console

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/primerhq/primer/api"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/starter"
	"github.com/primerhq/primer/wire"
)

// replica is one primer API process with its console, on a store of its own
// opened on the shared database.
type replica struct {
	store *models.Store
	c     *Console
	h     http.Handler
}

func startReplica(t *testing.T, cfg models.Config) *replica {
	t.Helper()
	store, err := models.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := backend.NewRegistry(map[string]backend.Factory{})
	h, err := api.New(api.Config{Store: store, Starter: &starter.Starter{Store: store},
		Connector: &connector.Connector{Store: store, Backends: reg}, Backends: reg, Metrics: metrics.New()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{API: h, Sessions: store})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{store: store, c: c, h: c.Handler()}
	t.Cleanup(r.stop)
	return r
}

func (r *replica) stop() {
	r.c.Close()
	_ = r.store.Close()
}

// page GETs path with the session cookie and returns the status.
func (r *replica) page(t *testing.T, path, cookie string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: cookie})
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	return rec.Code
}

// TestSignInSurvivesRestart signs in on one replica, then checks that the
// cookie works on a restarted replica (a new server on the same store) and
// on a second replica at the same time, that the store holds the token's
// hash and never the token, and that revoking the key ends the session
// everywhere. It runs on SQLite (a restart of the one process) and on
// PostgreSQL (replicas).
func TestSignInSurvivesRestart(t *testing.T) {
	for _, d := range []struct {
		name string
		cfg  func(t *testing.T) models.Config
	}{
		{models.DialectSQLite, func(t *testing.T) models.Config {
			return models.Config{SQLitePath: filepath.Join(t.TempDir(), "primer.db")}
		}},
		{models.DialectPostgres, func(t *testing.T) models.Config { return models.Config{URL: testenv.PostgresURL(t)} }},
	} {
		t.Run(d.name, func(t *testing.T) {
			cfg := d.cfg(t)
			ctx := t.Context()
			first := startReplica(t, cfg)
			if err := first.store.EnsureDefaults(ctx, t.TempDir()); err != nil {
				t.Fatal(err)
			}
			id, key, hash := models.NewAPIKey()
			if err := first.store.CreateAPIKey(ctx, &wire.APIKey{ID: id, TenantID: wire.DefaultTenantID, Role: wire.RoleMember, Hash: hash}); err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodPost, "/signin", strings.NewReader("api_key="+url.QueryEscape(key)+"&next=/providers"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			first.h.ServeHTTP(rec, req)
			var cookie string
			for _, ck := range rec.Result().Cookies() {
				if ck.Name == cookieName {
					cookie = ck.Value
				}
			}
			if rec.Code != http.StatusSeeOther || cookie == "" {
				t.Fatalf("sign-in: status %d, cookie %q: %s", rec.Code, cookie, rec.Body)
			}
			if got := first.page(t, "/providers", cookie); got != http.StatusOK {
				t.Fatalf("the signed-in page: status %d, want 200", got)
			}

			// Restart: the first process ends; a new one on the same store.
			first.stop()
			restarted := startReplica(t, cfg)
			if got := restarted.page(t, "/providers", cookie); got != http.StatusOK {
				t.Errorf("after a restart: status %d, want 200 (the sign-in survives)", got)
			}
			second := startReplica(t, cfg)
			if got := second.page(t, "/providers", cookie); got != http.StatusOK {
				t.Errorf("on a second replica: status %d, want 200", got)
			}
			if d.name == models.DialectSQLite {
				// The database files hold the token's hash, never the token.
				var all []byte
				files, _ := filepath.Glob(cfg.SQLitePath + "*")
				for _, f := range files {
					b, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, b...)
				}
				if bytes.Contains(all, []byte(cookie)) || bytes.Contains(all, []byte(strings.TrimPrefix(cookie, "pcs."))) {
					t.Error("the session token is stored in the database in clear")
				}
				if !bytes.Contains(all, []byte(models.HashAPIKey(cookie))) {
					t.Errorf("the database holds no hash of the session token (files %v)", files)
				}
			}
			if _, err := second.store.ConsoleSession(ctx, models.HashAPIKey(cookie)); err != nil {
				t.Errorf("the session's row by the token's hash: %v", err)
			}

			// Revoking the key ends the session on every replica.
			if _, _, err := second.store.RevokeAPIKey(ctx, id); err != nil {
				t.Fatal(err)
			}
			for name, r := range map[string]*replica{"restarted": restarted, "second": second} {
				if got := r.page(t, "/providers", cookie); got != http.StatusSeeOther {
					t.Errorf("%s replica after the key's revocation: status %d, want a redirect to sign in", name, got)
				}
			}
		})
	}
}
