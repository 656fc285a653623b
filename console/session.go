package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"sort"
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

// sessionStore maps session ids to sessions, within bounds: a session
// expires ttl after its last use, one key holds at most perKey sessions
// (signing in once more ends its least recently used one), all keys
// together at most max (past it a sign-in is refused until one expires).
// Expired sessions are swept on a timer, armed while any session lives,
// so the map shrinks without anyone signing in.
type sessionStore struct {
	ttl    time.Duration
	perKey int
	max    int
	// gauge, when set, is told the number of sessions after every change.
	gauge func(n int)

	mu    sync.Mutex
	m     map[string]*session
	sweep *time.Timer // armed while m is not empty
}

func newSessionStore(ttl time.Duration, perKey, max int, gauge func(int)) *sessionStore {
	return &sessionStore{ttl: ttl, perKey: perKey, max: max, gauge: gauge, m: map[string]*session{}}
}

// sweepEvery is how often expired sessions are swept: a quarter of the
// ttl, so a session outlives its expiry by at most that, between 10 ms
// and a minute.
func (st *sessionStore) sweepEvery() time.Duration {
	return min(max(st.ttl/4, 10*time.Millisecond), time.Minute)
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
		st.deleteLocked(id)
		return nil
	}
	s.lastUsed = now
	return s
}

// errTooManySessions refuses a sign-in when the store is full.
var errTooManySessions = errors.New("console: too many sessions are signed in; try again later")

// put adds s. Past perKey sessions of s's key the least recently used of
// them ends; past max sessions in all, put refuses with errTooManySessions
// (after that eviction, so a key at its own cap is never refused).
func (st *sessionStore) put(s *session) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := time.Now()
	st.sweepLocked(now)
	var same []*session
	for _, o := range st.m {
		if o.keyID == s.keyID {
			same = append(same, o)
		}
	}
	// A key at its cap makes room among its own sessions first, so it
	// signs in even when the store is full: it does not grow it.
	if len(same) >= st.perKey {
		sort.Slice(same, func(i, j int) bool { return lastUsed(same[i]).Before(lastUsed(same[j])) })
		for _, o := range same[:len(same)-st.perKey+1] {
			st.deleteLocked(o.id)
		}
	}
	if len(st.m) >= st.max {
		return errTooManySessions
	}
	s.lastUsed = now
	st.m[s.id] = s
	st.changedLocked()
	return nil
}

// lastUsed reads s.lastUsed under its lock.
func lastUsed(s *session) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastUsed
}

func (st *sessionStore) drop(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.deleteLocked(id)
}

// count is the number of sessions held, expired ones not yet swept included.
func (st *sessionStore) count() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.m)
}

func (st *sessionStore) deleteLocked(id string) {
	if _, ok := st.m[id]; ok {
		delete(st.m, id)
		st.changedLocked()
	}
}

// sweepLocked drops every session idle for longer than ttl.
func (st *sessionStore) sweepLocked(now time.Time) {
	for id, o := range st.m {
		if now.Sub(lastUsed(o)) > st.ttl {
			st.deleteLocked(id)
		}
	}
}

// changedLocked reports the count and arms the sweep timer while sessions
// live (stopping it when none does, so an idle console holds no timer).
func (st *sessionStore) changedLocked() {
	if st.gauge != nil {
		st.gauge(len(st.m))
	}
	switch {
	case len(st.m) > 0 && st.sweep == nil:
		st.sweep = time.AfterFunc(st.sweepEvery(), st.onSweep)
	case len(st.m) == 0 && st.sweep != nil:
		st.sweep.Stop()
		st.sweep = nil
	}
}

// onSweep is the sweep timer's function: sweep, then re-arm while sessions
// remain.
func (st *sessionStore) onSweep() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sweep = nil
	st.sweepLocked(time.Now())
	if len(st.m) > 0 && st.sweep == nil {
		st.sweep = time.AfterFunc(st.sweepEvery(), st.onSweep)
	}
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
			if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
				// Parsed here, before FormValue would at 32 MiB in memory:
				// an uploaded file past formMemory goes to a temporary file.
				if err := r.ParseMultipartForm(formMemory); err != nil {
					http.Error(w, "console: bad form: "+err.Error(), http.StatusBadRequest)
					return
				}
			}
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
		h(w, r.WithContext(withRemote(r.Context(), r)), s)
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
	c.render(w, r, nil, http.StatusOK, "signin", page{Title: "Sign in", Data: safeNext(r.URL.Query().Get("next"))})
}

// signin checks the key against the API, then starts a session: the cookie
// carries only the session's random id.
func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "console: cross-site request refused", http.StatusForbidden)
		return
	}
	key := strings.TrimSpace(r.FormValue("api_key"))
	next := safeNext(r.FormValue("next"))
	fail := func(msg string) {
		c.render(w, r, nil, http.StatusUnauthorized, "signin", page{Title: "Sign in", Error: msg, Data: next})
	}
	keyID, err := models.ParseAPIKey(key)
	if err != nil {
		fail("That is not a Primer API key.")
		return
	}
	api := c.client(key)
	ctx, cancel := context.WithTimeout(withRemote(r.Context(), r), 10*time.Second)
	defer cancel()
	k, err := api.GetAPIKey(ctx, keyID)
	if err != nil {
		fail("Sign-in failed: " + err.Error())
		return
	}
	s := &session{id: randomToken(), key: key, keyID: k.ID, tenant: k.TenantID, role: k.Role, csrf: randomToken(), api: api}
	if err := c.sessions.put(s); err != nil {
		c.log.Warn("console: sign-in refused", "key_id", k.ID, "error", err.Error())
		c.render(w, r, nil, http.StatusServiceUnavailable, "signin", page{Title: "Sign in", Error: "Too many console sessions are signed in; try again later.", Data: next})
		return
	}
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

// formMemory is how much of a multipart form (an upload) is held in memory;
// the rest is spooled to temporary files, removed when the request ends.
const formMemory = 1 << 20

// safeNext returns next when it is a path on this console's origin, and
// "/" otherwise, so a sign-in link cannot send the browser elsewhere. A
// browser drops tabs and newlines inside a URL and reads a backslash as a
// slash, so "/\t/evil.example" and "/\\evil.example" would leave as
// "//evil.example", a link to another host: next must be printable ASCII
// without a backslash, start with exactly one "/", and parse as a path
// with no scheme and no host.
func safeNext(next string) string {
	for i := 0; i < len(next); i++ {
		if b := next[i]; b <= ' ' || b >= 0x7f || b == '\\' {
			return "/"
		}
	}
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}
