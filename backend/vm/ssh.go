package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/primerhq/primer/errs"
)

// Connection is the provider's `connection` document: how the platform
// reaches every host of a vm provider over SSH.
//
// The private key is one of private_key (the PEM itself, a member's
// inline secret), private_key_file and private_key_env (a file or an
// environment variable of the platform's host: an admin's); the host keys
// are known_hosts_data (known_hosts lines, inline) or known_hosts (a file
// of the platform's host, which trust_on_first_use writes to: an admin's).
type Connection struct {
	User            string    `json:"user" access:"any"`
	Port            int       `json:"port,omitempty" access:"any,endpoint"` // default 22
	PrivateKey      string    `json:"private_key,omitempty" access:"secret"`
	PrivateKeyFile  string    `json:"private_key_file,omitempty" access:"admin:path"`
	PrivateKeyEnv   string    `json:"private_key_env,omitempty" access:"admin:env"` // env var holding the PEM
	KnownHosts      string    `json:"known_hosts,omitempty" access:"admin:path"`
	KnownHostsData  string    `json:"known_hosts_data,omitempty" access:"secret"`
	TrustOnFirstUse bool      `json:"trust_on_first_use,omitempty" access:"admin:hostfile"`
	Jump            *JumpHost `json:"jump,omitempty" access:"any"`
	ConnectTimeout  string    `json:"connect_timeout,omitempty" access:"any"` // Go duration, default 10s
}

// JumpHost is a bastion the platform connects through to reach the hosts. It
// is checked against the same known_hosts and authenticated with the same key.
type JumpHost struct {
	Address string `json:"address" access:"any,addr"`
	User    string `json:"user,omitempty" access:"any"`          // default: Connection.User
	Port    int    `json:"port,omitempty" access:"any,endpoint"` // default 22
}

// defaultConnectTimeout bounds the TCP dial and the SSH handshake of one host.
const defaultConnectTimeout = 10 * time.Second

// maxSessions bounds the sessions (commands, SFTP) open at once on one
// connection: OpenSSH refuses more than its MaxSessions, 10 by default, and
// a refused session must wait rather than fail. Tunnelled TCP connections
// are not sessions and are not bounded.
const maxSessions = 8

// maxRefusals is how many times a session the host refused is asked for
// again (after 10 ms, 20 ms, ...: about 2 s in all) before giving up.
const maxRefusals = 20

// keepaliveInterval is how often an idle connection is probed, so a host that
// went away is noticed without waiting for the kernel's TCP timeouts.
const keepaliveInterval = 15 * time.Second

// Validate checks c, naming the field at fault under fieldPrefix (e.g.
// "spec.connection").
func (c Connection) Validate(fieldPrefix string) error {
	f := func(name string) string { return fieldPrefix + "." + name }
	if strings.TrimSpace(c.User) == "" {
		return errs.Field(f("user"), "is required")
	}
	if c.Port < 0 || c.Port > 65535 {
		return errs.Field(f("port"), "must be between 1 and 65535")
	}
	switch {
	case c.KnownHosts != "" && c.KnownHostsData != "":
		return errs.Field(f("known_hosts_data"), "set either known_hosts_data or known_hosts, not both")
	case c.KnownHosts == "" && c.KnownHostsData == "":
		return errs.Field(f("known_hosts_data"), "is required (the hosts' known_hosts lines), or known_hosts: host keys are always verified")
	case c.KnownHostsData != "" && c.TrustOnFirstUse:
		return errs.Field(f("trust_on_first_use"), "records keys in the known_hosts file; it needs known_hosts, not known_hosts_data")
	case c.KnownHostsData != "":
		if err := checkKnownHostsData(c.KnownHostsData); err != nil {
			return errs.Field(f("known_hosts_data"), "%v", err)
		}
	}
	if c.KnownHosts != "" && !c.TrustOnFirstUse {
		if _, err := os.Stat(c.KnownHosts); err != nil {
			return errs.Field(f("known_hosts"), "cannot read %s: %v (set trust_on_first_use to create it)", c.KnownHosts, err)
		}
	}
	if c.ConnectTimeout != "" {
		d, err := time.ParseDuration(c.ConnectTimeout)
		if err != nil || d <= 0 {
			return errs.Field(f("connect_timeout"), "must be a positive Go duration such as 10s, got %q", c.ConnectTimeout)
		}
	}
	if c.Jump != nil {
		if strings.TrimSpace(c.Jump.Address) == "" {
			return errs.Field(f("jump.address"), "is required")
		}
		if c.Jump.Port < 0 || c.Jump.Port > 65535 {
			return errs.Field(f("jump.port"), "must be between 1 and 65535")
		}
	}
	if _, err := c.signer(fieldPrefix); err != nil {
		return err
	}
	return nil
}

// signer reads and parses the private key, with errors naming the field.
func (c Connection) signer(fieldPrefix string) (ssh.Signer, error) {
	var pem []byte
	given := 0
	for _, v := range []string{c.PrivateKey, c.PrivateKeyFile, c.PrivateKeyEnv} {
		if v != "" {
			given++
		}
	}
	switch {
	case given > 1:
		return nil, errs.Field(fieldPrefix+".private_key", "set one of private_key, private_key_file and private_key_env")
	case c.PrivateKey != "":
		pem = []byte(c.PrivateKey)
	case c.PrivateKeyFile != "":
		b, err := os.ReadFile(c.PrivateKeyFile)
		if err != nil {
			return nil, errs.Field(fieldPrefix+".private_key_file", "cannot read %s: %v", c.PrivateKeyFile, err)
		}
		pem = b
	case c.PrivateKeyEnv != "":
		v, ok := os.LookupEnv(c.PrivateKeyEnv)
		if !ok || v == "" {
			return nil, errs.Field(fieldPrefix+".private_key_env", "environment variable %s is not set", c.PrivateKeyEnv)
		}
		pem = []byte(v)
	default:
		return nil, errs.Field(fieldPrefix+".private_key", "a private key is required: set private_key (the PEM), or private_key_file or private_key_env")
	}
	s, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		// The parse error never quotes the key material.
		field := fieldPrefix + ".private_key"
		switch {
		case c.PrivateKeyFile != "":
			field = fieldPrefix + ".private_key_file"
		case c.PrivateKeyEnv != "":
			field = fieldPrefix + ".private_key_env"
		}
		return nil, errs.Field(field, "cannot parse the private key (an unencrypted OpenSSH or PEM key is needed): %v", err)
	}
	return s, nil
}

func (c Connection) timeout() time.Duration {
	if d, err := time.ParseDuration(c.ConnectTimeout); err == nil && d > 0 {
		return d
	}
	return defaultConnectTimeout
}

// hostPort adds the default port to addr when it has none.
func hostPort(addr string, port int) string {
	if port == 0 {
		port = 22
	}
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(strings.Trim(addr, "[]"), strconv.Itoa(port))
}

// HostKeyError is the refusal of a host whose key is not in known_hosts, or
// differs from the one there. It happens during the key exchange, before
// any credential, command or data is sent.
type HostKeyError struct {
	Addr       string
	KnownHosts string
	Changed    bool // the host is known with another key: possible man-in-the-middle
}

func (e *HostKeyError) Error() string {
	if e.Changed {
		return fmt.Sprintf("host key of %s does not match known_hosts %s (possible man-in-the-middle); connection refused, nothing sent", e.Addr, e.KnownHosts)
	}
	return fmt.Sprintf("host %s is not in known_hosts %s; connection refused, nothing sent (add its key, or set trust_on_first_use)", e.Addr, e.KnownHosts)
}

// AuthError is a host refusing the platform's key for the user.
type AuthError struct {
	User string
	Addr string
	Err  error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("ssh %s@%s: authentication refused", e.User, e.Addr)
}

// Unwrap returns the SSH library's error.
func (e *AuthError) Unwrap() error { return e.Err }

// Dialer holds one SSH client per host address, reused by every caller and
// re-dialled when it broke (the host rebooted, its sshd restarted).
type Dialer struct {
	conn   Connection
	signer ssh.Signer
	hosts  *knownHosts
	logger *slog.Logger

	mu       sync.Mutex
	closed   bool
	clients  map[string]*Client
	forwards map[string]*forward
	jump     *Client // the connection to the jump host, when there is one
}

// NewDialer validates c and returns a Dialer for it. No connection is made
// until Client is called.
func NewDialer(c Connection, logger *slog.Logger) (*Dialer, error) {
	if err := c.Validate("connection"); err != nil {
		return nil, err
	}
	s, err := c.signer("connection")
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	d := &Dialer{
		conn:     c,
		signer:   s,
		hosts:    &knownHosts{path: c.KnownHosts, data: c.KnownHostsData, tofu: c.TrustOnFirstUse},
		logger:   logger,
		clients:  map[string]*Client{},
		forwards: map[string]*forward{},
	}
	return d, nil
}

// Client returns the client of the host at addr ("host" or "host:port"),
// connecting first when there is no live connection to it. A refused host
// key is a *HostKeyError (of kind errs.Forbidden: not retried), a refused
// user key an *AuthError (errs.Unavailable), an unreachable host an
// errs.Unavailable error; errors.As finds the typed ones.
func (d *Dialer) Client(ctx context.Context, addr string) (*Client, error) {
	c, err := d.entry(hostPort(addr, d.conn.Port))
	if err != nil {
		return nil, err
	}
	// A connection kept from before is probed (one round trip): a host that
	// rebooted or lost its sshd since is found here, not in the caller's
	// next step.
	c.mu.Lock()
	kept := c.cur
	c.mu.Unlock()
	k, err := c.live(ctx)
	if err != nil {
		return nil, err
	}
	if k == kept && !ping(k, d.conn.timeout()) {
		c.broken(k)
		if _, err := c.live(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// entry returns the Client of addr, made once per address.
func (d *Dialer) entry(addr string) (*Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errs.E(errs.Unavailable, "ssh %s: dialer closed", addr)
	}
	c, ok := d.clients[addr]
	if !ok {
		c = &Client{d: d, addr: addr, user: d.conn.User, sessions: make(chan struct{}, maxSessions)}
		d.clients[addr] = c
	}
	return c, nil
}

// jumpClient returns the client of the jump host, made once.
func (d *Dialer) jumpClient() *Client {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.jump == nil {
		j := d.conn.Jump
		user := j.User
		if user == "" {
			user = d.conn.User
		}
		d.jump = &Client{d: d, addr: hostPort(j.Address, j.Port), user: user, isJump: true, sessions: make(chan struct{}, maxSessions)}
	}
	return d.jump
}

func (d *Dialer) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// Close closes every connection and forward of d.
func (d *Dialer) Close() error {
	d.mu.Lock()
	d.closed = true
	clients := d.clients
	forwards := d.forwards
	jump := d.jump
	d.clients, d.forwards, d.jump = map[string]*Client{}, map[string]*forward{}, nil
	d.mu.Unlock()
	for _, f := range forwards {
		f.close()
	}
	for _, c := range clients {
		c.close()
	}
	if jump != nil {
		jump.close()
	}
	return nil
}

// Client is the platform's connection to one host. It stays valid across
// re-dials: each call uses the current SSH connection, dialling a new one
// when the last one broke.
type Client struct {
	d      *Dialer
	addr   string
	user   string
	isJump bool

	mu  sync.Mutex // serialises dials of this address
	cur *conn

	sessions chan struct{} // a slot per open session, up to maxSessions
}

// acquire takes a session slot, waiting for one while ctx lives.
func (c *Client) acquire(ctx context.Context) error {
	select {
	case c.sessions <- struct{}{}:
		return nil
	case <-ctx.Done():
		return errs.E(errs.KindOf(ctxErr(ctx)), "ssh %s: wait for a session: %w", c.addr, context.Cause(ctx))
	}
}

func (c *Client) release() { <-c.sessions }

// conn is one SSH connection; done is closed when it ends.
type conn struct {
	ssh  *ssh.Client
	done chan struct{}
}

func (k *conn) alive() bool {
	select {
	case <-k.done:
		return false
	default:
		return true
	}
}

// Addr is the host address ("host:port") of c.
func (c *Client) Addr() string { return c.addr }

// live returns a working connection, dialling when there is none.
func (c *Client) live(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && c.cur.alive() {
		return c.cur, nil
	}
	if c.d.isClosed() {
		return nil, errs.E(errs.Unavailable, "ssh %s: dialer closed", c.addr)
	}
	k, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.cur = k
	return k, nil
}

// broken drops k, so the next call dials again. It is called when an
// operation finds the connection dead before it ran anything.
func (c *Client) broken(k *conn) {
	c.mu.Lock()
	if c.cur == k {
		c.cur = nil
	}
	c.mu.Unlock()
	_ = k.ssh.Close()
}

// close ends the current connection for good.
func (c *Client) close() {
	c.mu.Lock()
	k := c.cur
	c.cur = nil
	c.mu.Unlock()
	if k != nil {
		_ = k.ssh.Close()
	}
}

// dial opens a new SSH connection to c.addr, through the jump host when
// there is one.
func (c *Client) dial(ctx context.Context) (*conn, error) {
	timeout := c.d.conn.timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var raw net.Conn
	var err error
	if c.d.conn.Jump != nil && !c.isJump {
		jump, jerr := c.d.jumpClient().live(ctx)
		if jerr != nil {
			return nil, fmt.Errorf("ssh %s: through jump host: %w", c.addr, jerr)
		}
		raw, err = jump.ssh.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			return nil, errs.E(errs.Unavailable, "ssh %s: dial through jump host %s: %w", c.addr, c.d.jumpClient().addr, err)
		}
	} else {
		var nd net.Dialer
		raw, err = nd.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			return nil, errs.E(errs.Unavailable, "ssh %s: %w", c.addr, err)
		}
	}

	hostKeyCallback, algorithms, err := c.d.hosts.callback(c.addr)
	if err != nil {
		_ = raw.Close()
		return nil, err
	}
	config := &ssh.ClientConfig{
		User:              c.user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(c.d.signer)},
		HostKeyCallback:   hostKeyCallback,
		HostKeyAlgorithms: algorithms,
		Timeout:           timeout,
	}
	// The handshake has no context of its own: bound it by the deadline and
	// by ctx being cancelled.
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Unix(1, 0)) })
	sc, chans, reqs, err := ssh.NewClientConn(raw, c.addr, config)
	stopped := stop()
	if err != nil {
		_ = raw.Close()
		var hk *HostKeyError
		if errors.As(err, &hk) {
			c.d.logger.Warn("ssh host key refused", "host", c.addr, "changed", hk.Changed, "known_hosts", hk.KnownHosts)
			// Retrying cannot make a refused host key right.
			return nil, errs.Wrap(errs.Forbidden, hk)
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			// A machine just made may not have the key installed yet:
			// retrying may help.
			return nil, errs.Wrap(errs.Unavailable, &AuthError{User: c.user, Addr: c.addr, Err: err})
		}
		if !stopped || ctx.Err() != nil {
			return nil, errs.E(errs.Unavailable, "ssh %s: handshake: %w", c.addr, context.Cause(ctx))
		}
		return nil, errs.E(errs.Unavailable, "ssh %s: handshake: %w", c.addr, err)
	}
	_ = raw.SetDeadline(time.Time{})
	k := &conn{ssh: ssh.NewClient(sc, chans, reqs), done: make(chan struct{})}
	go func() {
		_ = k.ssh.Wait()
		close(k.done)
	}()
	go keepalive(k, timeout)
	c.d.logger.Debug("ssh connected", "host", c.addr, "user", c.user)
	return k, nil
}

// keepalive probes k every keepaliveInterval and closes it when the host
// stops answering, so the next call dials again.
func keepalive(k *conn, timeout time.Duration) {
	t := time.NewTicker(keepaliveInterval)
	defer t.Stop()
	for {
		select {
		case <-k.done:
			return
		case <-t.C:
		}
		if !ping(k, timeout) {
			_ = k.ssh.Close()
			return
		}
	}
}

// ping sends one keepalive request and reports whether the host answered
// within timeout.
func ping(k *conn, timeout time.Duration) bool {
	answered := make(chan error, 1)
	go func() {
		_, _, err := k.ssh.SendRequest("keepalive@openssh.com", true, nil)
		answered <- err
	}()
	select {
	case err := <-answered:
		return err == nil
	case <-time.After(timeout):
		return false
	case <-k.done:
		return false
	}
}

// session opens a session on a live connection; end closes it and frees
// its slot. A connection found dead when opening (nothing ran yet) is
// dropped and dialled once more.
func (c *Client) session(ctx context.Context) (s *ssh.Session, end func(), err error) {
	if err := c.acquire(ctx); err != nil {
		return nil, nil, err
	}
	refusals := 0
	for attempt := 0; ; attempt++ {
		k, err := c.live(ctx)
		if err != nil {
			c.release()
			return nil, nil, err
		}
		s, err := openSession(ctx, k)
		if err == nil {
			return s, func() { _ = s.Close(); c.release() }, nil
		}
		var refused *ssh.OpenChannelError
		switch {
		case ctx.Err() != nil:
			c.release()
			return nil, nil, errs.E(errs.KindOf(ctxErr(ctx)), "ssh %s: open session: %w", c.addr, context.Cause(ctx))
		case errors.As(err, &refused) && k.alive():
			// The host refused the session (sshd counts a session closed
			// by this side until it has processed the close, so its
			// MaxSessions can be met briefly below maxSessions): the
			// connection is fine; try again shortly.
			refusals++
			if refusals > maxRefusals {
				c.release()
				return nil, nil, errs.E(errs.Unavailable, "ssh %s: open session: %w", c.addr, err)
			}
			select {
			case <-time.After(time.Duration(refusals) * 10 * time.Millisecond):
			case <-ctx.Done():
			}
			attempt--
			continue
		}
		c.broken(k)
		if attempt > 0 {
			c.release()
			return nil, nil, errs.E(errs.Unavailable, "ssh %s: open session: %w", c.addr, err)
		}
	}
}

// openSession opens a session on k, giving up when ctx ends (a host that
// went away silently does not answer until the keepalive notices).
func openSession(ctx context.Context, k *conn) (*ssh.Session, error) {
	type result struct {
		s   *ssh.Session
		err error
	}
	got := make(chan result, 1)
	go func() {
		s, err := k.ssh.NewSession()
		got <- result{s, err}
	}()
	select {
	case r := <-got:
		return r.s, r.err
	case <-ctx.Done():
		go func() {
			if r := <-got; r.s != nil {
				_ = r.s.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// Run runs cmd (a shell command line) on the host with stdin, and returns
// its stdout, stderr and exit code. A non-zero exit is not an error;
// failures of the transport are. When ctx ends the session is closed.
func (c *Client) Run(ctx context.Context, cmd string, stdin []byte) (stdout, stderr []byte, code int, err error) {
	s, end, err := c.session(ctx)
	if err != nil {
		return nil, nil, -1, err
	}
	defer end()
	var out, errb bytes.Buffer
	s.Stdout, s.Stderr = &out, &errb
	if stdin != nil {
		s.Stdin = bytes.NewReader(stdin)
	}
	done := make(chan error, 1)
	if err := s.Start(cmd); err != nil {
		return nil, nil, -1, errs.E(errs.Unavailable, "ssh %s: start command: %w", c.addr, err)
	}
	go func() { done <- s.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGKILL)
		_ = s.Close()
		// The output is read once its copying ended, which closing the
		// channel brings about.
		cut := errs.E(errs.KindOf(ctxErr(ctx)), "ssh %s: run: %w", c.addr, context.Cause(ctx))
		select {
		case <-done:
			return out.Bytes(), errb.Bytes(), -1, cut
		case <-time.After(time.Second):
			return nil, nil, -1, cut
		}
	}
	var exit *ssh.ExitError
	switch {
	case err == nil:
		return out.Bytes(), errb.Bytes(), 0, nil
	case errors.As(err, &exit):
		if exit.Signal() != "" && exit.ExitStatus() == 0 {
			return out.Bytes(), errb.Bytes(), 128 + signalNumber(exit.Signal()), nil
		}
		return out.Bytes(), errb.Bytes(), exit.ExitStatus(), nil
	default:
		// The connection ended before the command reported an exit
		// status: the host went away mid-command.
		return out.Bytes(), errb.Bytes(), -1, errs.E(errs.Unavailable, "ssh %s: run: %w", c.addr, err)
	}
}

// ctxErr gives ctx's end a kind: a deadline is a Timeout, a cancel Canceled.
func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errs.E(errs.Timeout, "deadline exceeded")
	}
	return errs.E(errs.Canceled, "canceled")
}

// signalNumber maps the SSH signal names to their usual Linux numbers.
func signalNumber(sig string) int {
	switch ssh.Signal(sig) {
	case ssh.SIGHUP:
		return 1
	case ssh.SIGINT:
		return 2
	case ssh.SIGQUIT:
		return 3
	case ssh.SIGABRT:
		return 6
	case ssh.SIGKILL:
		return 9
	case ssh.SIGSEGV:
		return 11
	case ssh.SIGPIPE:
		return 13
	case ssh.SIGALRM:
		return 14
	case ssh.SIGTERM:
		return 15
	}
	return 0
}
