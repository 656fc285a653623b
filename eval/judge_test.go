package eval

import (
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	full := Case{
		Timeout: Duration(30 * time.Second),
		Expect: Expect{
			StdoutContains: []string{"ok", "done"},
			StdoutMatches:  `(?m)^total: \d+$`,
			Files:          map[string]File{"out.txt": Text("hi"), "b.bin": {Data: []byte{0, 1}, Binary: true}},
		},
	}
	good := Outcome{Stdout: "ok\ntotal: 3\ndone\n", Files: map[string][]byte{"out.txt": []byte("hi"), "b.bin": {0, 1}}}
	with := func(edit func(o *Outcome)) Outcome {
		o := good
		o.Files = map[string][]byte{"out.txt": []byte("hi"), "b.bin": {0, 1}}
		edit(&o)
		return o
	}
	tests := []struct {
		name    string
		c       Case
		o       Outcome
		verdict string
		reason  string
	}{
		{"zero expect passes on exit 0", Case{}, Outcome{}, VerdictPass, ""},
		{"all expectations met", full, good, VerdictPass, ""},
		{"zero expect fails on exit 1", Case{}, Outcome{ExitCode: 1}, VerdictFail, "exit code 1, want 0"},
		{"expected exit code", Case{Expect: Expect{ExitCode: intp(3)}}, Outcome{ExitCode: 3}, VerdictPass, ""},
		{"expected non-zero, got zero", Case{Expect: Expect{ExitCode: intp(3)}}, Outcome{}, VerdictFail, "exit code 0, want 3"},
		{"setup failed comes first", full, with(func(o *Outcome) { o.SetupFailed = "setup[0]: exit status 2"; o.TimedOut = true; o.ExitCode = 1 }), VerdictFail, "setup[0]: exit status 2"},
		{"timeout before exit code", full, with(func(o *Outcome) { o.TimedOut = true; o.ExitCode = -1 }), VerdictFail, "timed out after 30s"},
		{"timeout of a case without one", Case{}, Outcome{TimedOut: true}, VerdictFail, "timed out after 5m0s"},
		{"exit code before stdout", full, with(func(o *Outcome) { o.ExitCode = 1; o.Stdout = "" }), VerdictFail, "exit code 1, want 0"},
		{"stdout contains, first missing", full, with(func(o *Outcome) { o.Stdout = "total: 3\n" }), VerdictFail, `stdout does not contain "ok"`},
		{"stdout contains, second missing", full, with(func(o *Outcome) { o.Stdout = "ok total: 3" }), VerdictFail, `stdout does not contain "done"`},
		{"stdout matches", full, with(func(o *Outcome) { o.Stdout = "ok done total: x" }), VerdictFail, `stdout does not match "(?m)^total: \\d+$"`},
		{"bad regexp fails", Case{Expect: Expect{StdoutMatches: "("}}, Outcome{}, VerdictFail, "expect.stdout_matches: error parsing regexp: missing closing ): `(`"},
		{"file missing", full, with(func(o *Outcome) { delete(o.Files, "out.txt") }), VerdictFail, "file out.txt: missing"},
		{"file differs", full, with(func(o *Outcome) { o.Files["out.txt"] = []byte("hi\n") }), VerdictFail, "file out.txt: content differs (got 3 bytes, want 2)"},
		{"binary file differs, files in order", full, with(func(o *Outcome) { o.Files["b.bin"] = []byte{0, 2}; o.Files["out.txt"] = nil }), VerdictFail, "file b.bin: content differs (got 2 bytes, want 2)"},
		{"empty expected file exists", Case{Expect: Expect{Files: map[string]File{"e": Text("")}}}, Outcome{Files: map[string][]byte{"e": nil}}, VerdictPass, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verdict, reason := Judge(tt.c, tt.o)
			if verdict != tt.verdict || reason != tt.reason {
				t.Errorf("Judge = %s, %q; want %s, %q", verdict, reason, tt.verdict, tt.reason)
			}
		})
	}
}
