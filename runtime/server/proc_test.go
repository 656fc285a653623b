package server_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// outBuf collects a watch's output and wakes whoever waits for a piece of
// it, so tests wait for output, not for time.
type outBuf struct {
	mu   sync.Mutex
	b    strings.Builder
	wake chan struct{}
}

func newOutBuf() *outBuf { return &outBuf{wake: make(chan struct{}, 1)} }

func (o *outBuf) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.b.Write(p)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (o *outBuf) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// waitFor waits until the output holds want.
func (o *outBuf) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for !strings.Contains(o.String(), want) {
		select {
		case <-o.wake:
		case <-timeout:
			t.Fatalf("output %q never held %q", o.String(), want)
		}
	}
}

func dial(t *testing.T, e *runtimetest.Env) *client.Client {
	t.Helper()
	c, err := client.Dial(runtimetest.Ctx(t), e.URL, runtimetest.Token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func waitExit(t *testing.T, p *client.Process) protocol.ExecResult {
	t.Helper()
	res, err := p.Wait()
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return res
}

// procAlive reports whether pid runs and is not a zombie (conn_test.go).
func procAlive(pid int) bool { return alive(pid) }

// A process started in the background keeps running after the connection
// that started it closes; a new connection lists it, watches it by pid and
// by tag (output from the reconnect on, to both watches), feeds its stdin
// and sees it exit; after the end it still answers its exit.
func TestProcOutlivesConnection(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)

	first := dial(t, e)
	early := newOutBuf()
	script := `echo started; while read line; do echo "echo:$line"; done; echo bye; exit 3`
	p, err := first.ProcStartWatch(ctx, client.ProcRequest{
		Args: []string{"sh", "-c", script}, Tag: "echoer", StdinOpen: true,
	}, client.StartOptions{Stdout: early})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.PID()
	if info := p.Info(); info.PID != pid || info.Tag != "echoer" || !info.Running || !info.StdinOpen {
		t.Fatalf("start info = %+v", info)
	}
	early.waitFor(t, "started\n")
	_ = first.Close()
	if _, err := p.Wait(); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("watch on the closed client = %v, want unavailable", err)
	}

	second := dial(t, e)
	list, err := second.ProcList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].PID != pid || list[0].Tag != "echoer" || !list[0].Running || list[0].Args[0] != "sh" || list[0].PTY != nil {
		t.Fatalf("list after the reconnect = %+v", list)
	}
	if !procAlive(pid) {
		t.Fatalf("process %d died with the connection that started it", pid)
	}
	byPID, byTag := newOutBuf(), newOutBuf()
	w1, err := second.ProcConnect(ctx, pid, client.StartOptions{Stdout: byPID})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := second.ProcConnectTag(ctx, "echoer", client.StartOptions{Stdout: byTag})
	if err != nil {
		t.Fatal(err)
	}
	if w2.PID() != pid {
		t.Fatalf("tag found pid %d, want %d", w2.PID(), pid)
	}
	if err := second.ProcInput(ctx, pid, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	byPID.waitFor(t, "echo:hello\n")
	if err := second.ProcCloseStdin(ctx, pid); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*client.Process{w1, w2} {
		if res := waitExit(t, w); res.ExitCode != 3 || res.Signal != "" {
			t.Fatalf("exit = %+v, want 3", res)
		}
	}
	for name, b := range map[string]*outBuf{"pid": byPID, "tag": byTag} {
		if got := b.String(); got != "echo:hello\nbye\n" {
			t.Fatalf("watch by %s got %q, want the output since the reconnect only", name, got)
		}
	}

	// Ended: a watch gets the exit at once, the list shows it.
	w3, err := second.ProcConnect(ctx, pid, client.StartOptions{Stdout: newOutBuf()})
	if err != nil {
		t.Fatal(err)
	}
	if res := waitExit(t, w3); res.ExitCode != 3 {
		t.Fatalf("exit of an ended process = %+v", res)
	}
	list, err = second.ProcList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Running || list[0].Exit == nil || list[0].Exit.ExitCode != 3 {
		t.Fatalf("list after the end = %+v", list)
	}
	if err := second.ProcInput(ctx, pid, []byte("late\n")); !errs.Is(err, errs.Precondition) {
		t.Fatalf("input after the end = %v, want precondition", err)
	}
}

// A watch whose context ends stops; the process runs on and can be
// watched again.
func TestProcWatchDetach(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	wctx, cancel := context.WithCancel(ctx)
	p, err := e.Client.ProcStartWatch(wctx, client.ProcRequest{Args: []string{"head", "-n1"}, StdinOpen: true}, client.StartOptions{Stdout: newOutBuf()})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := p.Wait(); !errs.Is(err, errs.Canceled) {
		t.Fatalf("detached watch = %v, want canceled", err)
	}
	out := newOutBuf()
	w, err := e.Client.ProcConnect(ctx, p.PID(), client.StartOptions{Stdout: out})
	if err != nil {
		t.Fatalf("connect after detach: %v", err)
	}
	if _, err := w.Stdin().Write([]byte("first line\nsecond\n")); err != nil {
		t.Fatal(err)
	}
	if res := waitExit(t, w); res.ExitCode != 0 || out.String() != "first line\n" {
		t.Fatalf("head -n1 = %+v %q", res, out.String())
	}
}

func TestProcSignal(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	info, err := e.Client.ProcStart(ctx, client.ProcRequest{Args: []string{"sleep", "600"}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.Client.ProcConnect(ctx, info.PID, client.StartOptions{Stdout: newOutBuf()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Client.ProcSignal(ctx, info.PID, "TERM"); err != nil {
		t.Fatal(err)
	}
	if res := waitExit(t, w); res.Signal != "SIGTERM" || res.ExitCode != 143 {
		t.Fatalf("exit after SIGTERM = %+v", res)
	}
	if err := e.Client.ProcSignal(ctx, info.PID, "TERM"); !errs.Is(err, errs.Precondition) {
		t.Fatalf("signal after the end = %v, want precondition", err)
	}
}

func TestProcErrors(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	if _, err := e.Client.ProcStart(ctx, client.ProcRequest{Args: []string{"sleep", "600"}, Tag: "one"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		kind errs.Kind
	}{
		{"tag taken", func() error {
			_, err := e.Client.ProcStart(ctx, client.ProcRequest{Args: []string{"true"}, Tag: "one"})
			return err
		}, errs.Conflict},
		{"missing program", func() error {
			_, err := e.Client.ProcStart(ctx, client.ProcRequest{Args: []string{"no-such-program-x"}})
			return err
		}, errs.NotFound},
		{"unknown pid", func() error { return e.Client.ProcSignal(ctx, 1<<30, "TERM") }, errs.NotFound},
		{"unknown tag", func() error {
			_, err := e.Client.ProcConnectTag(ctx, "nope", client.StartOptions{})
			return err
		}, errs.NotFound},
		{"zero terminal", func() error {
			_, err := e.Client.ProcStart(ctx, client.ProcRequest{Args: []string{"sh"}, PTY: &protocol.PTYSize{}})
			return err
		}, errs.Invalid},
		{"cwd escapes", func() error {
			_, err := e.Client.ProcStart(ctx, client.ProcRequest{Args: []string{"true"}, Cwd: "../.."})
			return err
		}, errs.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errs.Is(err, tt.kind) {
				t.Fatalf("err = %v, want %v", err, tt.kind)
			}
		})
	}
	list, _ := e.Client.ProcList(ctx)
	if len(list) != 1 {
		t.Fatalf("refused starts left processes: %+v", list)
	}
	pid := list[0].PID
	if err := e.Client.ProcResize(ctx, pid, 80, 24); !errs.Is(err, errs.Precondition) {
		t.Fatalf("resize without a terminal = %v", err)
	}
	if err := e.Client.ProcInput(ctx, pid, []byte("x")); !errs.Is(err, errs.Precondition) {
		t.Fatalf("input without stdin = %v", err)
	}
}

// A terminal: tty names a /dev/pts device, the output comes as one pty
// stream, a resize shows in stty size, an interactive interpreter answers.
func TestProcPTY(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	size := &protocol.PTYSize{Cols: 80, Rows: 24}

	t.Run("tty", func(t *testing.T) {
		out := newOutBuf()
		p, err := e.Client.ProcStartWatch(ctx, client.ProcRequest{Args: []string{"tty"}, PTY: size}, client.StartOptions{Stdout: out})
		if err != nil {
			t.Fatal(err)
		}
		if res := waitExit(t, p); res.ExitCode != 0 || !strings.HasPrefix(out.String(), "/dev/pts/") {
			t.Fatalf("tty = %+v %q", res, out.String())
		}
		if info := p.Info(); info.PTY == nil || *info.PTY != *size {
			t.Fatalf("info = %+v", info)
		}
	})

	t.Run("resize", func(t *testing.T) {
		out := newOutBuf()
		p, err := e.Client.ProcStartWatch(ctx, client.ProcRequest{
			Args: []string{"sh", "-c", "stty size; read x; stty size"}, PTY: size,
		}, client.StartOptions{Stdout: out})
		if err != nil {
			t.Fatal(err)
		}
		out.waitFor(t, "24 80")
		if err := p.Resize(ctx, 132, 50); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Stdin().Write([]byte("\n")); err != nil {
			t.Fatal(err)
		}
		if res := waitExit(t, p); res.ExitCode != 0 || !strings.Contains(out.String(), "50 132") {
			t.Fatalf("stty size after resize = %+v %q", res, out.String())
		}
		list, _ := e.Client.ProcList(ctx)
		for _, info := range list {
			if info.PID == p.PID() && (info.PTY == nil || info.PTY.Cols != 132 || info.PTY.Rows != 50) {
				t.Fatalf("listed size = %+v", info.PTY)
			}
		}
	})

	t.Run("interactive", func(t *testing.T) {
		args, input, quit := []string{"sh", "-i"}, "echo $((6*7))\n", "exit\n"
		if _, err := exec.LookPath("python3"); err == nil {
			args, input, quit = []string{"python3", "-i", "-q"}, "6*7\n", "exit()\n"
		}
		out := newOutBuf()
		p, err := e.Client.ProcStartWatch(ctx, client.ProcRequest{Args: args, PTY: size}, client.StartOptions{Stdout: out})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Client.ProcInput(ctx, p.PID(), []byte(input)); err != nil {
			t.Fatal(err)
		}
		out.waitFor(t, "42")
		if err := e.Client.ProcInput(ctx, p.PID(), []byte(quit)); err != nil {
			t.Fatal(err)
		}
		if res := waitExit(t, p); res.ExitCode != 0 {
			t.Fatalf("%s = %+v %q", args[0], res, out.String())
		}
	})
}

// The output of a terminal comes in exec.output frames of stream pty.
func TestProcPTYFrames(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ws, call := rawConn(t, e)
	m := call(`{"id":1,"op":"proc.start","exec":{"args":["printf","x"],"pty":{"cols":80,"rows":24},"stream":true}}`)
	if res, _ := m["result"].(map[string]any); m["id"] != 1.0 || res["pid"].(float64) <= 0 {
		t.Fatalf("first frame = %v", m)
	}
	ctx := runtimetest.Ctx(t)
	streams := map[string]string{}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var f protocol.Frame
		if err := json.Unmarshal(data, &f); err != nil || f.ID != 1 {
			t.Fatalf("frame %s: %v", data, err)
		}
		if f.Type == protocol.TypeExecExit {
			break
		}
		streams[f.Stream] += string(f.Data)
	}
	if len(streams) != 1 || streams[protocol.StreamPTY] != "x" {
		t.Fatalf("streams = %q", streams)
	}
}

// Reset and the server's Close kill background processes.
func TestProcKilledByResetAndClose(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	start := func() int {
		info, err := e.Client.ProcStart(ctx, client.ProcRequest{Args: []string{"sleep", "600"}})
		if err != nil {
			t.Fatal(err)
		}
		return info.PID
	}
	pid := start()
	res, err := e.Client.Reset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Killed != 1 || procAlive(pid) {
		t.Fatalf("reset = %+v, process %d alive %v", res, pid, procAlive(pid))
	}
	if list, _ := e.Client.ProcList(ctx); len(list) != 0 {
		t.Fatalf("list after reset = %+v", list)
	}
	pid = start()
	if err := e.Server.Close(); err != nil {
		t.Fatal(err)
	}
	if procAlive(pid) {
		t.Fatalf("process %d survived the server's Close", pid)
	}
}

// A connect with replay gets the recent output first, then the new; one
// without gets only the new.
func TestProcReplay(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	wctx, cancel := context.WithCancel(ctx)
	first := newOutBuf()
	p, err := e.Client.ProcStartWatch(wctx, client.ProcRequest{
		Args: []string{"sh", "-c", "echo before; read x; echo after"}, StdinOpen: true,
	}, client.StartOptions{Stdout: first})
	if err != nil {
		t.Fatal(err)
	}
	first.waitFor(t, "before\n")
	cancel()
	replayed, fresh := newOutBuf(), newOutBuf()
	w1, err := e.Client.ProcConnect(ctx, p.PID(), client.StartOptions{Stdout: replayed, Replay: true})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := e.Client.ProcConnect(ctx, p.PID(), client.StartOptions{Stdout: fresh})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Client.ProcInput(ctx, p.PID(), []byte("\n")); err != nil {
		t.Fatal(err)
	}
	waitExit(t, w1)
	waitExit(t, w2)
	if replayed.String() != "before\nafter\n" || fresh.String() != "after\n" {
		t.Fatalf("with replay %q, without %q", replayed.String(), fresh.String())
	}
}

// A terminal for a process run as a user belongs to that user (it may
// change its own modes), and the process runs as the user.
func TestProcPTYAsUser(t *testing.T) {
	needRoot(t)
	e, _, _ := usersEnv(t, protocol.FSWhole)
	ctx := runtimetest.Ctx(t)
	out := newOutBuf()
	p, err := e.Client.ProcStartWatch(ctx, client.ProcRequest{
		Args: []string{"sh", "-c", `echo "uid=$(id -u) tty=$(stat -c %u "$(tty)")"; stty -echo`}, User: "alice",
		PTY: &protocol.PTYSize{Cols: 80, Rows: 24},
	}, client.StartOptions{Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	if res := waitExit(t, p); res.ExitCode != 0 || !strings.Contains(out.String(), "uid=54321 tty=54321") {
		t.Fatalf("terminal as alice = %+v %q", res, out.String())
	}
	if info := p.Info(); info.User != "alice" {
		t.Fatalf("info = %+v", info)
	}
}
