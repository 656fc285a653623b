package vm_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/backend/vm/vmtest"
	"github.com/primerhq/primer/errs"
)

func sshDialer(t *testing.T, c vm.Connection) *vm.Dialer {
	t.Helper()
	d, err := vm.NewDialer(c, nil)
	if err != nil {
		t.Fatalf("NewDialer: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func sshCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestRun(t *testing.T) {
	h := vmtest.Start(t, vmtest.Options{})
	d := sshDialer(t, h.Connection(t))
	ctx := sshCtx(t)
	c, err := d.Client(ctx, h.Addr)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	tests := []struct {
		name           string
		cmd            string
		stdin          string
		stdout, stderr string
		code           int
	}{
		{"exit zero", "echo hello", "", "hello\n", "", 0},
		{"exit code and stderr", "echo out; echo err >&2; exit 3", "", "out\n", "err\n", 3},
		{"stdin", "tr a-z A-Z", "shout\n", "SHOUT\n", "", 0},
		{"killed by a signal", "kill -9 $$", "", "", "", 137},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdin []byte
			if tt.stdin != "" {
				stdin = []byte(tt.stdin)
			}
			out, errb, code, err := c.Run(ctx, tt.cmd, stdin)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(out) != tt.stdout || string(errb) != tt.stderr || code != tt.code {
				t.Errorf("Run(%q) = %q, %q, %d; want %q, %q, %d", tt.cmd, out, errb, code, tt.stdout, tt.stderr, tt.code)
			}
		})
	}

	// One connection carries concurrent commands; the Dialer hands out the
	// same Client for the address.
	var wg sync.WaitGroup
	errc := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _, code, err := c.Run(ctx, fmt.Sprintf("echo %d", i), nil)
			if err != nil || code != 0 || strings.TrimSpace(string(out)) != fmt.Sprint(i) {
				errc <- fmt.Errorf("run %d: %q %d %v", i, out, code, err)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	c2, err := d.Client(ctx, h.Addr)
	if err != nil || c2 != c {
		t.Errorf("second Client = %p, %v; want the same client %p", c2, err, c)
	}
	if n := strings.Count(h.Logs(t), "Accepted publickey"); n != 1 {
		t.Errorf("sshd accepted %d logins; want 1 connection for all commands", n)
	}

	// A command cut off by its context ends with the context's kind.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, _, _, err := c.Run(short, "sleep 30", nil); !errs.Is(err, errs.Timeout) {
		t.Errorf("Run past its deadline = %v; want a Timeout error", err)
	}
}

func TestEnsureFile(t *testing.T) {
	h := vmtest.Start(t, vmtest.Options{})
	d := sshDialer(t, h.Connection(t))
	ctx := sshCtx(t)
	c, err := d.Client(ctx, h.Addr)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	const p = "/var/lib/primer/runtime/bin-1"
	data := make([]byte, 3<<20+17) // several SFTP packets
	for i := range data {
		data[i] = byte(i * 7)
	}
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	remote := func() (sha, mode string) {
		f := strings.Fields(h.Exec(t, "sha256sum "+p+"; stat -c %a "+p))
		return f[0], f[2]
	}

	changed, err := c.EnsureFile(ctx, p, data, 0o755)
	if err != nil || !changed {
		t.Fatalf("first EnsureFile = %v, %v; want an upload", changed, err)
	}
	if sha, mode := remote(); sha != sum(data) || mode != "755" {
		t.Fatalf("remote file sha256 %s mode %s; want %s 755", sha, mode, sum(data))
	}
	mtime := h.Exec(t, "stat -c %Y.%i "+p)

	changed, err = c.EnsureFile(ctx, p, data, 0o755)
	if err != nil || changed {
		t.Fatalf("second EnsureFile = %v, %v; want unchanged", changed, err)
	}
	if got := h.Exec(t, "stat -c %Y.%i "+p); got != mtime {
		t.Errorf("the file was rewritten (%s -> %s) though its content matched", mtime, got)
	}

	// Same content, other mode: fixed in place.
	if changed, err = c.EnsureFile(ctx, p, data, 0o700); err != nil || changed {
		t.Fatalf("EnsureFile with a new mode = %v, %v; want unchanged content", changed, err)
	}
	if _, mode := remote(); mode != "700" {
		t.Errorf("mode %s; want 700", mode)
	}

	// New content replaces the file.
	data2 := append([]byte("v2 "), data[:1000]...)
	if changed, err = c.EnsureFile(ctx, p, data2, 0o755); err != nil || !changed {
		t.Fatalf("EnsureFile with new content = %v, %v; want an upload", changed, err)
	}
	if sha, mode := remote(); sha != sum(data2) || mode != "755" {
		t.Errorf("remote file sha256 %s mode %s; want %s 755", sha, mode, sum(data2))
	}

	// The checksum is verified on the host: a sha256sum that reports another
	// sum for the uploaded file makes the upload fail, and the file stays.
	h.Exec(t, `cat >/usr/local/bin/sha256sum <<'EOF'
#!/bin/sh
case "$*" in *.upload-*) echo "0000  $3"; exit 0;; esac
exec /usr/bin/sha256sum "$@"
EOF
chmod +x /usr/local/bin/sha256sum`)
	_, err = c.EnsureFile(ctx, p, []byte("v3"), 0o755)
	if err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("EnsureFile with a corrupt upload = %v; want a checksum error", err)
	}
	h.Exec(t, "rm /usr/local/bin/sha256sum")
	if sha, _ := remote(); sha != sum(data2) {
		t.Errorf("after a failed upload the file's sha256 is %s; want the previous %s", sha, sum(data2))
	}
	if left := h.Exec(t, "ls -A "+filepath.Dir(p)); strings.TrimSpace(left) != filepath.Base(p) {
		t.Errorf("directory holds %q; want only %s (no temporary files)", left, filepath.Base(p))
	}

	if _, err := c.EnsureFile(ctx, "relative/path", data, 0o644); !errs.Is(err, errs.Invalid) {
		t.Errorf("EnsureFile of a relative path = %v; want Invalid", err)
	}
}

// startHTTP serves /srv on the host's loopback only, port 8765, with
// python's http.server, and waits until it answers.
func startHTTP(t *testing.T, h *vmtest.Host) {
	t.Helper()
	h.Exec(t, "mkdir -p /srv && echo hello-from-host >/srv/hello.txt && "+
		"setsid -f python3 -m http.server 8765 --bind 127.0.0.1 --directory /srv >/dev/null 2>&1 && "+
		"for i in $(seq 100); do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8765))' 2>/dev/null && exit 0; sleep 0.1; done; exit 1")
}

func httpGet(url string) (string, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestDialRemoteAndForward(t *testing.T) {
	h := vmtest.Start(t, vmtest.Options{})
	startHTTP(t, h)
	d := sshDialer(t, h.Connection(t))
	ctx := sshCtx(t)
	c, err := d.Client(ctx, h.Addr)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}

	nc, err := c.DialRemote(ctx, "127.0.0.1:8765")
	if err != nil {
		t.Fatalf("DialRemote: %v", err)
	}
	fmt.Fprint(nc, "GET /hello.txt HTTP/1.0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		t.Fatalf("read response through DialRemote: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = nc.Close()
	if resp.StatusCode != 200 || string(body) != "hello-from-host\n" {
		t.Errorf("through DialRemote: %d %q", resp.StatusCode, body)
	}

	if _, err := c.DialRemote(ctx, "127.0.0.1:1"); !errs.Is(err, errs.Unavailable) {
		t.Errorf("DialRemote to a closed port = %v; want Unavailable", err)
	}

	url, err := d.Forward(ctx, "ws-1", h.Addr, "127.0.0.1:8765")
	if err != nil {
		t.Fatalf("Forward: %v", err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("Forward URL %q; want http://127.0.0.1:<port>", url)
	}
	for i := range 3 {
		if got, err := httpGet(url + "/hello.txt"); err != nil || got != "hello-from-host\n" {
			t.Fatalf("GET %d through the forward = %q, %v", i, got, err)
		}
	}
	again, err := d.Forward(ctx, "ws-1", h.Addr, "127.0.0.1:8765")
	if err != nil || again != url {
		t.Errorf("Forward again = %q, %v; want the same %q", again, err, url)
	}

	// The listener outlives the host's restart: the next connection goes
	// over a new SSH connection.
	h.Restart(t)
	startHTTP(t, h)
	if got, err := httpGet(url + "/hello.txt"); err != nil || got != "hello-from-host\n" {
		t.Fatalf("GET through the forward after a restart = %q, %v", got, err)
	}

	// Another target for the key replaces the listener.
	other, err := d.Forward(ctx, "ws-1", h.Addr, "127.0.0.1:8766")
	if err != nil || other == url {
		t.Fatalf("Forward to another port = %q, %v; want a new listener", other, err)
	}
	if _, err := httpGet(url + "/hello.txt"); err == nil {
		t.Errorf("GET through the replaced listener succeeded")
	}
	if _, err := httpGet(other + "/hello.txt"); err == nil {
		t.Errorf("GET through a forward to a closed port succeeded")
	}

	d.CloseForward("ws-1")
	if _, err := httpGet(other + "/hello.txt"); err == nil {
		t.Errorf("GET after CloseForward succeeded; want the listener closed")
	}
}

// authAttempts counts sshd's log lines that show a client asking to log in.
func authAttempts(log string) int {
	n := 0
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "publickey") || strings.Contains(l, "Accepted key") || strings.Contains(l, "Invalid user") {
			n++
		}
	}
	return n
}

func TestHostKeyChangedIsRefusedWithNothingSent(t *testing.T) {
	h := vmtest.Start(t, vmtest.Options{})
	conn := h.Connection(t)
	ctx := sshCtx(t)
	if _, err := sshDialer(t, conn).Client(ctx, h.Addr); err != nil {
		t.Fatalf("Client before the rotation: %v", err)
	}
	h.RotateHostKey(t)
	before := authAttempts(h.Logs(t))

	// Trust on first use does not change the verdict on a known host.
	for _, tofu := range []bool{false, true} {
		c := conn
		c.TrustOnFirstUse = tofu
		_, err := sshDialer(t, c).Client(ctx, h.Addr)
		var hk *vm.HostKeyError
		if !errors.As(err, &hk) || !hk.Changed || !errs.Is(err, errs.Forbidden) {
			t.Fatalf("tofu=%v: Client after the host key changed = %v; want a changed *HostKeyError of kind Forbidden", tofu, err)
		}
		if !strings.Contains(err.Error(), "man-in-the-middle") || !strings.Contains(err.Error(), conn.KnownHosts) {
			t.Errorf("error %q; want it to name the known_hosts file and a possible man-in-the-middle", err)
		}
	}
	if after := authAttempts(h.Logs(t)); after != before {
		t.Errorf("sshd logged %d authentication lines after the refusals (%d before); want none sent", after, before)
	}
	known, _ := os.ReadFile(conn.KnownHosts)
	if strings.Count(string(known), "\n") != 1 {
		t.Errorf("known_hosts changed: %q", known)
	}
}

func TestUnknownHost(t *testing.T) {
	h := vmtest.Start(t, vmtest.Options{})
	conn := h.Connection(t)
	ctx := sshCtx(t)
	if err := os.WriteFile(conn.KnownHosts, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	_, err := sshDialer(t, conn).Client(ctx, h.Addr)
	var hk *vm.HostKeyError
	if !errors.As(err, &hk) || hk.Changed || !errs.Is(err, errs.Forbidden) || !strings.Contains(err.Error(), "is not in known_hosts") {
		t.Fatalf("Client of an unknown host = %v; want an unknown-host *HostKeyError", err)
	}
	if n := authAttempts(h.Logs(t)); n != 0 {
		t.Errorf("sshd logged %d authentication lines; want none", n)
	}

	tofu := conn
	tofu.TrustOnFirstUse = true
	c, err := sshDialer(t, tofu).Client(ctx, h.Addr)
	if err != nil {
		t.Fatalf("Client with trust on first use: %v", err)
	}
	if out, _, _, err := c.Run(ctx, "echo ok", nil); err != nil || string(out) != "ok\n" {
		t.Fatalf("Run = %q, %v", out, err)
	}
	known, err := os.ReadFile(conn.KnownHosts)
	if err != nil || strings.TrimSpace(string(known)) != h.KnownHostsLine {
		t.Fatalf("known_hosts after the first use = %q, %v; want %q", known, err, h.KnownHostsLine)
	}

	// The recorded key now passes without trust on first use.
	if _, err := sshDialer(t, conn).Client(ctx, h.Addr); err != nil {
		t.Errorf("Client with the recorded key: %v", err)
	}
}

func TestTrustOnFirstUseCreatesTheFile(t *testing.T) {
	h := vmtest.Start(t, vmtest.Options{})
	conn := h.Connection(t)
	conn.KnownHosts = filepath.Join(t.TempDir(), "sub", "known_hosts")
	conn.TrustOnFirstUse = true
	ctx := sshCtx(t)
	d := sshDialer(t, conn)
	var wg sync.WaitGroup
	for range 4 { // concurrent first connections record one line
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := d.Client(ctx, h.Addr); err != nil {
				t.Errorf("Client: %v", err)
			}
		}()
	}
	wg.Wait()
	known, err := os.ReadFile(conn.KnownHosts)
	if err != nil || strings.TrimSpace(string(known)) != h.KnownHostsLine {
		t.Fatalf("known_hosts = %q, %v; want the one line %q", known, err, h.KnownHostsLine)
	}
}

func TestWrongUserKey(t *testing.T) {
	h := vmtest.Start(t, vmtest.Options{})
	conn := h.Connection(t)
	conn.PrivateKeyFile = vmtest.NewKeyFile(t)
	_, err := sshDialer(t, conn).Client(sshCtx(t), h.Addr)
	var ae *vm.AuthError
	if !errors.As(err, &ae) || !errs.Is(err, errs.Unavailable) || err.Error() != "ssh root@"+h.Addr+": authentication refused" {
		t.Fatalf("Client with a key the host does not accept = %v; want *AuthError", err)
	}
}

func TestJumpHost(t *testing.T) {
	network := vmtest.NewNetwork(t)
	jump := vmtest.Start(t, vmtest.Options{Network: network})
	target := vmtest.Start(t, vmtest.Options{Network: network, Hidden: true})
	ctx := sshCtx(t)

	conn := jump.Connection(t)
	conn.KnownHosts = vmtest.KnownHostsFile(t, jump, target)

	// The target's name resolves only on the Docker network.
	if _, err := sshDialer(t, conn).Client(ctx, target.Addr); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("Client of the hidden host without the jump = %v; want Unavailable", err)
	}

	conn.Jump = &vm.JumpHost{Address: jump.Addr}
	d := sshDialer(t, conn)
	c, err := d.Client(ctx, target.Addr)
	if err != nil {
		t.Fatalf("Client through the jump host: %v", err)
	}
	out, _, code, err := c.Run(ctx, "hostname", nil)
	if err != nil || code != 0 || strings.TrimSpace(string(out)) != target.Name {
		t.Fatalf("hostname through the jump = %q, %d, %v; want %s", out, code, err, target.Name)
	}
	if changed, err := c.EnsureFile(ctx, "/tmp/through-jump", []byte("x"), 0o600); err != nil || !changed {
		t.Errorf("EnsureFile through the jump = %v, %v", changed, err)
	}
	if got := target.Exec(t, "cat /tmp/through-jump"); got != "x" {
		t.Errorf("file on the target = %q", got)
	}

	// The target's host key is checked through the jump as well.
	conn.KnownHosts = vmtest.KnownHostsFile(t, jump)
	_, err = sshDialer(t, conn).Client(ctx, target.Addr)
	var hk *vm.HostKeyError
	if !errors.As(err, &hk) || hk.Changed {
		t.Errorf("Client of a target missing from known_hosts = %v; want an unknown-host *HostKeyError", err)
	}
}

func TestRestartRecovers(t *testing.T) {
	h := vmtest.Start(t, vmtest.Options{})
	d := sshDialer(t, h.Connection(t))
	ctx := sshCtx(t)
	c, err := d.Client(ctx, h.Addr)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	if _, _, code, err := c.Run(ctx, "echo kept >/root/kept", nil); err != nil || code != 0 {
		t.Fatalf("Run: %d %v", code, err)
	}
	h.Restart(t)

	// The Client from before the restart works again: its first command
	// finds the connection gone and dials a new one.
	out, _, _, err := c.Run(ctx, "cat /root/kept", nil)
	if err != nil || string(out) != "kept\n" {
		t.Fatalf("Run after the restart = %q, %v; want the file kept", out, err)
	}
	h.Restart(t)
	if c2, err := d.Client(ctx, h.Addr); err != nil || c2 != c {
		t.Fatalf("Client after a second restart = %p, %v", c2, err)
	}
}

func TestKillSSHD(t *testing.T) {
	h := vmtest.Start(t, vmtest.Options{})
	d := sshDialer(t, h.Connection(t))
	ctx := sshCtx(t)
	c, err := d.Client(ctx, h.Addr)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	h.KillSSHD(t)
	if _, err := d.Client(ctx, h.Addr); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("Client after sshd died = %v; want Unavailable", err)
	}
	if _, _, _, err := c.Run(ctx, "true", nil); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("Run after sshd died = %v; want Unavailable", err)
	}
	h.Restart(t)
	if _, _, code, err := c.Run(ctx, "true", nil); err != nil || code != 0 {
		t.Fatalf("Run after sshd came back = %d, %v", code, err)
	}
}

func TestUnreachableHost(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	conn := vm.Connection{User: "root", PrivateKeyFile: vmtest.KeyFile(t), KnownHosts: filepath.Join(t.TempDir(), "kh"), TrustOnFirstUse: true}
	_, err = sshDialer(t, conn).Client(sshCtx(t), addr)
	if !errs.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), addr) {
		t.Errorf("Client of a closed port = %v; want Unavailable naming %s", err, addr)
	}
}

// TestSessionsBeyondMaxSessions runs more commands and uploads at once than
// the host's MaxSessions (OpenSSH's default, 10): they wait for a session
// instead of failing, and the connection stays up.
func TestSessionsBeyondMaxSessions(t *testing.T) {
	h := vmtest.Start(t, vmtest.Options{})
	h.Exec(t, "sed -i 's/^MaxSessions.*/MaxSessions 10/' /etc/ssh/sshd_config.d/primer.conf && pkill -HUP -o -x sshd")
	h.RotateHostKey(t) // waits for the reloaded sshd (and gives it a new key, which Connection writes)
	d := sshDialer(t, h.Connection(t))
	ctx := sshCtx(t)
	c, err := d.Client(ctx, h.Addr)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 40)
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _, code, err := c.Run(ctx, fmt.Sprintf("sleep 0.2; echo %d", i), nil)
			if err != nil || code != 0 || strings.TrimSpace(string(out)) != fmt.Sprint(i) {
				errc <- fmt.Errorf("run %d: %q %d %v", i, out, code, err)
			}
		}()
	}
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.EnsureFile(ctx, fmt.Sprintf("/tmp/f%d", i), []byte(fmt.Sprint(i)), 0o644); err != nil {
				errc <- fmt.Errorf("ensure file %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if n := strings.Count(h.Logs(t), "Accepted publickey"); n != 1 {
		t.Errorf("sshd accepted %d logins; want all on 1 connection", n)
	}
}

// TestSilentHost: a host that stops answering without closing anything is
// found by the probe within the connect timeout, and reached again when it
// answers.
func TestSilentHost(t *testing.T) {
	h := vmtest.Start(t, vmtest.Options{})
	conn := h.Connection(t)
	conn.ConnectTimeout = "2s"
	d := sshDialer(t, conn)
	ctx := sshCtx(t)
	c, err := d.Client(ctx, h.Addr)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	h.Pause(t)
	start := time.Now()
	_, err = d.Client(ctx, h.Addr)
	if !errs.Is(err, errs.Unavailable) {
		t.Fatalf("Client of a silent host = %v; want Unavailable", err)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("Client took %s to give up; want about two connect timeouts (probe, dial)", took)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, _, _, err := c.Run(short, "true", nil); err == nil {
		t.Errorf("Run on a silent host succeeded")
	}
	h.Unpause(t)
	if out, _, _, err := c.Run(ctx, "echo back", nil); err != nil || string(out) != "back\n" {
		t.Fatalf("Run after the host answers again = %q, %v", out, err)
	}
}

func TestDialerClose(t *testing.T) {
	h := vmtest.Start(t, vmtest.Options{})
	startHTTP(t, h)
	d, err := vm.NewDialer(h.Connection(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := sshCtx(t)
	c, err := d.Client(ctx, h.Addr)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	url, err := d.Forward(ctx, "k", h.Addr, "127.0.0.1:8765")
	if err != nil {
		t.Fatalf("Forward: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, _, _, err := c.Run(ctx, "true", nil); !errs.Is(err, errs.Unavailable) {
		t.Errorf("Run after Close = %v; want Unavailable", err)
	}
	if _, err := d.Client(ctx, h.Addr); !errs.Is(err, errs.Unavailable) {
		t.Errorf("Client after Close = %v; want Unavailable", err)
	}
	if _, err := httpGet(url); err == nil {
		t.Errorf("the forward still answers after Close")
	}
	// The host ends the session once it reads the close: wait for that.
	if out, err := exec.Command("docker", "exec", h.ID, "sh", "-c",
		"for i in $(seq 100); do pgrep -f '[s]shd: root' >/dev/null || exit 0; sleep 0.05; done; ps -ef; exit 1").CombinedOutput(); err != nil {
		t.Errorf("the host still has sessions of root after Close: %v\n%s", err, out)
	}
}
