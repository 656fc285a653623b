package eval

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Judge gives the verdict of one executed attempt: pass, or fail with a
// reason saying the first expectation not met ("exit code 1, want 0";
// "stdout does not contain \"ok\""; "timed out after 30s"; "file out.txt:
// content differs"; "setup[0]: exit status 2"). The checks run in this
// order: setup, timeout, exit code, stdout_contains, stdout_matches,
// files. Judge never returns VerdictError: an attempt that executed is
// the command's outcome, not the infrastructure's.
func Judge(c Case, o Outcome) (verdict, reason string) {
	if o.SetupFailed != "" {
		return VerdictFail, o.SetupFailed
	}
	if o.TimedOut {
		timeout := c.Timeout.D()
		if timeout == 0 {
			timeout = DefaultTimeout
		}
		return VerdictFail, fmt.Sprintf("timed out after %s", timeout)
	}
	want := 0
	if c.Expect.ExitCode != nil {
		want = *c.Expect.ExitCode
	}
	if o.ExitCode != want {
		return VerdictFail, fmt.Sprintf("exit code %d, want %d", o.ExitCode, want)
	}
	for _, s := range c.Expect.StdoutContains {
		if !strings.Contains(o.Stdout, s) {
			return VerdictFail, fmt.Sprintf("stdout does not contain %q", s)
		}
	}
	if c.Expect.StdoutMatches != "" {
		re, err := regexp.Compile(c.Expect.StdoutMatches)
		if err != nil {
			// Check refuses such a case; one stored before that rule
			// fails rather than passing unchecked.
			return VerdictFail, fmt.Sprintf("expect.stdout_matches: %v", err)
		}
		if !re.MatchString(o.Stdout) {
			return VerdictFail, fmt.Sprintf("stdout does not match %q", c.Expect.StdoutMatches)
		}
	}
	for _, p := range sortedKeys(c.Expect.Files) {
		got, ok := o.Files[p]
		if !ok {
			return VerdictFail, fmt.Sprintf("file %s: missing", p)
		}
		if wantData := c.Expect.Files[p].Data; !bytes.Equal(got, wantData) {
			return VerdictFail, fmt.Sprintf("file %s: content differs (got %d bytes, want %d)", p, len(got), len(wantData))
		}
	}
	return VerdictPass, ""
}
