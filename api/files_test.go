package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

func TestFilesRoundTrip(t *testing.T) {
	h := newHarness(t)
	w, dir := h.runningWorkspace()
	base := "/v1/workspaces/" + w.ID + "/files/"

	// PUT creates parents and returns the FileInfo.
	var fi protocol.FileInfo
	h.do("PUT", base+"src/app/main.go", "package main\n", FileModeHeader, "0600").expect(t, 200).decode(t, &fi)
	if fi.Path != "src/app/main.go" || fi.Size != 13 || fi.IsDir || fi.Mode&0o777 != 0o600 {
		t.Fatalf("FileInfo = %+v", fi)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "src/app/main.go")); err != nil || string(data) != "package main\n" {
		t.Fatalf("on disk: %q %v", data, err)
	}

	// GET of a file: its bytes and mode.
	r := h.do("GET", base+"src/app/main.go", nil).expect(t, 200)
	if string(r.body) != "package main\n" || r.header.Get(FileModeHeader) != "0600" ||
		r.header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("GET file: %q headers %v", r.body, r.header)
	}

	// Binary content survives.
	bin := []byte{0, 1, 2, 0xff, 0xfe, '\n'}
	h.do("PUT", base+"bin.dat", bin).expect(t, 200)
	if r := h.do("GET", base+"bin.dat", nil).expect(t, 200); !bytes.Equal(r.body, bin) {
		t.Fatalf("binary round trip: %v", r.body)
	}

	// GET of a directory lists it; the root lists with and without the slash.
	var l wire.DirListing
	h.do("GET", base+"src", nil).expect(t, 200).decode(t, &l)
	if l.Path != "src" || len(l.Items) != 1 || l.Items[0].Name != "app" || !l.Items[0].IsDir {
		t.Fatalf("listing src = %+v", l)
	}
	for _, p := range []string{base, strings.TrimSuffix(base, "/")} {
		h.do("GET", p, nil).expect(t, 200).decode(t, &l)
		names := map[string]bool{}
		for _, it := range l.Items {
			names[it.Name] = true
		}
		if !names["src"] || !names["bin.dat"] {
			t.Fatalf("root listing via %s = %+v", p, l)
		}
	}

	// ?stat=true describes without reading.
	h.do("GET", base+"bin.dat?stat=true", nil).expect(t, 200).decode(t, &fi)
	if fi.Name != "bin.dat" || fi.Size != int64(len(bin)) {
		t.Fatalf("stat = %+v", fi)
	}

	// ?mkdir=true makes a directory.
	h.do("PUT", base+"a/b/c?mkdir=true", nil).expect(t, 200).decode(t, &fi)
	if !fi.IsDir {
		t.Fatalf("mkdir made %+v", fi)
	}

	// DELETE: a non-empty directory needs recursive.
	h.do("DELETE", base+"src", nil).expectError(t, 409, "conflict", "", "")
	h.do("DELETE", base+"src?recursive=true", nil).expect(t, 204)
	if _, err := os.Stat(filepath.Join(dir, "src")); !os.IsNotExist(err) {
		t.Fatalf("src still there: %v", err)
	}
	h.do("GET", base+"src/app/main.go", nil).expectError(t, 404, "not_found", "", "")
	h.do("DELETE", base+"missing", nil).expectError(t, 404, "not_found", "", "")
}

func TestFilesBadInput(t *testing.T) {
	h := newHarness(t)
	w, dir := h.runningWorkspace()
	base := "/v1/workspaces/" + w.ID + "/files/"
	tests := []struct {
		name, method, path string
		body               any
		status             int
		code               string
	}{
		{"dotdot", "GET", "..", nil, 400, "invalid"},
		{"dotdot passwd", "GET", "../../etc/passwd", nil, 400, "invalid"},
		{"encoded dotdot", "GET", "%2e%2e/%2e%2e/etc/passwd", nil, 400, "invalid"},
		{"inner dotdot", "GET", "a/../../x", nil, 400, "invalid"},
		{"absolute", "GET", "/etc/passwd", nil, 400, "invalid"},
		{"NUL", "GET", "a%00b", nil, 400, "invalid"},
		{"put dotdot", "PUT", "../escape.txt", "x", 400, "invalid"},
		{"put absolute", "PUT", "/tmp/escape.txt", "x", 400, "invalid"},
		{"delete dotdot", "DELETE", "../" + filepath.Base(dir), nil, 400, "invalid"},
		{"put root", "PUT", "", "x", 400, "invalid"},
		{"delete root", "DELETE", "", nil, 400, "invalid"},
		{"bad mode", "PUT", "f", "x", 400, "invalid"},
		{"put history", "PUT", ".state/HEAD", "x", 403, "forbidden"},
		{"put history dir", "PUT", ".state", "x", 403, "forbidden"},
		{"delete history", "DELETE", ".state", nil, 403, "forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.name == "bad mode" {
				hdr = []string{FileModeHeader, "rwx"}
			}
			r := h.do(tt.method, base+tt.path, tt.body, hdr...)
			r.expectError(t, tt.status, tt.code, "", "")
			if bytes.Contains(r.body, []byte("root:")) {
				t.Fatalf("response carries /etc/passwd: %s", r.body)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.txt")); !os.IsNotExist(err) {
		t.Fatal("a PUT escaped the workspace")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("workspace dir: %v", err)
	}
}

func TestFilesSymlinksOutAreRefused(t *testing.T) {
	h := newHarness(t)
	w, dir := h.runningWorkspace()
	base := "/v1/workspaces/" + w.ID + "/files/"

	outside := filepath.Join(h.dir, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	const secret = "outside-secret-contents"
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	// A command in the workspace makes the links, as an agent could.
	script := fmt.Sprintf("ln -s / escape && ln -s /etc/passwd pw && ln -s %s out && ln -s %s/secret sec && mkdir inside && ln -s inside in",
		outside, outside)
	var res wire.ExecResponse
	h.do("POST", "/v1/workspaces/"+w.ID+"/exec", map[string]any{"command": []string{"sh", "-c", script}}).
		expect(t, 200).decode(t, &res)
	if res.ExitCode != 0 {
		t.Fatalf("ln: %+v", res)
	}

	for _, tt := range []struct{ method, path string }{
		{"GET", "escape/etc/passwd"},
		{"GET", "escape"},
		{"GET", "pw"},
		{"GET", "sec"},
		{"GET", "out"},
		{"GET", "out/secret"},
		{"PUT", "pw"},
		{"PUT", "sec"},
		{"PUT", "out/new"},
		{"PUT", "escape/tmp/primer-escape"},
		{"DELETE", "out/secret"},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			var body any
			if tt.method == "PUT" {
				body = "overwritten"
			}
			r := h.do(tt.method, base+tt.path, body)
			if r.status < 400 || r.status > 499 {
				t.Fatalf("status %d, want 4xx; body %q", r.status, r.body)
			}
			r.envelope(t)
			if bytes.Contains(r.body, []byte("root:")) || bytes.Contains(r.body, []byte(secret)) {
				t.Fatalf("response carries outside content: %s", r.body)
			}
		})
	}
	// Nothing outside was written or removed.
	if data, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(data) != secret {
		t.Fatalf("outside secret changed: %q %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); !os.IsNotExist(err) {
		t.Fatal("PUT through a symlink created a file outside")
	}
	if _, err := os.Stat("/tmp/primer-escape"); !os.IsNotExist(err) {
		t.Fatal("PUT through a symlink to / wrote /tmp/primer-escape")
	}
	// A link that stays inside works.
	h.do("PUT", base+"inside/f", "ok").expect(t, 200)
	if r := h.do("GET", base+"in/f", nil).expect(t, 200); string(r.body) != "ok" {
		t.Fatalf("inside link read %q", r.body)
	}
	var l wire.DirListing
	h.do("GET", base+"in", nil).expect(t, 200).decode(t, &l)
	if len(l.Items) != 1 || l.Items[0].Name != "f" {
		t.Fatalf("listing through inside link = %+v", l)
	}
	_ = dir
}

func TestOversizedFileIs413(t *testing.T) {
	h := newHarness(t) // MaxFileBytes is 64 KiB in the harness
	w, dir := h.runningWorkspace()
	base := "/v1/workspaces/" + w.ID + "/files/"
	big := bytes.Repeat([]byte("x"), 64<<10+1)
	h.do("PUT", base+"big", big).expectError(t, 413, "too_large", "", "limit")
	h.do("PUT", base+"big2", io.MultiReader(bytes.NewReader(big))).expectError(t, 413, "too_large", "", "limit")
	for _, name := range []string{"big", "big2"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Fatalf("%s was written", name)
		}
	}
	h.do("PUT", base+"fits", big[:64<<10]).expect(t, 200)
}

func TestNotRunningIs409(t *testing.T) {
	h := newHarness(t)
	for _, phase := range []string{wire.PhasePending, wire.PhaseFailed, wire.PhaseTerminating} {
		w := h.workspace(phase)
		for _, r := range []response{
			h.do("POST", "/v1/workspaces/"+w.ID+"/exec", `{"command":["true"]}`),
			h.do("GET", "/v1/workspaces/"+w.ID+"/files/a", nil),
			h.do("PUT", "/v1/workspaces/"+w.ID+"/files/a", "x"),
			h.do("DELETE", "/v1/workspaces/"+w.ID+"/files/a", nil),
		} {
			r.expectError(t, 409, "failed_precondition", "", phase)
		}
	}
}

func TestExec(t *testing.T) {
	h := newHarness(t)
	w, dir := h.runningWorkspace()
	path := "/v1/workspaces/" + w.ID + "/exec"
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		body map[string]any
		want wire.ExecResponse
	}{
		{"echo", map[string]any{"command": []string{"sh", "-c", "echo hi; echo err >&2"}},
			wire.ExecResponse{Stdout: "hi\n", Stderr: "err\n"}},
		{"exit code", map[string]any{"command": []string{"sh", "-c", "exit 3"}}, wire.ExecResponse{ExitCode: 3}},
		{"env", map[string]any{"command": []string{"sh", "-c", "printf %s \"$FOO\""}, "env": map[string]string{"FOO": "bar"}},
			wire.ExecResponse{Stdout: "bar"}},
		{"cwd", map[string]any{"command": []string{"sh", "-c", "basename \"$PWD\""}, "cwd": "sub"},
			wire.ExecResponse{Stdout: "sub\n"}},
		{"stdin", map[string]any{"command": []string{"cat"}, "stdin": "piped"}, wire.ExecResponse{Stdout: "piped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got wire.ExecResponse
			h.do("POST", path, tt.body).expect(t, 200).decode(t, &got)
			if got.ExitCode != tt.want.ExitCode || got.Stdout != tt.want.Stdout || got.Stderr != tt.want.Stderr || got.TimedOut {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}

	t.Run("user", func(t *testing.T) {
		// The local backend's runtime reads the machine's /etc/passwd;
		// root is in every one. Switching to it needs the tests to run as
		// root (CI does); as another user the runtime answers 403.
		if os.Geteuid() != 0 {
			t.Skip("exec as root needs the tests to run as root")
		}
		var got wire.ExecResponse
		h.do("POST", path, `{"command":["sh","-c","id -u; echo $USER"],"user":"root"}`).expect(t, 200).decode(t, &got)
		if got.Stdout != "0\nroot\n" {
			t.Fatalf("exec as root = %+v", got)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		var got wire.ExecResponse
		start := time.Now()
		h.do("POST", path, `{"command":["sleep","10"],"timeout":"200ms"}`).expect(t, 200).decode(t, &got)
		if !got.TimedOut || time.Since(start) > 5*time.Second {
			t.Fatalf("got %+v after %s", got, time.Since(start))
		}
	})

	t.Run("truncated", func(t *testing.T) {
		h.srv.maxExecOutput = 1000
		defer func() { h.srv.maxExecOutput = 16 << 20 }()
		var got wire.ExecResponse
		h.do("POST", path, `{"command":["sh","-c","head -c 5000 /dev/zero | tr '\\0' a"]}`).expect(t, 200).decode(t, &got)
		if !got.Truncated || len(got.Stdout) != 1000 || got.ExitCode != 0 {
			t.Fatalf("truncated=%v len=%d exit=%d", got.Truncated, len(got.Stdout), got.ExitCode)
		}
	})

	bad := []struct {
		name, body, field string
		status            int
	}{
		{"empty command", `{"command":[]}`, "command", 400},
		{"missing command", `{}`, "command", 400},
		{"blank program", `{"command":[""]}`, "command", 400},
		{"bad timeout", `{"command":["true"],"timeout":"soon"}`, "timeout", 400},
		{"negative timeout", `{"command":["true"],"timeout":"-1s"}`, "timeout", 400},
		{"huge timeout", `{"command":["true"],"timeout":"25h"}`, "timeout", 400},
		{"bad env", `{"command":["true"],"env":{"A=B":"c"}}`, "env", 400},
		{"cwd escapes", `{"command":["true"],"cwd":"../.."}`, "cwd", 400},
		{"cwd absolute on a local workspace", `{"command":["true"],"cwd":"/etc"}`, "cwd", 400},
		{"unknown user", `{"command":["true"],"user":"no-such-user-xyz"}`, "", 400},
		{"bad user", `{"command":["true"],"user":"a:b"}`, "user", 400},
		{"unknown field", `{"command":["true"],"shell":true}`, "shell", 400},
		{"command wrong type", `{"command":"echo hi"}`, "command", 400},
		{"malformed", `{"command":["true"`, "", 400},
		{"no such program", `{"command":["definitely-not-a-program-xyz"]}`, "", 400},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			h.do("POST", path, tt.body).expectError(t, tt.status, "invalid", tt.field, "")
		})
	}
}

func TestExecStream(t *testing.T) {
	h := newHarness(t)
	w, _ := h.runningWorkspace()
	path := "/v1/workspaces/" + w.ID + "/exec"

	for _, tt := range []struct {
		name   string
		body   string
		header []string
	}{
		{"stream field", `{"command":["sh","-c","echo one; echo two >&2; printf 'h\\303\\251llo'; exit 4"],"stream":true}`, nil},
		{"accept header", `{"command":["sh","-c","echo one; echo two >&2; printf 'h\\303\\251llo'; exit 4"]}`, []string{"Accept", "application/x-ndjson"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do("POST", path, tt.body, tt.header...).expect(t, 200)
			if ct := r.header.Get("Content-Type"); ct != "application/x-ndjson" {
				t.Fatalf("content type %q", ct)
			}
			var stdout, stderr strings.Builder
			var exit *wire.ExecExit
			sc := bufio.NewScanner(bytes.NewReader(r.body))
			for sc.Scan() {
				var line struct {
					Stream string         `json:"stream"`
					Data   string         `json:"data"`
					Exit   *wire.ExecExit `json:"exit"`
				}
				if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
					t.Fatalf("line %q: %v", sc.Text(), err)
				}
				if exit != nil {
					t.Fatalf("line after exit: %q", sc.Text())
				}
				switch {
				case line.Exit != nil:
					exit = line.Exit
				case line.Stream == "stdout":
					stdout.WriteString(line.Data)
				case line.Stream == "stderr":
					stderr.WriteString(line.Data)
				default:
					t.Fatalf("unexpected line %q", sc.Text())
				}
			}
			if exit == nil || exit.ExitCode != 4 || stdout.String() != "one\nhéllo" || stderr.String() != "two\n" {
				t.Fatalf("exit %+v stdout %q stderr %q", exit, stdout.String(), stderr.String())
			}
		})
	}

	// Hanging up cancels the command: it would touch a file after 2 s.
	t.Run("disconnect cancels", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		body := `{"command":["sh","-c","echo started; sleep 2; echo late > late.txt"],"stream":true}`
		req, _ := http.NewRequestWithContext(ctx, "POST", h.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+h.adminKey)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(res.Body).ReadString('\n')
		if err != nil || !strings.Contains(line, "started") {
			t.Fatalf("first line %q %v", line, err)
		}
		cancel()
		res.Body.Close()
		time.Sleep(3 * time.Second)
		var fi protocol.FileInfo
		r := h.do("GET", "/v1/workspaces/"+w.ID+"/files/late.txt?stat=true", nil)
		if r.status != 404 {
			r.decode(t, &fi)
			t.Fatalf("the command kept running after the client left: %d %+v", r.status, fi)
		}
	})
}

func TestIncompleteSuffix(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"abc", 0}, {"", 0}, {"h\xc3", 1}, {"h\xc3\xa9", 0}, {"\xe2\x82", 2}, {"\xe2\x82\xac", 0},
		{"\xf0\x9f\x98", 3}, {"\xf0\x9f\x98\x80", 0}, {"\xff", 0},
	} {
		if got := incompleteSuffix([]byte(tt.in)); got != tt.want {
			t.Errorf("incompleteSuffix(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
