package sessiontool

import (
	"strings"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

func TestToolCallMessage(t *testing.T) {
	msg, err := CallMessage("ses-1", Exec, Exec+": "+ShellJoin([]string{"sh", "-c", strings.Repeat("x", 100) + "\nsecond line"}), "",
		map[string]any{"command": "<&>"}, map[string]int{"exit_code": 1})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(msg, "\n")
	if len([]rune(lines[0])) != SummaryWidth || !strings.HasSuffix(lines[0], "...") || lines[1] != "" {
		t.Errorf("summary %q", lines[0])
	}
	want := "Tool: workspace__exec\nArguments: {\"command\":\"<&>\"}\nResult: {\"exit_code\":1}\n\nPrimer-Session: ses-1\nPrimer-Tool: workspace__exec\n"
	if !strings.HasSuffix(msg, want) {
		t.Errorf("message %q, want suffix %q", msg, want)
	}
	for in, want := range map[string]string{"ls": "ls", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "src/x.go": "src/x.go"} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
	name, email := Author(&wire.Session{ID: "ses-9", Agent: "<bad>\nagent"})
	if name != "badagent" || email != "ses-9@sessions.primer" {
		t.Errorf("author %q <%s>", name, email)
	}
}

// TestToolPrepareRefuses: bad arguments are refused before anything runs,
// naming the field; the kinds are the API's (an unknown tool NotFound,
// content over the limit TooLarge).
func TestToolPrepareRefuses(t *testing.T) {
	lim := Limits{MaxFileBytes: 8, MaxOutput: 16, MaxExecTimeout: 60_000_000_000}
	tests := []struct {
		name, tool, args string
		kind             errs.Kind
		field, msg       string
	}{
		{"unknown tool", "workspace__delete", `{}`, errs.NotFound, "", `tool "workspace__delete": not found`},
		{"path escapes", Write, `{"path":"a/../../x","content":"a"}`, errs.Invalid, "path", "escapes the workspace root"},
		{"absolute path", Read, `{"path":"/etc/passwd"}`, errs.Invalid, "path", "absolute paths are not allowed"},
		{"history", Read, `{"path":"./.state/HEAD"}`, errs.Invalid, "path", ".state holds the workspace's history"},
		{"root", Read, `{"path":"."}`, errs.Invalid, "path", "is the workspace root"},
		{"no path", Read, ``, errs.Invalid, "path", "path: required"},
		{"cwd escapes", Exec, `{"command":"true","cwd":".."}`, errs.Invalid, "cwd", "escapes the workspace root"},
		{"no program", Exec, `{"cwd":"a"}`, errs.Invalid, "args", "args or command: required"},
		{"both", Exec, `{"args":["ls"],"command":"ls"}`, errs.Invalid, "args", "not both"},
		{"empty program", Exec, `{"args":[""]}`, errs.Invalid, "args", "args[0]: must name the program"},
		{"NUL", Exec, `{"command":"a\u0000b"}`, errs.Invalid, "command", "NUL"},
		{"env name", Exec, `{"command":"true","env":{"A=B":"x"}}`, errs.Invalid, "env", "invalid variable name"},
		{"timeout", Exec, `{"command":"true","timeout":"soon"}`, errs.Invalid, "timeout", "is not a duration"},
		{"timeout over max", Exec, `{"command":"true","timeout":"2m"}`, errs.Invalid, "timeout", "at most 1m0s"},
		{"unknown field", Exec, `{"cmd":"ls"}`, errs.Invalid, "cmd", "cmd: unknown field"},
		{"wrong type", Exec, `{"args":"ls"}`, errs.Invalid, "args", "args: expected an array, got string"},
		{"not an object", Read, `["a"]`, errs.Invalid, "", "expected a JSON object"},
		{"malformed", Read, `{"path":`, errs.Invalid, "", "malformed JSON"},
		{"too large", Write, `{"path":"a","content":"123456789"}`, errs.TooLarge, "", "9 bytes is over the limit of 8"},
		{"bad base64", Write, `{"path":"a","content":"!!","encoding":"base64"}`, errs.Invalid, "content", "not valid base64"},
		{"bad encoding", Write, `{"path":"a","content":"a","encoding":"latin1"}`, errs.Invalid, "encoding", "not one of"},
		{"bad mode", Write, `{"path":"a","content":"a","mode":"0999"}`, errs.Invalid, "mode", "octal permission"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Prepare(tt.tool, []byte(tt.args), lim)
			if err == nil {
				t.Fatalf("Prepare = %+v, want an error", p)
			}
			if errs.KindOf(err) != tt.kind || errs.FieldOf(err) != tt.field || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v (kind %v, field %q), want kind %v, field %q, containing %q", err, errs.KindOf(err), errs.FieldOf(err), tt.kind, tt.field, tt.msg)
			}
			// Call, as an agent run uses it, tells the model the same words
			// as the call's own fault.
			_, _, cerr := Call(t.Context(), Target{}, lim, tt.tool, []byte(tt.args))
			if cerr == nil || cerr.Error() != err.Error() || errs.KindOf(cerr) != errs.Invalid || errs.FieldOf(cerr) != tt.field {
				t.Fatalf("Call error %v (kind %v), want %q of kind Invalid", cerr, errs.KindOf(cerr), err)
			}
		})
	}
}

func TestToolPrepareAccepts(t *testing.T) {
	lim := Limits{MaxFileBytes: 8, DefaultExecTimeout: 5_000_000_000}
	p, err := Prepare(Exec, []byte(`{"command":"echo hi","cwd":"src/../lib/.","env":{"A":"1"},"stdin":"x"}`), lim)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.req; strings.Join(got.Args, " ") != "sh -c echo hi" || got.Cwd != "lib" || got.Timeout != lim.DefaultExecTimeout || string(got.Stdin) != "x" || got.Env["A"] != "1" {
		t.Fatalf("exec request %+v", got)
	}
	if p, err = Prepare(Write, []byte(`{"path":"./a/b.txt","content":"aGk=","encoding":"base64","mode":"0600"}`), lim); err != nil {
		t.Fatal(err)
	}
	if p.path != "a/b.txt" || string(p.data) != "hi" || p.mode != 0o600 || p.Tool() != Write {
		t.Fatalf("write %q %q %o", p.path, p.data, p.mode)
	}
}
