package console

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// TestSafeNext is the sign-in's redirect target: a path of this origin
// passes, everything a browser could read as another host becomes "/".
func TestSafeNext(t *testing.T) {
	for _, tc := range []struct{ next, want string }{
		{"/workspaces", "/workspaces"},
		{"/workspaces/ws-1/files?path=a%2Fb&notice=x", "/workspaces/ws-1/files?path=a%2Fb&notice=x"},
		{"/runs/run-1/compare?with=run-2#top", "/runs/run-1/compare?with=run-2#top"},
		{"/", "/"},
		{"", "/"},
		{"workspaces", "/"},                        // relative
		{"//evil.example", "/"},                    // protocol-relative
		{"//evil.example/path", "/"},               //
		{"///evil.example", "/"},                   //
		{"/\\evil.example", "/"},                   // backslash: a slash to browsers
		{"\\\\evil.example", "/"},                  //
		{"/\\/evil.example", "/"},                  //
		{"/\t/evil.example", "/"},                  // %09 decoded: browsers drop tabs
		{"/\n/evil.example", "/"},                  // %0A
		{"/\r/evil.example", "/"},                  // %0D
		{"\t//evil.example", "/"},                  // leading control
		{" //evil.example", "/"},                   // leading space: browsers trim it
		{"/ /evil.example", "/"},                   // any space
		{"/\x00/evil.example", "/"},                // NUL
		{"/\x7f/evil.example", "/"},                // DEL
		{"/\u00a0/evil.example", "/"},              // non-ASCII
		{"/\u3000/evil.example", "/"},              // ideographic space
		{"/\uff0f/evil.example", "/"},              // fullwidth solidus
		{"https://evil.example", "/"},              // absolute
		{"https:evil.example", "/"},                // scheme without slashes
		{"https:/evil.example", "/"},               //
		{"javascript:alert(1)", "/"},               //
		{"JavaScript:alert(1)", "/"},               //
		{"data:text/html,hi", "/"},                 //
		{"/%2F%2Fevil.example", "/"},               // encoded slashes: path "///evil.example"
		{"/%2f/evil.example", "/"},                 //
		{"/%5Cevil.example", "/%5Cevil.example"},   // an encoded backslash stays one: a path
		{"/%09/evil.example", "/%09/evil.example"}, // an encoded tab stays encoded: a path
		{"/@evil.example", "/@evil.example"},       // a path, not userinfo
		{"/.//evil.example", "/.//evil.example"},   // cleaned to /evil.example by the redirect
	} {
		if got := safeNext(tc.next); got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.next, got, tc.want)
		}
	}
}

// TestSignInRedirect signs in through the form with next= attempts as a
// link would carry them (url-encoded, so %09 arrives as a tab) and checks
// where the browser is sent.
func TestSignInRedirect(t *testing.T) {
	keyID, key, _ := models.NewAPIKey()
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/apikeys/"+keyID || r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"code":"unauthenticated","message":"no","details":{}}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(wire.APIKey{ID: keyID, TenantID: "default", Role: wire.RoleMember})
	})
	c, err := New(Config{API: api, Sessions: testSessions(t), SessionsPerKey: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ next, want string }{
		{"/%09/evil.example", "/"},
		{"/%0A/evil.example", "/"},
		{"//evil.example", "/"},
		{"/%5Cevil.example", "/"},
		{"/%5C%5Cevil.example", "/"},
		{"https:evil.example", "/"},
		{"https%3A%2F%2Fevil.example", "/"},
		{"%2F%2Fevil.example", "/"},
		{"/%252F%252Fevil.example", "/"}, // double-encoded: still "//" once the path is decoded
		{"%20//evil.example", "/"},
		{"/workspaces%3Fphase%3Drunning", "/workspaces?phase=running"},
	} {
		form := "api_key=" + url.QueryEscape(key) + "&next=" + tc.next
		req := httptest.NewRequest(http.MethodPost, "/signin", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		c.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("next=%s: status %d, body %s", tc.next, rec.Code, rec.Body)
		}
		if loc := rec.Header().Get("Location"); loc != tc.want {
			t.Errorf("next=%s: Location %q, want %q", tc.next, loc, tc.want)
		}
	}
}

// TestSessionStoreBounds checks the console's side of the caps (the store
// enforces them, models testConsoleSessions): past max a sign-in is
// errTooManySessions; an expired session is swept by the timer, with
// nobody signing in, the gauge follows and the timer stops.
func TestSessionStoreBounds(t *testing.T) {
	db := testSessions(t)
	var mu sync.Mutex
	gauge := -1
	setGauge := func(n int) { mu.Lock(); gauge = n; mu.Unlock() }
	row := func(key string) *models.ConsoleSession {
		_, hash := models.NewConsoleToken()
		return &models.ConsoleSession{Hash: hash, KeyID: key, TenantID: "default", Role: wire.RoleMember}
	}
	st := newSessionStore(db, time.Hour, 2, 2, setGauge, slog.New(slog.DiscardHandler))
	t.Cleanup(st.close)
	for _, k := range []string{"key-a", "key-b"} {
		if err := st.put(t.Context(), row(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.put(t.Context(), row("key-c")); err != errTooManySessions {
		t.Fatalf("past the total cap: %v, want errTooManySessions", err)
	}
	mu.Lock()
	if gauge != 2 {
		t.Errorf("gauge %d after two sign-ins, want 2", gauge)
	}
	mu.Unlock()

	// Expiry by the timer.
	db = testSessions(t)
	st = newSessionStore(db, 40*time.Millisecond, 8, 100, setGauge, slog.New(slog.DiscardHandler))
	t.Cleanup(st.close)
	for range 3 {
		if err := st.put(t.Context(), row("key-k")); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		g := gauge
		mu.Unlock()
		st.mu.Lock()
		armed := st.sweep != nil
		st.mu.Unlock()
		if g == 0 && !armed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gauge %d, timer armed %v after the sessions' ttl: never swept", g, armed)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testSessions is a fresh SQLite store for console sessions.
func testSessions(t testing.TB) *models.Store {
	t.Helper()
	st, err := models.Open(context.Background(), models.Config{SQLitePath: filepath.Join(t.TempDir(), "primer.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
