package client_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

func TestPing(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	if err := e.Client.Ping(runtimetest.Ctx(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func TestFileRoundTrip(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client

	// Write creates parents; read returns the bytes; the host sees them.
	data := []byte("hello\x00world\n")
	if err := c.WriteFile(ctx, "a/b/c.txt", data, 0o600); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	got, err := c.ReadFile(ctx, "a/b/c.txt")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadFile = %q, %v; want %q", got, err, data)
	}
	host, err := os.ReadFile(filepath.Join(e.Root, "a/b/c.txt"))
	if err != nil || !bytes.Equal(host, data) {
		t.Fatalf("host file = %q, %v", host, err)
	}
	empty := []byte{}
	if err := c.WriteFile(ctx, "empty", empty, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ReadFile(ctx, "empty"); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("ReadFile(empty) = %q, %v", got, err)
	}

	fi, err := c.Stat(ctx, "a/b/c.txt")
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if fi.Name != "c.txt" || fi.Path != "a/b/c.txt" || fi.Size != int64(len(data)) || fi.Mode != 0o600 || fi.IsDir || fi.IsSymlink {
		t.Fatalf("Stat = %+v", fi)
	}
	if time.Since(fi.ModTime) > time.Minute {
		t.Fatalf("Stat mod time %v is not recent", fi.ModTime)
	}
	// A shorter rewrite leaves no trace of the longer content.
	if err := c.WriteFile(ctx, "a/b/c.txt", []byte("hi"), 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.ReadFile(ctx, "a/b/c.txt"); string(got) != "hi" {
		t.Fatalf("after shorter rewrite = %q", got)
	}
	if err := c.WriteFile(ctx, "a/b/c.txt", data, 0); err != nil {
		t.Fatal(err)
	}
	if fi, _ := c.Stat(ctx, "a/b/c.txt"); fi.Mode != 0o600 {
		t.Fatalf("zero mode changed an existing file's mode to %o", fi.Mode)
	}
	// An explicit mode is applied to an existing file.
	if err := c.WriteFile(ctx, "a/b/c.txt", data, 0o640); err != nil {
		t.Fatal(err)
	}
	if fi, _ := c.Stat(ctx, "a/b/c.txt"); fi.Mode != 0o640 {
		t.Fatalf("mode after rewrite = %o, want 640", fi.Mode)
	}

	if err := c.Mkdir(ctx, "d", false); err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	if err := c.Mkdir(ctx, "d", false); !errs.Is(err, errs.Conflict) {
		t.Fatalf("Mkdir existing = %v, want conflict", err)
	}
	if err := c.Mkdir(ctx, "x/y/z", false); !errs.Is(err, errs.NotFound) {
		t.Fatalf("Mkdir without parents = %v, want not_found", err)
	}
	if err := c.Mkdir(ctx, "x/y/z", true); err != nil {
		t.Fatalf("Mkdir parents: %v", err)
	}
	if err := c.Mkdir(ctx, "x/y/z", true); err != nil {
		t.Fatalf("Mkdir parents on existing: %v", err)
	}

	ents, err := c.List(ctx, "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var names []string
	for _, en := range ents {
		names = append(names, en.Name)
	}
	if want := []string{"a", "d", "empty", "x"}; !slices.Equal(names, want) {
		t.Fatalf("List names = %v, want %v", names, want)
	}
	if !ents[0].IsDir || ents[0].Path != "a" {
		t.Fatalf("List entry a = %+v", ents[0])
	}
	sub, err := c.List(ctx, "a/b")
	if err != nil || len(sub) != 1 || sub[0].Path != "a/b/c.txt" {
		t.Fatalf("List(a/b) = %+v, %v", sub, err)
	}

	if err := c.Rename(ctx, "a/b/c.txt", "d/moved.txt"); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	if _, err := c.Stat(ctx, "a/b/c.txt"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("Stat renamed source = %v, want not_found", err)
	}
	if got, _ := c.ReadFile(ctx, "d/moved.txt"); !bytes.Equal(got, data) {
		t.Fatalf("renamed content = %q", got)
	}

	if err := c.Remove(ctx, "d", false); !errs.Is(err, errs.Conflict) {
		t.Fatalf("Remove non-empty dir = %v, want conflict", err)
	}
	if err := c.Remove(ctx, "d/moved.txt", false); err != nil {
		t.Fatalf("Remove file: %v", err)
	}
	if err := c.Remove(ctx, "x", true); err != nil {
		t.Fatalf("Remove recursive: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.Root, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("x still on host: %v", err)
	}
	for _, recursive := range []bool{false, true} {
		if err := c.Remove(ctx, "nope", recursive); !errs.Is(err, errs.NotFound) {
			t.Fatalf("Remove missing (recursive=%v) = %v, want not_found", recursive, err)
		}
	}
	if err := c.Remove(ctx, ".", true); !errs.Is(err, errs.Invalid) {
		t.Fatalf("Remove root = %v, want invalid", err)
	}
}

func TestFileErrors(t *testing.T) {
	e := runtimetest.Start(t, server.Config{MaxFileBytes: 1024})
	ctx, c := runtimetest.Ctx(t), e.Client
	if _, err := c.ReadFile(ctx, "missing"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("read missing = %v", err)
	}
	if _, err := c.Stat(ctx, "missing/deeper"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("stat missing = %v", err)
	}
	if _, err := c.List(ctx, "missing"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("list missing = %v", err)
	}
	if err := c.Mkdir(ctx, "dir", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadFile(ctx, "dir"); !errs.Is(err, errs.Invalid) {
		t.Fatalf("read dir = %v, want invalid", err)
	}
	if err := c.WriteFile(ctx, "huge", make([]byte, protocol.DefaultMaxFileBytes+1), 0); !errs.Is(err, errs.TooLarge) {
		t.Fatalf("write over the protocol limit = %v, want too_large", err)
	}
	if err := c.WriteFile(ctx, "big", make([]byte, 1025), 0); !errs.Is(err, errs.TooLarge) {
		t.Fatalf("write over limit = %v, want too_large", err)
	}
	if err := os.WriteFile(filepath.Join(e.Root, "big"), make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadFile(ctx, "big"); !errs.Is(err, errs.TooLarge) {
		t.Fatalf("read over limit = %v, want too_large", err)
	}
	if err := c.WriteFile(ctx, "", []byte("x"), 0); !errs.Is(err, errs.Invalid) {
		t.Fatalf("write root = %v, want invalid", err)
	}
	// A FIFO made by a command must not hang a read.
	if res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"mkfifo", "fifo"}}, nil, nil); err != nil || res.ExitCode != 0 {
		t.Skipf("mkfifo unavailable: %v %+v", err, res)
	}
	if _, err := c.ReadFile(ctx, "fifo"); !errs.Is(err, errs.Invalid) {
		t.Fatalf("read fifo = %v, want invalid", err)
	}
	if err := c.WriteFile(ctx, "fifo", []byte("x"), 0); err == nil {
		t.Fatal("write to a fifo succeeded")
	}
}

func TestLargeFile(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := c.WriteFile(ctx, "big.bin", data, 0); err != nil {
		t.Fatalf("WriteFile 8 MiB: %v", err)
	}
	got, err := c.ReadFile(ctx, "big.bin")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadFile 8 MiB: len %d, %v", len(got), err)
	}
}

func TestExec(t *testing.T) {
	e := runtimetest.Start(t, server.Config{Env: map[string]string{"BASE": "base", "OVER": "config"}})
	ctx, c := runtimetest.Ctx(t), e.Client
	if err := os.MkdirAll(filepath.Join(e.Root, "sub/dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		req        protocol.ExecRequest
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"args are not split by a shell", protocol.ExecRequest{Args: []string{"echo", "a  b", "$HOME"}}, 0, "a  b $HOME\n", ""},
		{"exit code", protocol.ExecRequest{Args: []string{"sh", "-c", "exit 7"}}, 7, "", ""},
		{"stderr", protocol.ExecRequest{Args: []string{"sh", "-c", "echo out; echo err >&2; exit 1"}}, 1, "out\n", "err\n"},
		{"env merges config and request", protocol.ExecRequest{
			Args: []string{"sh", "-c", `echo "$BASE $OVER $REQ"`},
			Env:  map[string]string{"OVER": "request", "REQ": "r"},
		}, 0, "base request r\n", ""},
		{"path and home defaults", protocol.ExecRequest{Args: []string{"sh", "-c", `test -n "$PATH" && test -n "$HOME" && echo ok`}}, 0, "ok\n", ""},
		{"token never reaches a command", protocol.ExecRequest{
			Args: []string{"sh", "-c", `echo "[$PRIMER_RUNTIME_TOKEN]"`},
			Env:  map[string]string{server.TokenEnv: "stolen"},
		}, 0, "[]\n", ""},
		{"cwd", protocol.ExecRequest{Args: []string{"pwd"}, Cwd: "sub/dir"}, 0, filepath.Join(e.Root, "sub/dir") + "\n", ""},
		{"default cwd is the root", protocol.ExecRequest{Args: []string{"pwd"}}, 0, e.Root + "\n", ""},
		{"stdin", protocol.ExecRequest{Args: []string{"sh", "-c", "tr a-z A-Z"}, Stdin: []byte("hello")}, 0, "HELLO", ""},
		{"no stdin reads as empty", protocol.ExecRequest{Args: []string{"sh", "-c", "cat; echo done"}}, 0, "done\n", ""},
		{"killed by a signal", protocol.ExecRequest{Args: []string{"sh", "-c", "kill -TERM $$"}}, 128 + 15, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Exec(ctx, tt.req, nil, nil)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if res.ExitCode != tt.wantCode || string(res.Stdout) != tt.wantStdout || string(res.Stderr) != tt.wantStderr {
				t.Fatalf("Exec = code %d stdout %q stderr %q; want %d %q %q", res.ExitCode, res.Stdout, res.Stderr, tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
			if res.TimedOut || res.Canceled || res.Duration <= 0 {
				t.Fatalf("Exec flags = %+v", res)
			}
		})
	}
	// The same commands with writers stream instead of collecting.
	for _, tt := range tests[:3] {
		t.Run("streamed "+tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			res, err := c.Exec(ctx, tt.req, &out, &errb)
			if err != nil || res.ExitCode != tt.wantCode || out.String() != tt.wantStdout || errb.String() != tt.wantStderr {
				t.Fatalf("Exec = %+v %v, stdout %q stderr %q", res, err, out.String(), errb.String())
			}
			if res.Stdout != nil || res.Stderr != nil {
				t.Fatalf("streamed output also collected: %+v", res)
			}
		})
	}
}

func TestExecErrors(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	e.WriteHost(t, "ws/file", "x")
	e.WriteHost(t, "ws/noexec.sh", "#!/bin/sh\necho hi\n")
	tests := []struct {
		name string
		req  protocol.ExecRequest
		want errs.Kind
	}{
		{"no args", protocol.ExecRequest{}, errs.Invalid},
		{"unknown program", protocol.ExecRequest{Args: []string{"no-such-program-xyz"}}, errs.NotFound},
		{"missing relative program", protocol.ExecRequest{Args: []string{"./nope"}}, errs.NotFound},
		{"not executable", protocol.ExecRequest{Args: []string{"./noexec.sh"}}, errs.Forbidden},
		{"cwd missing", protocol.ExecRequest{Args: []string{"true"}, Cwd: "nope"}, errs.NotFound},
		{"cwd is a file", protocol.ExecRequest{Args: []string{"true"}, Cwd: "file"}, errs.Invalid},
		{"cwd escapes", protocol.ExecRequest{Args: []string{"true"}, Cwd: "../"}, errs.Invalid},
		{"cwd absolute", protocol.ExecRequest{Args: []string{"true"}, Cwd: "/tmp"}, errs.Invalid},
		{"bad env name", protocol.ExecRequest{Args: []string{"true"}, Env: map[string]string{"A=B": "x"}}, errs.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Exec(ctx, tt.req, nil, nil)
			if !errs.Is(err, tt.want) {
				t.Fatalf("Exec = %v (kind %v), want %v", err, errs.KindOf(err), tt.want)
			}
			if _, err := c.Start(ctx, tt.req); !errs.Is(err, tt.want) {
				t.Fatalf("Start = %v, want %v", err, tt.want)
			}
		})
	}
	// The connection is still good after all that.
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestExecTimeout(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	start := time.Now()
	// The child in the background proves the whole process group dies: its
	// pipe would otherwise hold the exec open until the wait delay.
	res, err := c.Exec(ctx, protocol.ExecRequest{
		Args:    []string{"sh", "-c", "sleep 30 & echo started; sleep 30"},
		Timeout: 200 * time.Millisecond,
	}, nil, nil)
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if !res.TimedOut || res.Canceled || res.ExitCode != 128+9 || res.Signal != "SIGKILL" || string(res.Stdout) != "started\n" {
		t.Fatalf("Exec = %+v, want timed out by SIGKILL with output", res)
	}
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Fatalf("timeout took %v", d)
	}
}

func TestExecCancel(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	c := e.Client
	ctx, cancel := contextWithCancel(t)
	var out syncBuffer
	done := make(chan struct{})
	var res protocol.ExecResult
	var err error
	go func() {
		defer close(done)
		res, err = c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $$ > pid; echo ready; exec sleep 30"}}, &out, nil)
	}()
	waitFor(t, func() bool { return out.String() == "ready\n" })
	cancel()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("Exec did not return after cancel")
	}
	if !errs.Is(err, errs.Canceled) || !res.Canceled || res.ExitCode != 128+9 {
		t.Fatalf("Exec = %+v, %v; want canceled", res, err)
	}
	pid, _ := os.ReadFile(filepath.Join(e.Root, "pid"))
	if processAlive(t, strings.TrimSpace(string(pid))) {
		t.Fatalf("process %s still alive after cancel", pid)
	}
	if err := c.Ping(runtimetest.Ctx(t)); err != nil {
		t.Fatalf("Ping after cancel: %v", err)
	}
}

func TestExecStreamOrder(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	var out syncBuffer
	p, err := c.Start(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "for i in 1 2 3; do echo $i; read x; done; echo end"}}, client.StartOptions{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if p.PID() <= 0 {
		t.Fatalf("PID = %d", p.PID())
	}
	// Each line arrives while the process still runs: it waits for stdin
	// before printing the next.
	for i, want := range []string{"1\n", "1\n2\n", "1\n2\n3\n"} {
		waitFor(t, func() bool { return out.String() == want })
		if _, err := io.WriteString(p.Stdin(), "go\n"); err != nil {
			t.Fatalf("stdin write %d: %v", i, err)
		}
	}
	res, err := p.Wait()
	if err != nil || res.ExitCode != 0 || out.String() != "1\n2\n3\nend\n" {
		t.Fatalf("Wait = %+v, %v, out %q", res, err, out.String())
	}
	// Writing after the exit fails cleanly.
	if _, err := p.Stdin().Write([]byte("late")); err == nil {
		t.Fatal("stdin write after exit succeeded")
	}
}

func TestExecLargeOutputInOrder(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	// 3 MiB of numbered lines crosses the batching threshold and many
	// pipe reads; both modes must deliver every byte in order.
	script := "i=0; while [ $i -lt 300000 ]; do echo $i; i=$((i+1)); done"
	if _, err := exec_lookPath("seq"); err == nil {
		script = "seq 0 299999"
	}
	var want bytes.Buffer
	for i := range 300000 {
		want.WriteString(itoa(i))
		want.WriteByte('\n')
	}
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", script}}, nil, nil)
	if err != nil || !bytes.Equal(res.Stdout, want.Bytes()) {
		t.Fatalf("collected: %d bytes, %v; want %d", len(res.Stdout), err, want.Len())
	}
	var out bytes.Buffer
	res, err = c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", script}}, &out, nil)
	if err != nil || !bytes.Equal(out.Bytes(), want.Bytes()) || res.ExitCode != 0 {
		t.Fatalf("streamed: %d bytes, %v; want %d", out.Len(), err, want.Len())
	}
}

func TestStdinLarge(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	var out bytes.Buffer
	p, err := c.Start(ctx, protocol.ExecRequest{Args: []string{"wc", "-c"}, Stdin: []byte("abc")}, client.StartOptions{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	w := p.Stdin()
	if _, err := w.Write(make([]byte, 3<<20)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(out.String()) != itoa(3<<20+3) {
		t.Fatalf("wc = %q, %+v, %v", out.String(), res, err)
	}
}

func TestConcurrentExecs(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	const n = 16
	start := time.Now()
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "sleep 0.3; echo $N"}, Env: map[string]string{"N": itoa(i)}}, nil, nil)
			if err == nil && string(res.Stdout) != itoa(i)+"\n" {
				err = errors.New("exec " + itoa(i) + ": stdout " + string(res.Stdout))
			}
			errc <- err
		})
	}
	// File calls are not held up by the running commands.
	if err := c.WriteFile(ctx, "f", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Sixteen 300 ms sleeps in parallel, not in series.
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("concurrent execs took %v", d)
	}
}

func TestConnectionDrop(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	c := e.Client
	ctx := runtimetest.Ctx(t)
	p, err := c.Start(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $$ > pid; exec sleep 30"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { b, _ := os.ReadFile(filepath.Join(e.Root, "pid")); return len(b) > 0 })
	pid, _ := os.ReadFile(filepath.Join(e.Root, "pid"))

	// The server goes away: its connections drop and its processes die.
	_ = e.Server.Close()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the server closed")
	}
	if _, err := p.Wait(); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("Wait after drop = %v, want unavailable", err)
	}
	if err := c.Ping(ctx); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("Ping after drop = %v, want unavailable", err)
	}
	if _, err := c.ReadFile(ctx, "pid"); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("ReadFile after drop = %v, want unavailable", err)
	}
	if processAlive(t, strings.TrimSpace(string(pid))) {
		t.Fatalf("process %s survived the server's close", pid)
	}
}

func TestClientCloseKillsProcesses(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	c2, err := client.Dial(ctx, e.URL, runtimetest.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Start(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $$ > pid2; exec sleep 30"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { b, _ := os.ReadFile(filepath.Join(e.Root, "pid2")); return len(b) > 0 })
	pid, _ := os.ReadFile(filepath.Join(e.Root, "pid2"))
	_ = c2.Close()
	waitFor(t, func() bool { return !processAlive(t, strings.TrimSpace(string(pid))) })
	// The other connection is unaffected.
	if err := e.Client.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDialErrors(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	if _, err := client.Dial(ctx, e.URL, "wrong"); !errs.Is(err, errs.Forbidden) {
		t.Fatalf("Dial wrong token = %v, want forbidden", err)
	}
	if _, err := client.Dial(ctx, e.URL, ""); !errs.Is(err, errs.Invalid) {
		t.Fatalf("Dial empty token = %v, want invalid", err)
	}
	if _, err := client.Dial(ctx, "ws://127.0.0.1:1", "x"); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("Dial closed port = %v, want unavailable", err)
	}
}

func TestPool(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	p := client.NewPool()
	defer p.Close()

	// Concurrent Gets for one key dial once.
	const n = 8
	got := make([]*client.Client, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := p.Get(ctx, "ws-1", e.URL, runtimetest.Token)
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	wg.Wait()
	for _, c := range got {
		if c != got[0] || c == nil {
			t.Fatalf("concurrent Gets returned different clients")
		}
	}
	c1 := got[0]
	if c, _ := p.Get(ctx, "ws-1", e.URL, runtimetest.Token); c != c1 {
		t.Fatal("Get did not reuse the live client")
	}

	// A dead connection is redialed.
	_ = c1.Close()
	c2, err := p.Get(ctx, "ws-1", e.URL, runtimetest.Token)
	if err != nil || c2 == c1 {
		t.Fatalf("Get after close = %p, %v; want a new client", c2, err)
	}
	if err := c2.Ping(ctx); err != nil {
		t.Fatal(err)
	}

	// A token the runtime refuses leaves the connection made with its
	// own token standing, and the pool's: a caller holding a stale token
	// (a row read before a re-attach) cannot cut the connection another
	// caller is using.
	if _, err := p.Get(ctx, "ws-1", e.URL, "wrong"); !errs.Is(err, errs.Forbidden) {
		t.Fatalf("Get with wrong token = %v", err)
	}
	select {
	case <-c2.Done():
		t.Fatal("the live client was closed by a Get with a refused token")
	default:
	}
	if err := c2.Ping(ctx); err != nil {
		t.Fatalf("the live client after a refused token: %v", err)
	}
	if c, ok := p.Live("ws-1", runtimetest.Token); !ok || c != c2 {
		t.Fatalf("Live after a refused token = %p, %v; want the standing client %p", c, ok, c2)
	}
	if c, err := p.Get(ctx, "ws-1", e.URL, runtimetest.Token); err != nil || c != c2 {
		t.Fatalf("Get after a refused token = %p, %v; want the standing client %p", c, err, c2)
	}

	// A changed url redials and closes the old client.
	other := runtimetest.Start(t, server.Config{})
	c3, err := p.Get(ctx, "ws-1", other.URL, runtimetest.Token)
	if err != nil || c3 == c2 {
		t.Fatalf("Get at another url = %p, %v; want a new client", c3, err)
	}
	<-c2.Done()
	if err := c3.Ping(ctx); err != nil {
		t.Fatal(err)
	}

	// Keys are independent; Drop closes.
	c4, err := p.Get(ctx, "ws-2", e.URL, runtimetest.Token)
	if err != nil || c4 == c3 {
		t.Fatalf("Get ws-2 = %v", err)
	}
	p.Drop("ws-2")
	<-c4.Done()
	if err := c3.Ping(ctx); err != nil {
		t.Fatalf("ws-1 client hurt by dropping ws-2: %v", err)
	}
	p.Close()
	<-c3.Done()
	if _, err := p.Get(ctx, "ws-1", e.URL, runtimetest.Token); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("Get after Close = %v", err)
	}
}

func TestExecBackgroundChildDoesNotHoldExit(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	start := time.Now()
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "sleep 3 & echo $! > bg; echo hi"}}, nil, nil)
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "hi\n" {
		t.Fatalf("Exec = %+v, %v", res, err)
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("exec with a background child took %v", d)
	}
	// The background child is left running: init commands start daemons.
	pid, _ := os.ReadFile(filepath.Join(e.Root, "bg"))
	t.Cleanup(func() {
		if n, err := strconv.Atoi(strings.TrimSpace(string(pid))); err == nil {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	})
	if !processAlive(t, strings.TrimSpace(string(pid))) {
		t.Fatal("background child was killed")
	}
}
