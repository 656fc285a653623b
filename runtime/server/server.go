// Package server is primer-runtime's WebSocket server: file operations and
// command execution confined to one workspace root. It runs as the sandbox's
// entrypoint (cmd/primer-runtime) or inside the platform's process for
// backends without isolation.
package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// TokenEnv is the environment variable that carries the runtime's token. It
// is removed from every command's environment.
const TokenEnv = "PRIMER_RUNTIME_TOKEN"

// defaultPath is PATH for commands when neither the runtime's own
// environment nor the configuration sets one.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Config configures a Server.
type Config struct {
	// Root is the workspace directory; every relative path is relative to
	// it. It is created if missing.
	Root string
	// FS is protocol.FSRoot (the default: every path inside Root) or
	// protocol.FSWhole (absolute paths reach the whole sandbox, and
	// user.ensure may add users to it). Whole only where the runtime's
	// file system is the workspace's own: a container, a pod, a machine.
	FS string
	// User is the sandbox user commands run as and created files belong to
	// when a request names none (a template's default user); empty means
	// the runtime's own. In whole-filesystem mode a user missing from the
	// sandbox is created at start, as user.ensure would.
	User string
	// EtcDir holds the passwd, group and shadow files users are read from
	// and user.ensure writes; empty means /etc. Tests point it elsewhere.
	EtcDir string
	// Token is the bearer token every connection must present.
	Token string
	// Env is the environment every command starts with, on top of PATH and
	// HOME defaults taken from the runtime's own environment.
	Env map[string]string
	// Logger receives connection and error logs; nil discards them.
	Logger *slog.Logger
	// MaxFileBytes limits read and write sizes; zero means
	// protocol.DefaultMaxFileBytes. state.commit skips larger files.
	MaxFileBytes int64
	// KillAllOnReset makes reset also kill(-1, SIGKILL): every process the
	// runtime may signal except itself and PID 1. Only for the runtime
	// serving under its own init in a container's PID namespace; as a host
	// process (the local backend runs it inside the platform) it would kill
	// everything the user runs.
	KillAllOnReset bool
	// Cgroup is an existing cgroup v2 directory that every exec starts in,
	// so reset kills what a command left running outside its process group
	// (setsid, daemons) too; its owner removes it with RemoveCgroup when
	// the workspace stops for good. Empty, or one that cannot be opened
	// (logged), means process groups only (cgroup.go).
	Cgroup string
	// StateGCEvery is how many state commits pass between two packs of the
	// history (state_gc.go); zero means 100.
	StateGCEvery int
	// WriteTimeout bounds writing one frame to a client; zero means
	// DefaultWriteTimeout. A client that stops reading for longer loses
	// its connection (and its running execs), instead of holding that
	// writer, and every writer queued behind it, forever.
	WriteTimeout time.Duration
}

// DefaultWriteTimeout is Config.WriteTimeout's default: far longer than a
// live client takes to drain a frame, short enough that a stuck one does
// not pin the connection's goroutines and processes for long.
const DefaultWriteTimeout = 30 * time.Second

// Server serves the runtime protocol over WebSocket. It is safe for
// concurrent use; each connection is served by its own ServeHTTP call.
type Server struct {
	log       *slog.Logger
	root      *os.Root
	rootPath  string // absolute, symlinks resolved: the bound for exec cwd
	tokenHash [sha256.Size]byte
	env       map[string]string
	maxFile   int64
	killAll   bool
	writeTO   time.Duration // bounds one frame's write (Config.WriteTimeout)
	whole     bool          // absolute paths reach the whole sandbox (Config.FS)
	etcDir    string        // where passwd and group are (Config.EtcDir)
	user      string        // the default user (Config.User)

	// usersMu serialises reading and appending to the account files, so
	// two user.ensure calls cannot both add a user.
	usersMu sync.Mutex
	// ownerNames names the owners of described files (owners.go).
	ownerNames ownerCache

	// stateMu serialises the state operations and reset: parallel tool
	// calls must give a linear history. state is the open history (nil
	// until first used, after a reset, or when there is none).
	stateMu sync.Mutex
	state   *stateRepo
	// stateCommits counts the commits since the history was last packed
	// (state_gc.go); gcEvery is how many trigger the next pack.
	stateCommits int
	gcEvery      int

	// cg is the workspace's cgroup, nil without one (cgroup.go).
	cg *cgroup

	// procs are the processes that outlive connections (proc.go).
	procs procTable
	// listeners are the gateway.listen ports (listen.go).
	listeners listeners

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup // one per connection being served

	// ownProcess is set by ListenAndServe: the runtime is a process of its
	// own, which the shutdown op may stop (shutdown.go). stop is closed,
	// once, when a client asked it to.
	ownProcess atomic.Bool
	stop       chan struct{}
	stopOnce   sync.Once
}

// New validates cfg, fills defaults and opens the root.
func New(cfg Config) (*Server, error) {
	if cfg.Root == "" {
		return nil, errs.Field("root", "runtime server: root is required")
	}
	if cfg.Token == "" {
		return nil, errs.Field("token", "runtime server: token is required")
	}
	if cfg.MaxFileBytes < 0 {
		return nil, errs.Field("max_file_bytes", "runtime server: max file bytes must not be negative")
	}
	if cfg.MaxFileBytes == 0 {
		cfg.MaxFileBytes = protocol.DefaultMaxFileBytes
	}
	if cfg.WriteTimeout < 0 {
		return nil, errs.Field("write_timeout", "runtime server: write timeout must not be negative")
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	switch cfg.FS {
	case "":
		cfg.FS = protocol.FSRoot
	case protocol.FSRoot, protocol.FSWhole:
	default:
		return nil, errs.Field("fs", "runtime server: fs %q: want %s or %s", cfg.FS, protocol.FSRoot, protocol.FSWhole)
	}
	if cfg.EtcDir == "" {
		cfg.EtcDir = "/etc"
	}
	for k := range cfg.Env {
		if err := checkEnvKey(k); err != nil {
			return nil, errs.Field("env", "runtime server: %v", err)
		}
	}
	abs, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("runtime server: root %s: %w", cfg.Root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("runtime server: root %s: %w", abs, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("runtime server: root %s: %w", abs, err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("runtime server: root %s: %w", real, err)
	}
	env := map[string]string{"PATH": defaultPath, "HOME": real}
	for _, k := range []string{"PATH", "HOME"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	for k, v := range cfg.Env {
		env[k] = v
	}
	delete(env, TokenEnv)
	var cg *cgroup
	if cfg.Cgroup != "" {
		if cg, err = openCgroup(cfg.Cgroup); err != nil {
			cfg.Logger.Warn("runtime: no cgroup; reset kills process groups only", "error", err.Error())
		}
	}
	s := &Server{
		stop:      make(chan struct{}),
		cg:        cg,
		log:       cfg.Logger,
		root:      root,
		rootPath:  real,
		tokenHash: sha256.Sum256([]byte(cfg.Token)),
		env:       env,
		maxFile:   cfg.MaxFileBytes,
		killAll:   cfg.KillAllOnReset,
		gcEvery:   cfg.StateGCEvery,
		writeTO:   cfg.WriteTimeout,
		whole:     cfg.FS == protocol.FSWhole,
		etcDir:    cfg.EtcDir,
		user:      cfg.User,
		conns:     map[*conn]struct{}{},
	}
	if cfg.User != "" && s.whole {
		// A template's user need not be in its image.
		res, err := s.ensureUser(context.Background(), &protocol.Request{User: cfg.User})
		if err != nil {
			cfg.Logger.Warn("runtime: default user missing and not created", "user", cfg.User, "error", err.Error())
		} else {
			u := res.(protocol.UserInfo)
			if u.Created {
				cfg.Logger.Info("runtime: created the default user", "user", cfg.User, "uid", u.UID)
			}
			// The workspace is the default user's to write in; a root the
			// backend made (a volume, owned by root) is given to it.
			if fi, err := os.Stat(real); err == nil && fi.Sys().(*syscall.Stat_t).Uid == 0 && u.UID != 0 {
				if err := os.Chown(real, u.UID, u.GID); err != nil {
					cfg.Logger.Warn("runtime: workspace root not given to the default user", "user", cfg.User, "error", err.Error())
				}
			}
		}
	}
	return s, nil
}

// ServeHTTP accepts a WebSocket on any path after checking the bearer
// token. GET of a path ending in /healthz without an upgrade answers "ok"
// without a token so orchestrators can probe the process; the suffix match
// keeps it working behind a router that mounts the server under a prefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if (r.URL.Path == "/healthz" || strings.HasSuffix(r.URL.Path, "/healthz")) && !isUpgrade(r) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok")
		return
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="primer-runtime"`)
		http.Error(w, "runtime: missing or wrong bearer token", http.StatusUnauthorized)
		return
	}
	if !offers(r, protocol.Version) {
		http.Error(w, "runtime: the client must offer WebSocket subprotocol "+protocol.Version, http.StatusBadRequest)
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:    []string{protocol.Version},
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		s.log.Debug("runtime: websocket accept failed", "error", err)
		return
	}
	ws.SetReadLimit(protocol.FrameLimit(s.maxFile))
	c := newConn(s, ws)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close(websocket.StatusGoingAway, "runtime shutting down")
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	s.log.Debug("runtime: connection opened", "remote_addr", r.RemoteAddr)
	c.serve()
	s.log.Debug("runtime: connection closed", "remote_addr", r.RemoteAddr)
}

// authorized compares the bearer token in constant time. Both sides are
// hashed first so the comparison does not even leak the token's length.
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	got := sha256.Sum256([]byte(h[len(prefix):]))
	return subtle.ConstantTimeCompare(got[:], s.tokenHash[:]) == 1
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

func offers(r *http.Request, proto string) bool {
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(h, ",") {
			if strings.TrimSpace(p) == proto {
				return true
			}
		}
	}
	return false
}

// Close closes every connection, killing the process groups of their
// running commands, and waits for them to end. New connections are refused.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	// Listeners first: an accept loop is one of the waited goroutines.
	s.listeners.close()
	for _, c := range conns {
		c.shutdown()
	}
	s.wg.Wait()
	s.procs.close()
	s.stateMu.Lock()
	s.dropState()
	s.stateMu.Unlock()
	if s.cg != nil {
		_ = s.cg.dir.Close()
	}
	return s.root.Close()
}

// ListenAndServe serves s on addr until ctx ends or a client sends the
// shutdown op, then closes s and stops the listener. It returns nil after
// a clean stop.
func ListenAndServe(ctx context.Context, addr string, s *Server) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("runtime: listen %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	fsMode := protocol.FSRoot
	if s.whole {
		fsMode = protocol.FSWhole
	}
	s.log.Info("runtime listening", "addr", ln.Addr().String(), "root", s.rootPath, "fs", fsMode, "protocol", protocol.Version)
	errc := make(chan error, 1)
	s.ownProcess.Store(true)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		_ = s.Close()
		return fmt.Errorf("runtime: serve %s: %w", addr, err)
	case <-ctx.Done():
	case <-s.stop:
	}
	// Hijacked WebSocket connections are not tracked by http.Server: close
	// them (and their processes) first, then stop accepting.
	_ = s.Close()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("runtime: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("runtime: serve %s: %w", addr, err)
	}
	s.log.Info("runtime stopped", "addr", ln.Addr().String())
	return nil
}

func checkEnvKey(k string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Errorf("env name %q: must be non-empty without '=' or NUL", k)
	}
	return nil
}
