package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// cookieName is the console's session cookie. Its value is the session
// token (models.NewConsoleToken); the store keeps only its hash, and the
// API key it stands for is never stored or put in a cookie.
const cookieName = wire.ConsoleCookie

// session is one signed-in browser: its token (the console's bearer toward
// the API, which resolves it to the key it was made with), what the key is
// (read from /v1/apikeys/<own id> at sign-in) and its CSRF token.
type session struct {
	hash   string // the token's hash: the stored row's key
	token  string // never rendered or logged; the cookie's value
	keyID  string
	tenant string
	role   string
	csrf   string
	api    *client.Client
}

// canWrite reports whether the key may change anything: viewers only read.
func (s *session) canWrite() bool { return s.role != wire.RoleViewer }

// SessionStore keeps console sessions (models.Store implements it): rows
// keyed by the token's hash, so a sign-in survives a restart and works on
// every replica sharing the store.
type SessionStore interface {
	CreateConsoleSession(ctx context.Context, cs *models.ConsoleSession, perKey, max int) error
	ConsoleSession(ctx context.Context, hash string) (*models.ConsoleSession, error)
	TouchConsoleSession(ctx context.Context, hash string, expires time.Time) error
	DeleteConsoleSession(ctx context.Context, hash string) error
	SweepConsoleSessions(ctx context.Context, now time.Time) (int64, error)
}

// sessionStore bounds the stored sessions: a session expires ttl after its
// last use, one key holds at most perKey sessions (signing in once more
// ends its least recently used one), all keys together at most max (past
// it a sign-in is refused until one expires). Expired sessions are swept
// on a timer, armed while any session lives, so the table shrinks without
// anyone signing in.
type sessionStore struct {
	db     SessionStore
	ttl    time.Duration
	perKey int
	max    int
	log    *slog.Logger
	// gauge, when set, is told the number of sessions after every sweep,
	// sign-in and sign-out.
	gauge func(n int)

	mu     sync.Mutex
	sweep  *time.Timer // armed while sessions remain
	closed bool
}

func newSessionStore(db SessionStore, ttl time.Duration, perKey, max int, gauge func(int), log *slog.Logger) *sessionStore {
	st := &sessionStore{db: db, ttl: ttl, perKey: perKey, max: max, gauge: gauge, log: log}
	// Sessions stored before a restart are swept too.
	st.arm()
	return st
}

// sweepEvery is how often expired sessions are swept, and how often a used
// session's expiry is written at most: a quarter of the ttl, so a session
// outlives its expiry by at most that, between 10 ms and a minute.
func (st *sessionStore) sweepEvery() time.Duration {
	return min(max(st.ttl/4, 10*time.Millisecond), time.Minute)
}

// get returns the live session of token, or nil, moving its expiry forward
// (at most once per sweepEvery, so a page view is not a write).
func (st *sessionStore) get(ctx context.Context, token string) *models.ConsoleSession {
	if !models.IsConsoleToken(token) {
		return nil
	}
	hash := models.HashAPIKey(token)
	cs, err := st.db.ConsoleSession(ctx, hash)
	if err != nil {
		if !errs.Is(err, errs.NotFound) {
			st.log.Warn("console: read session", "error", err.Error())
		}
		return nil
	}
	now := time.Now()
	if cs.ExpiresAt.Sub(now) < st.ttl-st.sweepEvery() {
		if err := st.db.TouchConsoleSession(ctx, hash, now.Add(st.ttl)); err != nil {
			st.log.Warn("console: touch session", "key_id", cs.KeyID, "error", err.Error())
		}
	}
	return cs
}

// errTooManySessions refuses a sign-in when the store is full.
var errTooManySessions = errors.New("console: too many sessions are signed in; try again later")

// put stores cs. Past perKey sessions of its key the least recently used
// of them ends; past max sessions in all, put refuses with
// errTooManySessions (after that eviction, so a key at its own cap is
// never refused).
func (st *sessionStore) put(ctx context.Context, cs *models.ConsoleSession) error {
	cs.ExpiresAt = time.Now().Add(st.ttl)
	err := st.db.CreateConsoleSession(ctx, cs, st.perKey, st.max)
	if errs.Is(err, errs.Exhausted) {
		return errTooManySessions
	}
	if err != nil {
		return err
	}
	st.changed(ctx)
	return nil
}

func (st *sessionStore) drop(ctx context.Context, hash string) {
	if err := st.db.DeleteConsoleSession(ctx, hash); err != nil {
		st.log.Warn("console: end session", "error", err.Error())
	}
	st.changed(ctx)
}

// changed sweeps, reports the count and arms the sweep timer while
// sessions live (stopping it when none does, so an idle console holds no
// timer).
func (st *sessionStore) changed(ctx context.Context) {
	n, err := st.db.SweepConsoleSessions(ctx, time.Now())
	if err != nil {
		st.log.Warn("console: sweep sessions", "error", err.Error())
		return
	}
	if st.gauge != nil {
		st.gauge(int(n))
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case n > 0 && st.sweep == nil && !st.closed:
		st.sweep = time.AfterFunc(st.sweepEvery(), st.onSweep)
	case n == 0 && st.sweep != nil:
		st.sweep.Stop()
		st.sweep = nil
	}
}

// arm starts the sweep timer unless it runs.
func (st *sessionStore) arm() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sweep == nil && !st.closed {
		st.sweep = time.AfterFunc(st.sweepEvery(), st.onSweep)
	}
}

// onSweep is the sweep timer's function: sweep, then re-arm while sessions
// remain.
func (st *sessionStore) onSweep() {
	st.mu.Lock()
	st.sweep = nil
	st.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st.changed(ctx)
}

// close stops the sweep timer for good.
func (st *sessionStore) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	if st.sweep != nil {
		st.sweep.Stop()
		st.sweep = nil
	}
}

// csrfOf is the CSRF token of a session: derived from its token, so any
// replica computes the same one without storing it, and a page that never
// saw the HttpOnly cookie cannot.
func csrfOf(token string) string {
	sum := sha256.Sum256([]byte("primer console csrf\x00" + token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
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
			if cs := c.sessions.get(r.Context(), ck.Value); cs != nil {
				s = &session{hash: cs.Hash, token: ck.Value, keyID: cs.KeyID, tenant: cs.TenantID, role: cs.Role,
					csrf: csrfOf(ck.Value), api: c.client(ck.Value)}
			}
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
// carries the session's token, the store its hash; the key itself is
// forgotten once the request ends.
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
	token, hash := models.NewConsoleToken()
	if err := c.sessions.put(ctx, &models.ConsoleSession{Hash: hash, KeyID: k.ID, TenantID: k.TenantID, Role: k.Role}); err != nil {
		c.log.Warn("console: sign-in refused", "key_id", k.ID, "error", err.Error())
		msg := "Sign-in failed: " + err.Error()
		if errors.Is(err, errTooManySessions) {
			msg = "Too many console sessions are signed in; try again later."
		}
		c.render(w, r, nil, http.StatusServiceUnavailable, "signin", page{Title: "Sign in", Error: msg, Data: next})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: token, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
		MaxAge: int(c.cfg.SessionTTL / time.Second),
	})
	c.log.Info("console: signed in", "key_id", k.ID, "tenant_id", k.TenantID, "role", k.Role)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request, s *session) {
	c.sessions.drop(r.Context(), s.hash)
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
