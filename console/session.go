package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/models"
)

// cookieName is the console's session cookie. Its value is an opaque random
// id; the API key it stands for stays in this process's memory.
const cookieName = "primer_console"

// session is one signed-in browser: the API key it acts with, what the key
// is (read from /v1/apikeys/<own id> at sign-in) and its CSRF token.
type session struct {
	id     string
	key    string // the API key; never rendered, logged or put in a cookie
	keyID  string
	tenant string
	role   string
	csrf   string
	api    *client.Client

	mu       sync.Mutex
	lastUsed time.Time
}

// canWrite reports whether the key may change anything: viewers only read.
func (s *session) canWrite() bool { return s.role != models.RoleViewer }

// sessionStore maps session ids to sessions; an idle session expires.
type sessionStore struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]*session
}

func newSessionStore(ttl time.Duration) *sessionStore {
	return &sessionStore{ttl: ttl, m: map[string]*session{}}
}

func (st *sessionStore) get(id string) *session {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.m[id]
	if !ok {
		return nil
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastUsed) > st.ttl {
		delete(st.m, id)
		return nil
	}
	s.lastUsed = now
	return s
}

func (st *sessionStore) put(s *session) {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := time.Now()
	// Sweep expired sessions on sign-in, so the map cannot grow without end.
	for id, o := range st.m {
		o.mu.Lock()
		if now.Sub(o.lastUsed) > st.ttl {
			delete(st.m, id)
		}
		o.mu.Unlock()
	}
	s.lastUsed = now
	st.m[s.id] = s
}

func (st *sessionStore) drop(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.m, id)
}

// randomToken is 32 random bytes, base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// handlerFunc is a console handler with its session.
type handlerFunc func(w http.ResponseWriter, r *http.Request, s *session)

// auth resolves the session cookie, sending a browser without one to the
// sign-in page, and checks every unsafe request for a cross-site origin and
// the session's CSRF token.
func (c *Console) auth(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var s *session
		if ck, err := r.Cookie(cookieName); err == nil {
			s = c.sessions.get(ck.Value)
		}
		if s == nil {
			if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/live/") {
				http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "console: not signed in", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			r.Body = http.MaxBytesReader(w, r.Body, maxUpload+1<<20)
			if !sameOrigin(r) {
				http.Error(w, "console: cross-site request refused", http.StatusForbidden)
				return
			}
			tok := r.Header.Get("X-CSRF-Token")
			if tok == "" {
				tok = r.FormValue("csrf")
			}
			if subtle.ConstantTimeCompare([]byte(tok), []byte(s.csrf)) != 1 {
				http.Error(w, "console: missing or wrong CSRF token; reload the page", http.StatusForbidden)
				return
			}
		}
		h(w, r.WithContext(withRemote(r.Context(), r.RemoteAddr)), s)
	}
}

// sameOrigin reports whether an unsafe request comes from the console's own
// pages: Sec-Fetch-Site, when the browser sends it, must say same-origin (or
// none: typed by the user), and Origin, when sent, must be this host.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		// Browsers send Origin on every cross-origin POST; a missing one
		// is a same-origin form on an older browser or a non-browser
		// client, which the CSRF token still checks. "null" is opaque.
		return o == ""
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// client returns an API client acting with key, calling the API in process.
func (c *Console) client(key string) *client.Client {
	return client.New("http://primer.console",
		client.WithHTTPClient(&http.Client{Transport: inproc{h: c.cfg.API}, Timeout: 30 * time.Second}),
		client.WithToken(key), client.WithUserAgent("primer-console"))
}

func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, nil, http.StatusOK, "signin", page{Title: "Sign in", Data: r.URL.Query().Get("next")})
}

// signin checks the key against the API, then starts a session: the cookie
// carries only the session's random id.
func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "console: cross-site request refused", http.StatusForbidden)
		return
	}
	key := strings.TrimSpace(r.FormValue("api_key"))
	next := r.FormValue("next")
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		next = "/workspaces"
	}
	fail := func(msg string) {
		c.render(w, r, nil, http.StatusUnauthorized, "signin", page{Title: "Sign in", Error: msg, Data: next})
	}
	keyID, err := models.ParseAPIKey(key)
	if err != nil {
		fail("That is not a Primer API key.")
		return
	}
	api := c.client(key)
	ctx, cancel := context.WithTimeout(withRemote(r.Context(), r.RemoteAddr), 10*time.Second)
	defer cancel()
	k, err := api.GetAPIKey(ctx, keyID)
	if err != nil {
		fail("Sign-in failed: " + err.Error())
		return
	}
	s := &session{id: randomToken(), key: key, keyID: k.ID, tenant: k.TenantID, role: k.Role, csrf: randomToken(), api: api}
	c.sessions.put(s)
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: s.id, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
		MaxAge: int(c.cfg.SessionTTL / time.Second),
	})
	c.log.Info("console: signed in", "key_id", k.ID, "tenant_id", k.TenantID, "role", k.Role)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request, s *session) {
	c.sessions.drop(s.id)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}
