package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

const dockerImage = "primer/busybox:1.0"

// Capability numbers, see capabilities(7).
const (
	capSetPCAP  = 8
	capNetAdmin = 12
)

// TestEgressDocker runs the static binary as the entrypoint of real
// containers, as the container backend does, and checks from inside them
// what egress deny blocks and what it leaves working.
func TestEgressDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Docker containers; run without -short")
	}
	requireDocker(t)

	// The host side: a listener every container can reach through its
	// bridge gateway unless its egress is denied.
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
			accepted <- struct{}{}
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	t.Run("allow", func(t *testing.T) {
		w := startWorkspace(t, "allow")
		res := w.sh(t, "nc -w 2 "+w.gateway+" "+port+" </dev/null; echo rc=$?")
		if !strings.Contains(res, "rc=0") {
			t.Fatalf("nc to the host with egress allow: %q, want rc=0", res)
		}
		select {
		case <-accepted:
		case <-time.After(5 * time.Second):
			t.Fatal("the host listener accepted nothing with egress allow")
		}
		w.checkTokenHidden(t)
	})

	t.Run("deny", func(t *testing.T) {
		w := startWorkspace(t, "deny")
		for _, dst := range []string{w.gateway + " " + port, "1.1.1.1 443"} {
			res := w.sh(t, "nc -w 2 "+dst+" </dev/null; echo rc=$?")
			if strings.Contains(res, "rc=0") {
				t.Errorf("nc %s with egress deny: %q, want a failure", dst, res)
			}
		}
		select {
		case <-accepted:
			t.Fatal("the host listener accepted a connection with egress deny")
		case <-time.After(time.Second):
		}
		// Loopback stays open.
		res := w.sh(t, "(nc -l -p 7000 >/dev/null &); sleep 0.3; echo hi | nc -w 2 127.0.0.1 7000; echo rc=$?")
		if !strings.Contains(res, "rc=0") {
			t.Errorf("nc to loopback with egress deny: %q, want rc=0", res)
		}
		w.checkTokenHidden(t)

		// No process in the container, PID 1 included, can get the
		// capabilities back: they are out of every set.
		for _, pid := range []string{"self", "1", "$PPID"} {
			status := w.sh(t, "grep ^Cap /proc/"+pid+"/status")
			for _, line := range strings.Split(strings.TrimSpace(status), "\n") {
				name, hexCaps, ok := strings.Cut(line, ":")
				if !ok || name == "CapAmb" {
					continue
				}
				caps, err := strconv.ParseUint(strings.TrimSpace(hexCaps), 16, 64)
				if err != nil {
					t.Fatalf("/proc/%s/status: %q: %v", pid, line, err)
				}
				if caps&(1<<capNetAdmin) != 0 || caps&(1<<capSetPCAP) != 0 {
					t.Errorf("/proc/%s/status %s = %s: has NET_ADMIN or SETPCAP", pid, name, strings.TrimSpace(hexCaps))
				}
				if name == "CapBnd" && caps&(1<<0) == 0 { // CAP_CHOWN
					t.Errorf("/proc/%s/status CapBnd = %s: lost CHOWN too", pid, strings.TrimSpace(hexCaps))
				}
			}
		}
	})

	t.Run("deny without NET_ADMIN fails closed", func(t *testing.T) {
		id := createContainer(t, "deny", []string{"CHOWN", "SETPCAP"}, newToken(t))
		docker(t, "start", id)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		code := strings.TrimSpace(dockerCtx(ctx, t, "wait", id))
		logs := dockerCtx(ctx, t, "logs", id)
		if code == "0" || !strings.Contains(logs, "CAP_NET_ADMIN") {
			t.Fatalf("container exited %s with logs %q; want a failure naming CAP_NET_ADMIN", code, logs)
		}
	})
}

// workspace is a started container running the runtime.
type workspace struct {
	c       *client.Client
	gateway string
	token   string
}

// baseCaps are the capabilities the container backend gives every
// workspace; deny adds NET_ADMIN and SETPCAP.
var baseCaps = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"}

func startWorkspace(t *testing.T, egressMode string) *workspace {
	t.Helper()
	caps := baseCaps
	if egressMode == "deny" {
		caps = append(caps[:len(caps):len(caps)], "NET_ADMIN", "SETPCAP")
	}
	token := newToken(t)
	id := createContainer(t, egressMode, caps, token)
	docker(t, "start", id)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	hostPort := strings.TrimSpace(strings.Split(docker(t, "port", id, "7777/tcp"), "\n")[0])
	gateway := strings.TrimSpace(docker(t, "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.Gateway}}{{end}}", id))
	if net.ParseIP(gateway) == nil {
		t.Fatalf("container gateway %q", gateway)
	}
	var c *client.Client
	for {
		var err error
		if c, err = client.Dial(ctx, "ws://"+hostPort+"/", token); err == nil {
			if err = c.Ping(ctx); err == nil {
				break
			}
			c.Close()
		}
		if errs.Is(err, errs.Forbidden) || ctx.Err() != nil {
			t.Fatalf("dial the runtime in %s: %v\nlogs:\n%s", id, err, docker(t, "logs", id))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() { c.Close() })
	return &workspace{c: c, gateway: gateway, token: token}
}

// sh runs script in the workspace and returns its stdout and stderr.
func (w *workspace) sh(t *testing.T, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := w.c.Exec(ctx, protocol.ExecRequest{
		Args: []string{"sh", "-c", script},
		Env:  map[string]string{"PROBE": "visible"},
	}, nil, nil)
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return string(res.Stdout) + string(res.Stderr)
}

// checkTokenHidden reads every environment in the container it can: its
// own must show (so the probe works), the runtime's, PID 1 and the
// server ($PPID of the command), must not.
func (w *workspace) checkTokenHidden(t *testing.T) {
	t.Helper()
	res := w.sh(t, `cat /proc/*/environ 2>/dev/null | tr "\0" "\n" | grep -e PROBE= -e PRIMER_RUNTIME_TOKEN -e `+w.token+`; echo end`)
	if !strings.Contains(res, "PROBE=visible") {
		t.Fatalf("the probe cannot read its own environment: %q", res)
	}
	if strings.Contains(res, "PRIMER_RUNTIME_TOKEN") || strings.Contains(res, w.token) {
		t.Fatalf("a command read the token from /proc/*/environ: %q", res)
	}
	for _, pid := range []string{"1", "$PPID"} {
		res := w.sh(t, "cat /proc/"+pid+"/environ >/dev/null; echo rc=$?")
		if strings.Contains(res, "rc=0") {
			t.Errorf("cat /proc/%s/environ succeeded: %q", pid, res)
		}
	}
}

// createContainer creates, without starting, a container running the
// binary as its entrypoint, removed at cleanup.
func createContainer(t *testing.T, egressMode string, caps []string, token string) string {
	t.Helper()
	args := []string{"create", "--cap-drop", "ALL"}
	for _, c := range caps {
		args = append(args, "--cap-add", c)
	}
	args = append(args,
		"--security-opt", "no-new-privileges",
		"-e", "PRIMER_RUNTIME_TOKEN="+token,
		"-p", "127.0.0.1::7777",
		"--entrypoint", "/.primer/primer-runtime",
		dockerImage,
		"--egress="+egressMode, "--listen=:7777", "--root=/workspace")
	id := strings.TrimSpace(docker(t, args...))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = exec.CommandContext(ctx, "docker", "rm", "-f", "-v", id).Run()
	})
	dir := filepath.Join(t.TempDir(), ".primer")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, binary, filepath.Join(dir, "primer-runtime"))
	docker(t, "cp", dir, id+":/")
	return id
}

func requireDocker(t *testing.T) {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("CI") != "" {
		fail = t.Fatalf
	}
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		fail("needs a Docker engine on /var/run/docker.sock: %v", err)
	}
	if out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		fail("needs the docker CLI and a running engine: %v: %s", err, out)
	}
	if out, err := exec.Command("docker", "image", "inspect", dockerImage).CombinedOutput(); err != nil {
		fail("needs the image %s (build the test images first): %v: %s", dockerImage, err, out)
	}
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	return dockerCtx(ctx, t, args...)
}

func dockerCtx(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func newToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
