package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/server"
)

// Host is one loopback HTTP server that serves the runtime of every
// host-process workspace (local, worktree, memory) held by this platform
// process, routing /w/{workspace_id} to that workspace's runtime server. It
// listens on 127.0.0.1 on a random port, started on first use. It is safe
// for concurrent use.
type Host struct {
	logger *slog.Logger

	mu      sync.Mutex
	ln      net.Listener
	httpSrv *http.Server
	base    string // ws://127.0.0.1:PORT
	closed  bool
	served  map[string]*served // workspace id -> its runtime
	// cgroups is where each workspace gets a cgroup of its own ("" where
	// the host has no writable cgroup v2), found on first use.
	cgroups    string
	cgroupOnce sync.Once
}

type served struct {
	srv    *server.Server
	token  string
	root   string
	cgroup string // the workspace's cgroup, "" without one
}

// NewHost returns a host that has not started listening yet.
func NewHost(logger *slog.Logger) *Host {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Host{logger: logger, served: map[string]*served{}}
}

// Serve makes the runtime of workspace id reachable and returns its URL,
// ws://127.0.0.1:PORT/w/ID. It is idempotent: while id is served with the
// same token and root the existing runtime (and its running processes and
// base environment) is kept; a changed token or root replaces it. cfg.Token
// and cfg.Root are required.
func (h *Host) Serve(ctx context.Context, id string, cfg server.Config) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	if cfg.Token == "" {
		return "", errs.E(errs.Invalid, "workspace %s: serve runtime: empty token", id)
	}
	if cfg.Root == "" {
		return "", errs.E(errs.Invalid, "workspace %s: serve runtime: empty root", id)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if cfg.Logger == nil {
		cfg.Logger = h.logger.With("workspace_id", id)
	}

	h.mu.Lock()
	if err := h.startLocked(); err != nil {
		h.mu.Unlock()
		return "", err
	}
	if s := h.served[id]; s != nil && s.token == cfg.Token && s.root == cfg.Root {
		h.mu.Unlock()
		return h.urlLocked(id), nil
	}
	h.mu.Unlock()

	if cfg.Cgroup == "" {
		cfg.Cgroup = h.cgroupFor(id)
	}
	// server.New may do I/O (resolving the root); keep it outside the lock
	// so one slow workspace does not hold up the others.
	srv, err := server.New(cfg)
	if err != nil {
		return "", fmt.Errorf("workspace %s: serve runtime: %w", id, err)
	}

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		srv.Close()
		return "", errs.E(errs.Unavailable, "workspace %s: serve runtime: host is closed", id)
	}
	old := h.served[id]
	if old != nil && old.token == cfg.Token && old.root == cfg.Root {
		// A concurrent Serve won the race with the same settings: keep it.
		url := h.urlLocked(id)
		h.mu.Unlock()
		srv.Close()
		return url, nil
	}
	h.served[id] = &served{srv: srv, token: cfg.Token, root: cfg.Root, cgroup: cfg.Cgroup}
	url := h.urlLocked(id)
	h.mu.Unlock()

	if old != nil {
		old.srv.Close()
		h.logger.Info("runtime replaced", "workspace_id", id)
	} else {
		h.logger.Debug("runtime serving", "workspace_id", id)
	}
	return url, nil
}

// startLocked opens the listener on first use. h.mu is held.
func (h *Host) startLocked() error {
	if h.closed {
		return errs.E(errs.Unavailable, "runtime host: closed")
	}
	if h.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return errs.E(errs.Unavailable, "runtime host: listen: %w", err)
	}
	h.ln = ln
	h.base = "ws://" + ln.Addr().String()
	h.httpSrv = &http.Server{Handler: http.HandlerFunc(h.route), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := h.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.logger.Error("runtime host stopped", "error", err)
		}
	}()
	h.logger.Info("runtime host listening", "addr", ln.Addr().String())
	return nil
}

func (h *Host) urlLocked(id string) string { return h.base + "/w/" + id }

// URL returns the URL of workspace id's runtime, or "" when it is not served.
func (h *Host) URL(id string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.served[id] == nil {
		return ""
	}
	return h.urlLocked(id)
}

// Serving returns the URL of workspace id's runtime when it is served with
// token and root already, so a caller can skip preparing a Serve.
func (h *Host) Serving(id, token, root string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.served[id]; s != nil && s.token == token && s.root == root {
		return h.urlLocked(id), true
	}
	return "", false
}

// Addr returns the address the host listens on, or "" before first use.
func (h *Host) Addr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ln == nil {
		return ""
	}
	return h.ln.Addr().String()
}

// Len returns how many workspace runtimes are served.
func (h *Host) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.served)
}

// Stop stops serving workspace id: its runtime server is closed, which ends
// its connections and kills its processes. Stopping an id that is not
// served does nothing.
func (h *Host) Stop(id string) {
	h.mu.Lock()
	s := h.served[id]
	delete(h.served, id)
	h.mu.Unlock()
	if s != nil {
		s.srv.Close()
		h.removeCgroup(id, s.cgroup)
		h.logger.Debug("runtime stopped", "workspace_id", id)
	}
}

// cgroupFor makes workspace id's cgroup and returns its path, or "" where
// the host has no writable cgroup v2 (cgroup.go says what that leaves).
func (h *Host) cgroupFor(id string) string {
	h.cgroupOnce.Do(func() {
		// One directory per host: two platforms (or two tests) on one
		// machine may serve the same workspace id, and one's reset must
		// not kill the other's commands.
		if base := cgroupBase(); base != "" {
			dir := filepath.Join(base, fmt.Sprintf("host-%d-%s", os.Getpid(), randomSuffix()))
			if err := os.Mkdir(dir, 0o755); err == nil {
				h.cgroups = dir
			}
		}
		if h.cgroups == "" {
			h.logger.Info("no writable cgroup v2: a workspace's reset and delete kill its commands' process groups only")
		}
	})
	if h.cgroups == "" {
		return ""
	}
	p := filepath.Join(h.cgroups, id)
	if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		h.logger.Warn("workspace cgroup: create", "workspace_id", id, "error", err.Error())
		return ""
	}
	return p
}

// removeCgroup kills what is left in workspace id's cgroup and removes it.
func (h *Host) removeCgroup(id, p string) {
	if p == "" {
		return
	}
	if err := server.RemoveCgroup(p); err != nil {
		h.logger.Warn("workspace cgroup: remove", "workspace_id", id, "error", err.Error())
	}
}

// Close stops every runtime and the listener. The host cannot be used again.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	all := h.served
	h.served = map[string]*served{}
	srv := h.httpSrv
	h.mu.Unlock()

	var wg sync.WaitGroup
	for id, s := range all {
		wg.Go(func() {
			s.srv.Close()
			h.removeCgroup(id, s.cgroup)
		})
	}
	wg.Wait()
	if h.cgroups != "" {
		_ = os.Remove(h.cgroups) // empty once every workspace's is gone
	}
	if srv == nil {
		return nil
	}
	// Runtime connections are hijacked WebSockets, already ended by the
	// runtime servers above; Close ends whatever is left.
	if err := srv.Close(); err != nil {
		return fmt.Errorf("runtime host: close: %w", err)
	}
	return nil
}

// route sends /w/{id}[/rest] to workspace id's runtime server, which sees
// the path /rest (or /).
func (h *Host) route(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/w/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	id, sub, _ := strings.Cut(rest, "/")
	h.mu.Lock()
	s := h.served[id]
	h.mu.Unlock()
	if s == nil {
		http.Error(w, "workspace runtime not found", http.StatusNotFound)
		return
	}
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path = "/" + sub
	u.RawPath = ""
	r2.URL = &u
	s.srv.ServeHTTP(w, r2)
}
