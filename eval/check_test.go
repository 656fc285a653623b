package eval

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
)

// validSuite returns a suite that passes Check, for tests to break one
// field at a time.
func validSuite() *SuiteSpec {
	return &SuiteSpec{
		ID:         "py-basics",
		TemplateID: "python",
		Defaults: CaseDefaults{
			Timeout: Duration(time.Minute),
			Files:   map[string]File{"lib/helpers.py": Text("x = 1\n")},
			Env:     map[string]string{"PYTHONDONTWRITEBYTECODE": "1"},
			Setup:   []string{"pip install -q pytest"},
		},
		Cases: []Case{
			{ID: "add", Command: Command{Args: []string{"python3", "add.py"}}, Files: map[string]File{"add.py": Text("print(1+1)")},
				Expect:    Expect{StdoutContains: []string{"2"}, StdoutMatches: `^\d+$`, Files: map[string]File{"out/result.txt": Text("ok")}},
				ScoreFile: "score.json", Collect: []string{"out/log.txt"}, Labels: map[string]string{"level": "easy"}},
			{ID: "sub", Command: Command{Script: "python3 sub.py"}, Timeout: Duration(30 * time.Second)},
		},
	}
}

func intp(i int) *int { return &i }

func TestCheckFillsDefaults(t *testing.T) {
	s := validSuite()
	s.Schedule = &Schedule{Cron: "@daily"}
	if err := s.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if s.Concurrency != DefaultConcurrency {
		t.Errorf("Concurrency = %d, want %d", s.Concurrency, DefaultConcurrency)
	}
	if s.Retries == nil || *s.Retries != DefaultRetries {
		t.Errorf("Retries = %v, want %d", s.Retries, DefaultRetries)
	}
	if s.Schedule.TimeZone != "UTC" || s.Schedule.Overlap != OverlapSkip {
		t.Errorf("Schedule = %+v, want time zone UTC and overlap skip", s.Schedule)
	}

	// Values set stay as they are, zero retries included.
	s = validSuite()
	s.PoolID, s.TemplateID = "warm", ""
	s.Concurrency, s.Retries = MaxConcurrency, intp(0)
	s.Schedule = &Schedule{Interval: Duration(time.Hour), TimeZone: "Europe/Berlin", Overlap: OverlapAllowAll}
	if err := s.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if s.Concurrency != MaxConcurrency || *s.Retries != 0 || s.Schedule.TimeZone != "Europe/Berlin" || s.Schedule.Overlap != OverlapAllowAll {
		t.Errorf("Check changed set values: concurrency %d retries %d schedule %+v", s.Concurrency, *s.Retries, s.Schedule)
	}
}

func TestCheckAcceptsCron(t *testing.T) {
	for _, expr := range []string{"0 3 * * *", "*/15 * * * 1-5", "@daily", "@hourly", "@weekly", "@midnight", " 0 0 1 * * "} {
		s := validSuite()
		s.Schedule = &Schedule{Cron: expr}
		if err := s.Check(); err != nil {
			t.Errorf("cron %q: %v", expr, err)
		}
	}
}

func TestCheckRejects(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(s *SuiteSpec)
		field string
		msg   string // part of the message
	}{
		{"no id", func(s *SuiteSpec) { s.ID = "" }, "spec.id", "required"},
		{"bad id", func(s *SuiteSpec) { s.ID = "Py Basics" }, "spec.id", "not a valid id"},
		{"id too long", func(s *SuiteSpec) { s.ID = strings.Repeat("a", 129) }, "spec.id", "not a valid id"},
		{"id ends with dash", func(s *SuiteSpec) { s.ID = "a-" }, "spec.id", "not a valid id"},
		{"template and pool", func(s *SuiteSpec) { s.PoolID = "warm" }, "spec.template_id", "not both"},
		{"neither template nor pool", func(s *SuiteSpec) { s.TemplateID = "" }, "spec.template_id", "required"},
		{"bad template id", func(s *SuiteSpec) { s.TemplateID = "../x" }, "spec.template_id", "not a valid id"},
		{"bad pool id", func(s *SuiteSpec) { s.TemplateID, s.PoolID = "", "Warm" }, "spec.pool_id", "not a valid id"},
		{"concurrency negative", func(s *SuiteSpec) { s.Concurrency = -1 }, "spec.concurrency", "out of range"},
		{"concurrency too high", func(s *SuiteSpec) { s.Concurrency = MaxConcurrency + 1 }, "spec.concurrency", "out of range"},
		{"retries negative", func(s *SuiteSpec) { s.Retries = intp(-1) }, "spec.retries", "out of range"},
		{"retries too high", func(s *SuiteSpec) { s.Retries = intp(MaxRetries + 1) }, "spec.retries", "out of range"},
		{"webhook not http", func(s *SuiteSpec) { s.WebhookURL = "ftp://x/y" }, "spec.webhook_url", "not an http"},
		{"no cases", func(s *SuiteSpec) { s.Cases = nil }, "spec.cases", "at least one case"},
		{"too many cases", func(s *SuiteSpec) {
			s.Cases = make([]Case, MaxCases+1)
		}, "spec.cases", "at most"},
		{"case id missing", func(s *SuiteSpec) { s.Cases[1].ID = "" }, "spec.cases[1].id", "required"},
		{"case id invalid", func(s *SuiteSpec) { s.Cases[1].ID = "Sub" }, "spec.cases[1].id", "not a valid id"},
		{"case id duplicate", func(s *SuiteSpec) { s.Cases[1].ID = "add" }, "spec.cases[1].id", "duplicate of spec.cases[0].id"},
		{"no command", func(s *SuiteSpec) { s.Cases[1].Command = Command{} }, "spec.cases[1].command", "required"},
		{"empty program", func(s *SuiteSpec) { s.Cases[0].Command = Command{Args: []string{"", "x"}} }, "spec.cases[0].command", "program"},
		{"NUL in argument", func(s *SuiteSpec) { s.Cases[0].Command = Command{Args: []string{"echo", "a\x00b"}} }, "spec.cases[0].command", "NUL"},
		{"file escapes", func(s *SuiteSpec) { s.Cases[1].Files = map[string]File{"../x": Text("")} }, "spec.cases[1].files[../x]", "leaves the workspace"},
		{"file escapes after clean", func(s *SuiteSpec) { s.Cases[1].Files = map[string]File{"a/../../x": Text("")} }, "spec.cases[1].files[a/../../x]", "leaves the workspace"},
		{"file absolute", func(s *SuiteSpec) { s.Cases[1].Files = map[string]File{"/etc/passwd": Text("")} }, "spec.cases[1].files[/etc/passwd]", "relative"},
		{"file empty path", func(s *SuiteSpec) { s.Cases[1].Files = map[string]File{"": Text("")} }, "spec.cases[1].files[]", "empty path"},
		{"file NUL", func(s *SuiteSpec) { s.Cases[1].Files = map[string]File{"a\x00b": Text("")} }, `spec.cases[1].files["a\x00b"]`, "NUL"},
		{"file is root", func(s *SuiteSpec) { s.Cases[1].Files = map[string]File{"a/..": Text("")} }, "spec.cases[1].files[a/..]", "root"},
		{"defaults file escapes", func(s *SuiteSpec) { s.Defaults.Files = map[string]File{"../../x": Text("")} }, "spec.defaults.files[../../x]", "leaves"},
		{"expect file escapes", func(s *SuiteSpec) { s.Cases[0].Expect.Files = map[string]File{"../out": Text("")} }, "spec.cases[0].expect.files[../out]", "leaves"},
		{"score file absolute", func(s *SuiteSpec) { s.Cases[0].ScoreFile = "/tmp/score.json" }, "spec.cases[0].score_file", "relative"},
		{"collect escapes", func(s *SuiteSpec) { s.Cases[0].Collect = []string{"ok.txt", ".."} }, "spec.cases[0].collect[1]", "leaves"},
		{"timeout negative", func(s *SuiteSpec) { s.Cases[1].Timeout = Duration(-time.Second) }, "spec.cases[1].timeout", "out of range"},
		{"timeout too long", func(s *SuiteSpec) { s.Cases[1].Timeout = Duration(MaxTimeout + time.Second) }, "spec.cases[1].timeout", "out of range"},
		{"defaults timeout too long", func(s *SuiteSpec) { s.Defaults.Timeout = Duration(7 * time.Hour) }, "spec.defaults.timeout", "out of range"},
		{"stdout_matches bad regexp", func(s *SuiteSpec) { s.Cases[0].Expect.StdoutMatches = "(" }, "spec.cases[0].expect.stdout_matches", "missing closing"},
		{"exit code out of range", func(s *SuiteSpec) { s.Cases[0].Expect.ExitCode = intp(256) }, "spec.cases[0].expect.exit_code", "out of range"},
		{"empty setup command", func(s *SuiteSpec) { s.Cases[0].Setup = []string{"true", " "} }, "spec.cases[0].setup[1]", "empty"},
		{"env name with =", func(s *SuiteSpec) { s.Cases[0].Env = map[string]string{"A=B": "x"} }, "spec.cases[0].env[A=B]", "not a valid environment"},
		{"too many labels", func(s *SuiteSpec) {
			s.Cases[0].Labels = map[string]string{}
			for i := range maxLabels + 1 {
				s.Cases[0].Labels[strings.Repeat("k", i+1)] = "v"
			}
		}, "spec.cases[0].labels", "at most 64"},
		{"label key empty", func(s *SuiteSpec) { s.Cases[0].Labels = map[string]string{"": "v"} }, "spec.cases[0].labels", "key"},
		{"label key too long", func(s *SuiteSpec) { s.Cases[0].Labels = map[string]string{strings.Repeat("k", 129): "v"} }, "spec.cases[0].labels", "key"},
		{"label key not printable", func(s *SuiteSpec) { s.Cases[0].Labels = map[string]string{"a\nb": "v"} }, "spec.cases[0].labels", "key"},
		{"label value too long", func(s *SuiteSpec) { s.Cases[0].Labels = map[string]string{"k": strings.Repeat("v", 1025)} }, "spec.cases[0].labels", "value"},
		{"label value not printable", func(s *SuiteSpec) { s.Cases[0].Labels = map[string]string{"k": "\x01"} }, "spec.cases[0].labels", "value"},
		{"bad cron", func(s *SuiteSpec) { s.Schedule = &Schedule{Cron: "every day"} }, "spec.schedule.cron", "not a valid cron"},
		{"cron out of range", func(s *SuiteSpec) { s.Schedule = &Schedule{Cron: "61 * * * *"} }, "spec.schedule.cron", "not a valid cron"},
		{"cron with six fields", func(s *SuiteSpec) { s.Schedule = &Schedule{Cron: "0 0 3 * * *"} }, "spec.schedule.cron", "not a valid cron"},
		{"cron with zone", func(s *SuiteSpec) { s.Schedule = &Schedule{Cron: "CRON_TZ=Europe/Berlin 0 3 * * *"} }, "spec.schedule.cron", "time_zone"},
		{"cron @every", func(s *SuiteSpec) { s.Schedule = &Schedule{Cron: "@every 1h"} }, "spec.schedule.cron", "interval"},
		{"cron and interval", func(s *SuiteSpec) { s.Schedule = &Schedule{Cron: "@daily", Interval: Duration(time.Hour)} }, "spec.schedule.cron", "not both"},
		{"neither cron nor interval", func(s *SuiteSpec) { s.Schedule = &Schedule{TimeZone: "UTC"} }, "spec.schedule.cron", "required"},
		{"interval too short", func(s *SuiteSpec) { s.Schedule = &Schedule{Interval: Duration(500 * time.Millisecond)} }, "spec.schedule.interval", "at least 1s"},
		{"interval negative", func(s *SuiteSpec) { s.Schedule = &Schedule{Interval: Duration(-time.Hour)} }, "spec.schedule.interval", "at least 1s"},
		{"unknown time zone", func(s *SuiteSpec) { s.Schedule = &Schedule{Cron: "@daily", TimeZone: "Mars/Olympus"} }, "spec.schedule.time_zone", "not a known"},
		{"Local time zone", func(s *SuiteSpec) { s.Schedule = &Schedule{Cron: "@daily", TimeZone: "Local"} }, "spec.schedule.time_zone", "Local"},
		{"unknown overlap", func(s *SuiteSpec) { s.Schedule = &Schedule{Cron: "@daily", Overlap: "queue"} }, "spec.schedule.overlap", "not one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSuite()
			tt.edit(s)
			err := s.Check()
			if err == nil {
				t.Fatalf("Check passed, want an error naming %s", tt.field)
			}
			if !errs.Is(err, errs.Invalid) {
				t.Errorf("kind = %v, want invalid (%v)", errs.KindOf(err), err)
			}
			if got := errs.FieldOf(err); got != tt.field {
				t.Errorf("field = %q, want %q (%v)", got, tt.field, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
		})
	}
}

func TestDocumentRoundTrip(t *testing.T) {
	doc := `{"id": "s", "template_id": "python", "defaults": {"timeout": 30},
		"cases": [
			{"id": "a", "command": ["python3", "-c", "print(1)"], "timeout": "30s",
			 "files": {"in.txt": "hello\n", "data.bin": {"base64": "AAH/"}}},
			{"id": "b", "command": "echo hi && exit 3", "timeout": 1.5, "expect": {"exit_code": 3}}
		]}`
	var s SuiteSpec
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	a, b := s.Cases[0], s.Cases[1]
	if got := a.Command.Argv(); strings.Join(got, "|") != "python3|-c|print(1)" || a.Command.Script != "" {
		t.Errorf("list command = %+v", a.Command)
	}
	if got := b.Command.Argv(); len(got) != 3 || got[0] != "sh" || got[1] != "-c" || got[2] != "echo hi && exit 3" {
		t.Errorf("string command argv = %q", got)
	}
	if s.Defaults.Timeout.D() != 30*time.Second || a.Timeout.D() != 30*time.Second || b.Timeout.D() != 1500*time.Millisecond {
		t.Errorf("timeouts = %v, %v, %v; want 30s, 30s, 1.5s", s.Defaults.Timeout.D(), a.Timeout.D(), b.Timeout.D())
	}
	if f := a.Files["in.txt"]; string(f.Data) != "hello\n" || f.Binary {
		t.Errorf("text file = %+v", f)
	}
	if f := a.Files["data.bin"]; string(f.Data) != "\x00\x01\xff" || !f.Binary {
		t.Errorf("base64 file = %+v", f)
	}

	// Writing it out and reading it back gives the same suite: text stays
	// text, binary stays base64, each command keeps its form.
	out, err := json.Marshal(&s)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	for _, want := range []string{`"in.txt":"hello\n"`, `"data.bin":{"base64":"AAH/"}`, `"command":["python3","-c","print(1)"]`, `"command":"echo hi \u0026\u0026 exit 3"`, `"timeout":"30s"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("marshalled suite lacks %s:\n%s", want, out)
		}
	}
	var back SuiteSpec
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	again, _ := json.Marshal(&back)
	if string(again) != string(out) {
		t.Errorf("round trip differs:\n%s\n%s", out, again)
	}
}

func TestDocumentBadValues(t *testing.T) {
	tests := []struct{ name, doc, msg string }{
		{"command object", `{"id":"a","command":{"x":1}}`, "command: want a list"},
		{"file number", `{"id":"a","command":"x","files":{"a":1}}`, "file: want a string"},
		{"file bad base64", `{"id":"a","command":"x","files":{"a":{"base64":"!!"}}}`, "base64"},
		{"duration word", `{"id":"a","command":"x","timeout":"soon"}`, "want a Go duration"},
		{"duration bool", `{"id":"a","command":"x","timeout":true}`, "duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Case
			err := json.Unmarshal([]byte(tt.doc), &c)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want one saying %q", err, tt.msg)
			}
		})
	}
}
