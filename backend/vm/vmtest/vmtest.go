// Package vmtest starts real SSH servers (Debian's openssh-server) as test
// machines for the vm backend: Docker containers of the image
// primer/sshd-host:1.0, which `make images` (deploy/images/build.sh) builds
// from Debian's packages. Each host has host keys of its own and lets root
// log in with the tests' key. Outside CI a test without Docker or the image
// skips with a message saying how to get them; with CI set it fails.
package vmtest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/internal/testenv"
)

// Image is the test machine's image, built by `make images`.
const Image = "primer/sshd-host:1.0"

// label marks the containers and networks this package makes, and
// startedLabel holds when (Unix seconds), so a later run removes what a
// killed one left once it is older than staleAfter.
const (
	label        = "primer.vmtest=1"
	startedLabel = "primer.vmtest.started"
	staleAfter   = 3 * time.Hour
)

// readyTimeout bounds the wait for a host's sshd to answer after a start,
// restart or key rotation.
const readyTimeout = 30 * time.Second

// Options shape a host.
type Options struct {
	// Network is a Docker network (from NewNetwork) the host joins besides
	// the default bridge, where other hosts reach it by its name.
	Network string
	// Hidden hosts publish no port: the platform reaches them only through a
	// jump host on the same Network. Their Addr is "<name>:22", a name only
	// Docker's DNS on that network resolves.
	Hidden bool
	// AuthorizedKeys replaces the tests' key (KeyPair) as root's
	// authorized_keys, in authorized_keys format.
	AuthorizedKeys string
}

// Host is a running test machine.
type Host struct {
	ID   string // container id
	Name string // container name, and host name on Options.Network
	// Addr is where the platform connects: "127.0.0.1:<port>" published on
	// this machine's loopback, or "<name>:22" for a Hidden host.
	Addr string
	// HostKey is the host's ed25519 key now, and KnownHostsLine the
	// known_hosts line naming Addr with it. RotateHostKey changes both.
	HostKey        ssh.PublicKey
	KnownHostsLine string

	opts    Options
	stopped bool
}

// Start starts a host and waits until its sshd answers with the host's key.
// It is stopped when t ends. Without Docker or the image t skips (fails in
// CI).
func Start(t *testing.T, opts Options) *Host {
	t.Helper()
	Require(t)
	_, pub := KeyPair(t)
	keys := opts.AuthorizedKeys
	if keys == "" {
		keys = string(ssh.MarshalAuthorizedKey(pub))
	}
	h := &Host{Name: "primer-vmtest-" + randomHex(5), opts: opts}
	args := []string{"run", "-d", "--init", "--name", h.Name, "--hostname", h.Name, "--label", label, "--label", started(),
		"-e", "AUTHORIZED_KEYS=" + strings.TrimSpace(keys)}
	if opts.Network != "" {
		args = append(args, "--network", opts.Network)
	}
	var port int
	var out string
	var err error
	// A port chosen free may be taken before Docker binds it; try others.
	for attempt := 0; attempt < 5; attempt++ {
		a := args
		if !opts.Hidden {
			// A fixed host port (not Docker's random one) survives Restart.
			port = freePort(t)
			a = append(a, "-p", "127.0.0.1:"+strconv.Itoa(port)+":22")
		}
		a = append(a, Image)
		out, err = docker(context.Background(), nil, a...)
		if err == nil || opts.Hidden || !strings.Contains(out, "already") {
			break
		}
		_, _ = docker(context.Background(), nil, "rm", "-f", h.Name)
	}
	if err != nil {
		t.Fatalf("vmtest: docker run %s: %v: %s", Image, err, out)
	}
	h.ID = strings.TrimSpace(out)
	t.Cleanup(func() { h.Stop(t) })
	if opts.Hidden {
		h.Addr = h.Name + ":22"
	} else {
		h.Addr = "127.0.0.1:" + strconv.Itoa(port)
	}
	h.waitReady(t)
	return h
}

// NewNetwork creates a Docker network for hosts that reach each other (a
// jump host and the hosts behind it), removed when t ends.
func NewNetwork(t *testing.T) string {
	t.Helper()
	Require(t)
	name := "primer-vmtest-net-" + randomHex(5)
	if out, err := docker(context.Background(), nil, "network", "create", "--label", label, "--label", started(), name); err != nil {
		t.Fatalf("vmtest: docker network create: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := docker(context.Background(), nil, "network", "rm", name); err != nil {
			t.Errorf("vmtest: docker network rm %s: %v: %s", name, err, out)
		}
	})
	return name
}

// Connection returns a vm.Connection to h as root with the tests' key and a
// known_hosts file (in t's temporary directory) holding h's key.
func (h *Host) Connection(t *testing.T) vm.Connection {
	t.Helper()
	return vm.Connection{
		User:           "root",
		PrivateKeyFile: KeyFile(t),
		KnownHosts:     KnownHostsFile(t, h),
		ConnectTimeout: "10s",
	}
}

// KnownHostsFile writes a known_hosts file naming hosts with their keys now
// and returns its path.
func KnownHostsFile(t *testing.T, hosts ...*Host) string {
	t.Helper()
	var b strings.Builder
	for _, h := range hosts {
		b.WriteString(h.KnownHostsLine + "\n")
	}
	p := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Exec runs cmd with sh as root inside h (not over SSH), for a test's setup
// and assertions, and returns its stdout and stderr. It fails t when cmd
// exits non-zero.
func (h *Host) Exec(t *testing.T, cmd string) string {
	t.Helper()
	out, err := docker(context.Background(), nil, "exec", h.ID, "sh", "-c", cmd)
	if err != nil {
		t.Fatalf("vmtest: exec on %s: %q: %v: %s", h.Name, cmd, err, out)
	}
	return out
}

// Logs returns sshd's log (LogLevel VERBOSE: every connection and
// authentication attempt).
func (h *Host) Logs(t *testing.T) string {
	t.Helper()
	// sshd -e logs to stderr: the log is both streams.
	out, err := exec.Command("docker", "logs", h.ID).CombinedOutput()
	if err != nil {
		t.Fatalf("vmtest: docker logs %s: %v: %s", h.Name, err, out)
	}
	return string(out)
}

// Restart restarts the machine, as a reboot: every process dies, files stay,
// sshd comes back with the same host key at the same Addr. It returns when
// sshd answers again.
func (h *Host) Restart(t *testing.T) {
	t.Helper()
	if out, err := docker(context.Background(), nil, "restart", "-t", "1", h.ID); err != nil {
		t.Fatalf("vmtest: docker restart %s: %v: %s", h.Name, err, out)
	}
	h.waitReady(t)
}

// KillSSHD kills every sshd process on h (the listener and the sessions'),
// leaving the machine and its other processes running: connections drop and
// new ones are refused. Restart brings sshd back.
func (h *Host) KillSSHD(t *testing.T) {
	t.Helper()
	h.Exec(t, "pkill -KILL -x sshd; for i in $(seq 200); do pgrep -x sshd >/dev/null || exit 0; sleep 0.05; done; "+
		"echo sshd still running; ps -ef; exit 1")
}

// Pause freezes every process of h (docker pause): the host stops
// answering without closing a connection, as a machine that hangs or drops
// off the network. Unpause thaws it.
func (h *Host) Pause(t *testing.T) {
	t.Helper()
	if out, err := docker(context.Background(), nil, "pause", h.ID); err != nil {
		t.Fatalf("vmtest: docker pause %s: %v: %s", h.Name, err, out)
	}
}

// Unpause thaws a host Pause froze.
func (h *Host) Unpause(t *testing.T) {
	t.Helper()
	if out, err := docker(context.Background(), nil, "unpause", h.ID); err != nil {
		t.Fatalf("vmtest: docker unpause %s: %v: %s", h.Name, err, out)
	}
}

// RotateHostKey gives h new host keys and makes sshd use them: the
// man-in-the-middle case for a known_hosts file written before. HostKey and
// KnownHostsLine change to the new key.
func (h *Host) RotateHostKey(t *testing.T) {
	t.Helper()
	old := h.HostKey
	// SIGHUP makes the sshd listener re-execute itself, reading the keys.
	h.Exec(t, "rm -f /etc/ssh/ssh_host_* && ssh-keygen -A >/dev/null && pkill -HUP -o -x sshd")
	h.waitReady(t)
	if bytes.Equal(old.Marshal(), h.HostKey.Marshal()) {
		t.Fatalf("vmtest: %s still presents its old host key", h.Name)
	}
}

// Stop removes the machine. It is safe to call twice.
func (h *Host) Stop(t *testing.T) {
	t.Helper()
	if h.stopped {
		return
	}
	h.stopped = true
	if out, err := docker(context.Background(), nil, "rm", "-f", "-v", h.ID); err != nil {
		t.Errorf("vmtest: docker rm %s: %v: %s", h.Name, err, out)
	}
}

// waitReady waits until sshd on h presents the host key in its ed25519 key
// file (asked from inside the host with ssh-keyscan, so it works for Hidden
// hosts too), then records that key.
func (h *Host) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	const probe = `f=/etc/ssh/ssh_host_ed25519_key.pub; [ -f $f ] || exit 1; ` +
		`want=$(cut -d' ' -f2 $f); got=$(ssh-keyscan -T 2 -t ed25519 127.0.0.1 2>/dev/null | cut -d' ' -f3); ` +
		`[ -n "$got" ] && [ "$got" = "$want" ] && cat $f`
	var last string
	for {
		out, err := docker(context.Background(), nil, "exec", h.ID, "sh", "-c", probe)
		if err == nil {
			key, _, _, _, perr := ssh.ParseAuthorizedKey([]byte(out))
			if perr != nil {
				t.Fatalf("vmtest: %s: parse host key %q: %v", h.Name, out, perr)
			}
			h.HostKey = key
			h.KnownHostsLine = knownhosts.Line([]string{knownhosts.Normalize(h.Addr)}, key)
			if h.opts.Hidden || h.answers() {
				return
			}
		}
		last = out
		if time.Now().After(deadline) {
			logs, _ := exec.Command("docker", "logs", h.ID).CombinedOutput()
			t.Fatalf("vmtest: sshd on %s not ready after %s (last probe: %q); logs:\n%s", h.Name, readyTimeout, last, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answers reports whether an SSH banner comes back on h.Addr from this
// machine (through Docker's port publishing).
func (h *Host) answers() bool {
	c, err := net.DialTimeout("tcp", h.Addr, 2*time.Second)
	if err != nil {
		return false
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 4)
	_, err = c.Read(buf)
	return err == nil && string(buf) == "SSH-"
}

// KeyPair returns the tests' client key, made once per test process.
func KeyPair(t testing.TB) (ssh.Signer, ssh.PublicKey) {
	t.Helper()
	k, err := keys()
	if err != nil {
		t.Fatalf("vmtest: generate key: %v", err)
	}
	return k.signer, k.signer.PublicKey()
}

// KeyFile writes the tests' private key to a file of mode 0600 in t's
// temporary directory and returns its path.
func KeyFile(t testing.TB) string {
	t.Helper()
	k, err := keys()
	if err != nil {
		t.Fatalf("vmtest: generate key: %v", err)
	}
	p := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(p, k.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// NewKeyFile writes a new private key, one no host accepts, and returns
// its path.
func NewKeyFile(t testing.TB) string {
	t.Helper()
	k, err := newKey()
	if err != nil {
		t.Fatalf("vmtest: generate key: %v", err)
	}
	p := filepath.Join(t.TempDir(), "id_other")
	if err := os.WriteFile(p, k.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type key struct {
	signer ssh.Signer
	pem    []byte
}

var keys = sync.OnceValues(newKey)

func newKey() (key, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return key{}, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "primer vmtest")
	if err != nil {
		return key{}, err
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return key{}, err
	}
	return key{signer: s, pem: pem.EncodeToMemory(block)}, nil
}

// Require skips t (fails it in CI) unless Docker answers and has Image.
func Require(t testing.TB) {
	t.Helper()
	if err := available(); err != nil {
		testenv.Missing(t, "%v", err)
	}
}

var available = sync.OnceValue(func() error {
	if _, err := exec.LookPath("docker"); err != nil {
		return fmt.Errorf("vmtest: the docker CLI is not on PATH; install it and start dockerd with `deploy/ci/engines.sh` (as root)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := docker(ctx, nil, "info", "--format", "{{.ServerVersion}}"); err != nil {
		return fmt.Errorf("vmtest: Docker does not answer (%v: %s); start it with `deploy/ci/engines.sh` (as root)", err, strings.TrimSpace(out))
	}
	if _, err := docker(ctx, nil, "image", "inspect", Image); err != nil {
		return fmt.Errorf("vmtest: Docker has no image %s; build it with `make images`", Image)
	}
	removeStale(ctx)
	return nil
})

func started() string { return startedLabel + "=" + strconv.FormatInt(time.Now().Unix(), 10) }

// removeStale removes the hosts and networks of runs that ended without
// cleaning up (killed), once older than staleAfter: no test still uses them.
// It is best effort.
func removeStale(ctx context.Context) {
	format := `{{.ID}} {{.Label "` + startedLabel + `"}}`
	stale := func(list ...string) []string {
		out, err := docker(ctx, nil, append(list, "--filter", "label="+label, "--format", format)...)
		if err != nil {
			return nil
		}
		var ids []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			id, at, _ := strings.Cut(l, " ")
			sec, err := strconv.ParseInt(at, 10, 64)
			if id != "" && err == nil && time.Since(time.Unix(sec, 0)) > staleAfter {
				ids = append(ids, id)
			}
		}
		return ids
	}
	if ids := stale("container", "ls", "-a"); len(ids) > 0 {
		_, _ = docker(ctx, nil, append([]string{"rm", "-f", "-v"}, ids...)...)
	}
	if ids := stale("network", "ls"); len(ids) > 0 {
		_, _ = docker(ctx, nil, append([]string{"network", "rm"}, ids...)...)
	}
}

// docker runs the docker CLI and returns its stdout, or its stderr as well
// when it fails.
func docker(ctx context.Context, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

// freePort returns a TCP port free on 127.0.0.1 now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
