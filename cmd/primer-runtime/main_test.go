package main_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// binary is built once for all tests by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "primer-runtime-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "primer-runtime")
	// Static, as it ships.
	cmd := exec.Command("go", "build", "-o", binary, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var addrRE = regexp.MustCompile(`addr=(\S+)`)

// start runs the binary and returns its ws:// URL once it listens.
func start(t *testing.T, bin string, argv []string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, argv...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case addr := <-found:
		return cmd, "ws://" + addr
	case <-time.After(20 * time.Second):
		t.Fatal("primer-runtime did not report its address")
	}
	return nil, ""
}

func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; run without -short")
	}
	bin := binary
	root := filepath.Join(t.TempDir(), "workspace")
	cmd, url := start(t, bin, []string{"--listen", "127.0.0.1:0", "--root", root}, "PRIMER_RUNTIME_TOKEN=secret-tok")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.Dial(ctx, url, "wrong"); err == nil {
		t.Fatal("wrong token accepted")
	}
	c, err := client.Dial(ctx, url, "secret-tok")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WriteFile(ctx, "dir/hello.txt", []byte("hi"), 0); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, protocol.ExecRequest{
		Args: []string{"sh", "-c", `cat hello.txt; echo " [$PRIMER_RUNTIME_TOKEN] $(pwd)"`},
		Cwd:  "dir",
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "hi [] " + filepath.Join(root, "dir") + "\n"
	if string(res.Stdout) != want || res.ExitCode != 0 {
		t.Fatalf("exec = %q (code %d), want %q", res.Stdout, res.ExitCode, want)
	}

	// SIGTERM stops it cleanly and kills what it runs.
	p, err := c.Start(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $$ > pid; exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(root, "pid"))
	pid, _ := os.ReadFile(filepath.Join(root, "pid"))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitCleanExit(t, cmd)
	if _, err := p.Wait(); err == nil {
		t.Fatal("Wait after the runtime stopped gave no error")
	}
	if _, err := os.Stat("/proc/" + strings.TrimSpace(string(pid))); err == nil {
		// Reaped by init eventually; it must at least not be running.
		stat, _ := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && !bytes.HasPrefix(stat[i+1:], []byte(" Z")) {
			t.Fatalf("process %s survived the runtime", pid)
		}
	}
}

func TestBinaryRequiresToken(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; run without -short")
	}
	bin := binary
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--root", t.TempDir())
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "PRIMER_RUNTIME_TOKEN is required") {
		t.Fatalf("start without token: %v\n%s", err, out)
	}
}

// TestBinaryRefusesKillAllOnHost: the internal flag that makes reset
// kill(-1) is refused outside init's child, where it would kill the host.
func TestBinaryRefusesKillAllOnHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; run without -short")
	}
	cmd := exec.Command(binary, "--listen", "127.0.0.1:0", "--root", t.TempDir(), "--reset-kill-all")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PRIMER_RUNTIME_TOKEN=tok"}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--reset-kill-all is internal") {
		t.Fatalf("start with --reset-kill-all on the host: %v\n%s", err, out)
	}
}

// TestBinaryAsInit runs the binary as PID 1 of a new PID namespace, as a
// container entrypoint is, and checks orphans get reaped.
func TestBinaryAsInit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; run without -short")
	}
	if err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").Run(); err != nil {
		t.Skipf("needs unshare with PID namespaces (root): %v", err)
	}
	bin := binary
	root := filepath.Join(t.TempDir(), "workspace")
	cmd, url := start(t, "unshare", []string{"--pid", "--fork", "--kill-child", "--mount-proc", bin, "--listen", "127.0.0.1:0", "--root", root}, "PRIMER_RUNTIME_TOKEN=tok")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A shell that exits leaves short-lived orphans to PID 1.
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "for i in 1 2 3 4 5; do (sleep 0.05 &); done"}}, nil, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %+v %v", res, err)
	}
	time.Sleep(300 * time.Millisecond)
	res, err = c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "cat /proc/1/cmdline | tr '\\0' ' '; echo; grep -l '^State:.*Z' /proc/[0-9]*/status | wc -l"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "primer-runtime") || strings.TrimSpace(lines[1]) != "0" {
		t.Fatalf("pid 1 and zombie count = %q", res.Stdout)
	}
	// Reset stops everything in the container: the runtime's own process
	// and a daemon that left its process group, then empties the root.
	if res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "setsid sleep 100 >/dev/null 2>&1 & echo $! > daemon.pid"}}, nil, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("start daemon: %+v %v", res, err)
	}
	p, err := c.Start(ctx, protocol.ExecRequest{Args: []string{"sleep", "100"}})
	if err != nil {
		t.Fatal(err)
	}
	daemon, _ := os.ReadFile(filepath.Join(root, "daemon.pid"))
	reset, err := c.Reset(ctx)
	if err != nil || reset.Killed != 1 {
		t.Fatalf("reset = %+v, %v; want 1 killed", reset, err)
	}
	if r, err := p.Wait(); err != nil || r.ExitCode != 128+9 {
		t.Fatalf("Wait of the killed sleep = %+v, %v", r, err)
	}
	// A killed daemon may linger as a zombie until init reaps it; that is
	// gone (it holds no files), so only a state other than Z is alive.
	alive := `s=$(sed 's/.*) //' /proc/` + strings.TrimSpace(string(daemon)) + `/stat 2>/dev/null | cut -c1); [ -n "$s" ] && [ "$s" != Z ] && echo alive; ls -A`
	res, err = c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", alive}}, nil, nil)
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "" {
		t.Fatalf("after reset: daemon %s and root = %q, %v; want both gone", daemon, res.Stdout, err)
	}
	// unshare does not forward signals: signal the namespace's PID 1.
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var init int
	if _, err := fmt.Sscan(string(kids), &init); err != nil {
		t.Fatalf("children of unshare %q: %v", kids, err)
	}
	_ = syscall.Kill(init, syscall.SIGTERM)
	waitCleanExit(t, cmd)
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	for range 500 {
		if b, _ := os.ReadFile(p); len(b) > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s not written", p)
}

// waitCleanExit waits for cmd, sent SIGTERM, to exit with status 0.
func waitCleanExit(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
}

// TestBinaryTokenFile: --token-file gives the token without the
// environment (a vm workspace's launcher), and the file is gone once the
// runtime listens, so no command can read it.
func TestBinaryTokenFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; run without -short")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("file-tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, url := start(t, binary, []string{"--listen", "127.0.0.1:0", "--root", filepath.Join(dir, "ws"), "--token-file", file})
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("token file after start: stat = %v, want it removed", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, "file-tok")
	if err != nil {
		t.Fatalf("dial with the file's token: %v", err)
	}
	defer c.Close()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}

	// A missing file stops it with the flag named.
	out, err := exec.Command(binary, "--listen", "127.0.0.1:0", "--root", dir, "--token-file", file).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--token-file") {
		t.Fatalf("start with a missing token file: %v\n%s", err, out)
	}
}
