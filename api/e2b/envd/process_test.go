package envd

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// event decodes a StartResponse or ConnectResponse message.
func event(t *testing.T, msg string) *ProcessEvent {
	t.Helper()
	var r ProcessResponse
	if err := json.Unmarshal([]byte(msg), &r); err != nil || r.Event == nil {
		t.Fatalf("not a process event: %s", msg)
	}
	return r.Event
}

// drain reads a process stream to its end: stdout, stderr, the end event
// and the end-stream message.
func drain(t *testing.T, next func() string) (stdout, stderr string, end *EndEvent, last string) {
	t.Helper()
	for {
		msg := next()
		if strings.HasPrefix(msg, "END ") || msg == "EOF" {
			return stdout, stderr, end, msg
		}
		ev := event(t, msg)
		switch {
		case ev.Data != nil:
			stdout += string(ev.Data.Stdout) + string(ev.Data.PTY)
			stderr += string(ev.Data.Stderr)
		case ev.End != nil:
			end = ev.End
		}
	}
}

func startPID(t *testing.T, next func() string) uint32 {
	t.Helper()
	msg := next()
	ev := event(t, msg)
	if ev.Start == nil || ev.Start.PID == 0 || !strings.HasPrefix(msg, `{"event":{"start":{"pid":`) {
		t.Fatalf("first message %s, want a start event", msg)
	}
	return ev.Start.PID
}

func TestProcessRun(t *testing.T) {
	d := startDoor(t, true)
	cases := []struct {
		name, body     string
		stdout, stderr string
		end            string
	}{
		{"exit code and both streams",
			`{"process":{"cmd":"/bin/sh","args":["-c","echo out; echo err >&2; exit 3"]},"stdin":false}`,
			"out\n", "err\n", `{"exitCode":3,"exited":true,"status":"exit status 3","error":"exit status 3"}`},
		{"env and the user's home as cwd",
			`{"process":{"cmd":"/bin/sh","args":["-c","echo $GREETING; pwd"],"envs":{"GREETING":"hi"}},"stdin":false}`,
			"hi\n" + d.home + "\n", "", `{"exitCode":0,"exited":true,"status":"exit status 0"}`},
		{"relative cwd resolves against the home",
			`{"process":{"cmd":"pwd","args":[],"cwd":"."}}`,
			d.home + "\n", "", `{"exitCode":0,"exited":true,"status":"exit status 0"}`},
		{"killed by a signal",
			`{"process":{"cmd":"/bin/sh","args":["-c","kill -9 $$"]},"stdin":false}`,
			"", "", `{"exitCode":-1,"exited":false,"status":"signal: killed","error":"signal: killed"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := d.stream(t, "process.Process/Start", tc.body, "Keepalive-Ping-Interval", "50")
			startPID(t, next)
			stdout, stderr, end, last := drain(t, next)
			endJSON, _ := json.Marshal(end)
			if stdout != tc.stdout || stderr != tc.stderr || string(endJSON) != tc.end || last != "END {}" {
				t.Fatalf("got stdout %q stderr %q end %s last %s; want %q %q %s", stdout, stderr, endJSON, last, tc.stdout, tc.stderr, tc.end)
			}
		})
	}
	t.Run("missing program", func(t *testing.T) {
		next := d.stream(t, "process.Process/Start", `{"process":{"cmd":"/no/such/program"}}`)
		if got := next(); !strings.HasPrefix(got, `END {"error":{"code":"not_found"`) {
			t.Fatalf("got %s", got)
		}
	})
}

// A background process: started with a tag, listed, reconnected to,
// fed stdin, and signalled, by pid and by tag.
func TestProcessBackground(t *testing.T) {
	d := startDoor(t, true)
	next := d.stream(t, "process.Process/Start",
		`{"process":{"cmd":"/bin/sh","args":["-c","read a; echo got:$a; read b; echo got:$b; sleep 600"]},"tag":"bg","stdin":true}`)
	pid := startPID(t, next)
	p := strconv.Itoa(int(pid))

	status, body := d.unary(t, "process.Process/List", `{}`)
	want := `{"processes":[{"config":{"cmd":"/bin/sh","args":["-c","read a; echo got:$a; read b; echo got:$b; sleep 600"],"envs":{}},"pid":` + p + `,"tag":"bg"}]}`
	if status != 200 || body != want {
		t.Fatalf("list: %d %s, want %s", status, body, want)
	}

	// A second watcher by tag sees output from its connect on.
	conn := d.stream(t, "process.Process/Connect", `{"process":{"tag":"bg"}}`)
	if got := startPID(t, conn); got != pid {
		t.Fatalf("connect: pid %d, want %d", got, pid)
	}
	in := base64.StdEncoding.EncodeToString([]byte("one\n"))
	if status, body := d.unary(t, "process.Process/SendInput", `{"process":{"pid":`+p+`},"input":{"stdin":"`+in+`"}}`); status != 200 || body != `{}` {
		t.Fatalf("send input: %d %s", status, body)
	}
	for _, n := range []func() string{next, conn} {
		if ev := event(t, n()); ev.Data == nil || string(ev.Data.Stdout) != "got:one\n" {
			t.Fatalf("output after input: %+v", ev)
		}
	}
	in = base64.StdEncoding.EncodeToString([]byte("two\n"))
	if status, body := d.unary(t, "process.Process/SendInput", `{"process":{"tag":"bg"},"input":{"stdin":"`+in+`"}}`); status != 200 {
		t.Fatalf("send input by tag: %d %s", status, body)
	}
	if ev := event(t, next()); ev.Data == nil || string(ev.Data.Stdout) != "got:two\n" {
		t.Fatalf("output after input by tag: %+v", ev)
	}
	if status, body := d.unary(t, "process.Process/SendSignal", `{"process":{"pid":`+p+`},"signal":"SIGNAL_SIGTERM"}`); status != 200 || body != `{}` {
		t.Fatalf("signal: %d %s", status, body)
	}
	_, _, end, last := drain(t, next)
	if end == nil || end.Exited || end.Status != "signal: terminated" || last != "END {}" {
		t.Fatalf("end %+v %s", end, last)
	}
	for _, tc := range []struct{ proc, body string }{
		{"process.Process/SendSignal", `{"process":{"pid":` + p + `},"signal":"SIGNAL_SIGKILL"}`},
		{"process.Process/SendInput", `{"process":{"pid":999999},"input":{"stdin":"eA=="}}`},
		{"process.Process/CloseStdin", `{"process":{"tag":"nope"}}`},
		{"process.Process/Update", `{"process":{"pid":999999},"pty":{"size":{"cols":80,"rows":24}}}`},
	} {
		if status, body := d.unary(t, tc.proc, tc.body); status != 404 || !strings.Contains(body, `"code":"not_found"`) {
			t.Errorf("%s %s: %d %s, want 404 not_found", tc.proc, tc.body, status, body)
		}
	}
	if status, body := d.unary(t, "process.Process/SendSignal", `{"process":{"pid":1},"signal":"SIGNAL_UNSPECIFIED"}`); status != 400 {
		t.Errorf("unspecified signal: %d %s", status, body)
	}
}

func TestProcessCloseStdin(t *testing.T) {
	d := startDoor(t, true)
	next := d.stream(t, "process.Process/Start", `{"process":{"cmd":"cat"},"stdin":true}`)
	p := strconv.Itoa(int(startPID(t, next)))
	in := base64.StdEncoding.EncodeToString([]byte("echoed"))
	if status, body := d.unary(t, "process.Process/SendInput", `{"process":{"pid":`+p+`},"input":{"stdin":"`+in+`"}}`); status != 200 {
		t.Fatalf("send input: %d %s", status, body)
	}
	if status, body := d.unary(t, "process.Process/CloseStdin", `{"process":{"pid":`+p+`}}`); status != 200 || body != `{}` {
		t.Fatalf("close stdin: %d %s", status, body)
	}
	stdout, _, end, _ := drain(t, next)
	if stdout != "echoed" || end == nil || end.ExitCode != 0 {
		t.Fatalf("cat: %q %+v", stdout, end)
	}
}

func TestProcessPTY(t *testing.T) {
	d := startDoor(t, true)
	next := d.stream(t, "process.Process/Start",
		`{"process":{"cmd":"/bin/sh","args":["-c","tty; read x; stty size"]},"pty":{"size":{"cols":80,"rows":24}}}`)
	p := strconv.Itoa(int(startPID(t, next)))
	var out string
	for !strings.Contains(out, "/dev/pts/") {
		ev := event(t, next())
		if ev.Data == nil || ev.Data.PTY == nil || ev.Data.Stdout != nil {
			t.Fatalf("want pty data, got %+v", ev)
		}
		out += string(ev.Data.PTY)
	}
	if status, body := d.unary(t, "process.Process/Update", `{"process":{"pid":`+p+`},"pty":{"size":{"cols":100,"rows":30}}}`); status != 200 || body != `{}` {
		t.Fatalf("update: %d %s", status, body)
	}
	in := base64.StdEncoding.EncodeToString([]byte("\n"))
	if status, body := d.unary(t, "process.Process/SendInput", `{"process":{"pid":`+p+`},"input":{"pty":"`+in+`"}}`); status != 200 {
		t.Fatalf("pty input: %d %s", status, body)
	}
	stdout, _, end, _ := drain(t, next)
	if !strings.Contains(stdout, "30 100") || end == nil || end.ExitCode != 0 {
		t.Fatalf("after resize: %q %+v", stdout, end)
	}
}

func TestProcessDeadline(t *testing.T) {
	d := startDoor(t, true)
	next := d.stream(t, "process.Process/Start", `{"process":{"cmd":"sleep","args":["30"]}}`, "Connect-Timeout-Ms", "300")
	startPID(t, next)
	if _, _, _, last := drain(t, next); !strings.HasPrefix(last, `END {"error":{"code":"deadline_exceeded"`) {
		t.Fatalf("got %s", last)
	}
}
