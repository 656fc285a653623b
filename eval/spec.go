// Package eval holds what an eval suite is, independent of where it runs:
// the suite and case documents (`kind: eval_suite`) with their validation
// and JSONL loading, the verdict of one case from its outcome, and the
// reports over stored results (progress, JUnit XML, comparison of two
// runs). It does no I/O: the API validates with it, the activities judge
// cases with it, and both read the same types from the store.
package eval

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Limits of a suite document.
const (
	// MaxCases is the most cases one suite may hold.
	MaxCases = 50000
	// MaxSuiteBytes bounds a suite document with its cases (JSON or JSONL).
	MaxSuiteBytes = 64 << 20
	// MaxConcurrency bounds how many cases of a run execute at once.
	MaxConcurrency = 64
	// DefaultConcurrency is a suite's concurrency when it sets none.
	DefaultConcurrency = 4
	// MaxRetries bounds the infrastructure retries of a case.
	MaxRetries = 5
	// DefaultRetries is how often a case whose infrastructure failed is
	// run again on another workspace when the suite does not say.
	DefaultRetries = 2
	// DefaultTimeout is a case's timeout when neither it nor the suite's
	// defaults set one.
	DefaultTimeout = 5 * time.Minute
	// MaxTimeout bounds a case's timeout.
	MaxTimeout = 6 * time.Hour
	// TailBytes is how much of a case's stdout and stderr a result keeps
	// (the end of each).
	TailBytes = 4 << 10
	// MaxArtifactBytes bounds one collected file; MaxArtifactsBytes all
	// of a case's collected files together. Larger files are kept
	// truncated and marked so.
	MaxArtifactBytes  = 256 << 10
	MaxArtifactsBytes = 1 << 20
)

// Verdicts of a case.
const (
	// VerdictPass: the command's outcome met every expectation.
	VerdictPass = "pass"
	// VerdictFail: the command ran and its outcome did not meet an
	// expectation (a timeout included). A failing case is never retried.
	VerdictFail = "fail"
	// VerdictError: the infrastructure failed (the workspace was lost,
	// escalated or unreachable) on every attempt.
	VerdictError = "error"
)

// Schedule overlap policies (Temporal's, by their document names).
const (
	OverlapSkip      = "skip"
	OverlapBufferOne = "buffer_one"
	OverlapAllowAll  = "allow_all"
)

// SuiteSpec is the spec of a `kind: eval_suite` document and the body of
// POST /v1/suites. Exactly one of TemplateID and PoolID says where cases
// run.
type SuiteSpec struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	// TemplateID: the run creates up to Concurrency workspaces of this
	// template, resets them between cases and deletes them at the end.
	TemplateID string `json:"template_id,omitempty"`
	// PoolID: the run leases its workspaces from this warm pool and
	// returns them at the end.
	PoolID string `json:"pool_id,omitempty"`
	// Concurrency is how many cases run at once (1..MaxConcurrency; 0:
	// DefaultConcurrency).
	Concurrency int `json:"concurrency,omitempty"`
	// Retries is how often a case is run again on another workspace when
	// the infrastructure failed (0..MaxRetries; nil: DefaultRetries).
	Retries *int `json:"retries,omitempty"`
	// Defaults apply to every case that does not set the field itself;
	// env and files are merged, the case's entries winning.
	Defaults CaseDefaults `json:"defaults,omitempty"`
	// WebhookURL, when set, is POSTed the run's summary when a run ends.
	WebhookURL string `json:"webhook_url,omitempty"`
	// Schedule, when set, starts runs by itself (a Temporal Schedule).
	Schedule *Schedule `json:"schedule,omitempty"`
	// Cases are the suite's cases; a JSONL body carries them one a line
	// instead.
	Cases []Case `json:"cases,omitempty"`
}

// CaseDefaults are the fields a suite sets for all its cases.
type CaseDefaults struct {
	Timeout Duration          `json:"timeout,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Files   map[string]File   `json:"files,omitempty"`
	Setup   []string          `json:"setup,omitempty"`
}

// Case is one case of a suite.
type Case struct {
	// ID is unique in the suite (the rules of every Primer id).
	ID string `json:"id"`
	// Files are written into the workspace before setup.
	Files map[string]File `json:"files,omitempty"`
	// Setup commands run in order with `sh -c` before the command; one
	// that fails fails the case.
	Setup []string `json:"setup,omitempty"`
	// Command is what the case runs: args, or a script run with `sh -c`.
	Command Command           `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	// Timeout bounds setup and command together (0: the suite's default,
	// else DefaultTimeout).
	Timeout Duration `json:"timeout,omitempty"`
	Expect  Expect   `json:"expect,omitempty"`
	// ScoreFile is a JSON file the case writes: {"score": 0.8,
	// "metrics": {"name": 1.5}}.
	ScoreFile string `json:"score_file,omitempty"`
	// Collect are paths read back after the command and kept as
	// artifacts (size-limited).
	Collect []string          `json:"collect,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// Expect is what a passing case's outcome looks like. The zero Expect
// expects exit code 0 and nothing else.
type Expect struct {
	// ExitCode is the exit code wanted (nil: 0).
	ExitCode *int `json:"exit_code,omitempty"`
	// StdoutContains: each must appear in stdout.
	StdoutContains []string `json:"stdout_contains,omitempty"`
	// StdoutMatches: a regular expression (Go syntax) stdout must match.
	StdoutMatches string `json:"stdout_matches,omitempty"`
	// Files: each path must exist with exactly this content.
	Files map[string]File `json:"files,omitempty"`
}

// Schedule starts runs of a suite by itself: Cron or Interval, not both.
type Schedule struct {
	// Cron is a cron expression (5 fields, or a Temporal-supported
	// descriptor such as @daily).
	Cron string `json:"cron,omitempty"`
	// Interval starts a run every Interval (at least a second).
	Interval Duration `json:"interval,omitempty"`
	// TimeZone is an IANA name the cron is read in (default UTC).
	TimeZone string `json:"time_zone,omitempty"`
	// Overlap is what happens when a run is due while the last one still
	// runs: skip (default), buffer_one or allow_all.
	Overlap string `json:"overlap,omitempty"`
	// Paused schedules start no runs until resumed.
	Paused bool `json:"paused,omitempty"`
}

// Command is a case's command: Args run as they are, or Script runs with
// `sh -c`. In a document it is a list (args) or a string (script).
type Command struct {
	Args   []string
	Script string
}

// Argv returns the argument vector the runtime executes.
func (c Command) Argv() []string {
	if c.Script != "" {
		return []string{"sh", "-c", c.Script}
	}
	return c.Args
}

// IsZero reports whether no command is set.
func (c Command) IsZero() bool { return c.Script == "" && len(c.Args) == 0 }

// MarshalJSON writes the list or the string it was read from.
func (c Command) MarshalJSON() ([]byte, error) {
	if c.Script != "" {
		return json.Marshal(c.Script)
	}
	if c.Args == nil {
		return []byte("null"), nil
	}
	return json.Marshal(c.Args)
}

// UnmarshalJSON reads a list of strings (args) or a string (script).
func (c *Command) UnmarshalJSON(b []byte) error {
	*c = Command{}
	s := strings.TrimSpace(string(b))
	switch {
	case s == "null":
		return nil
	case strings.HasPrefix(s, `"`):
		return json.Unmarshal(b, &c.Script)
	case strings.HasPrefix(s, "["):
		return json.Unmarshal(b, &c.Args)
	}
	return fmt.Errorf("command: want a list of arguments or a script string")
}

// File is a file's content: text, or bytes given as base64. In a document
// it is a string (text) or {"base64": "..."}.
type File struct {
	Data   []byte
	Binary bool // written as base64
}

// Text returns a File holding s.
func Text(s string) File { return File{Data: []byte(s)} }

// MarshalJSON writes a string, or {"base64": ...} for binary content.
func (f File) MarshalJSON() ([]byte, error) {
	if f.Binary {
		return json.Marshal(map[string]string{"base64": base64.StdEncoding.EncodeToString(f.Data)})
	}
	return json.Marshal(string(f.Data))
}

// UnmarshalJSON reads a string or {"base64": "..."}.
func (f *File) UnmarshalJSON(b []byte) error {
	*f = File{}
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, `"`) {
		var text string
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
		f.Data = []byte(text)
		return nil
	}
	var obj struct {
		Base64 *string `json:"base64"`
	}
	if err := json.Unmarshal(b, &obj); err != nil || obj.Base64 == nil {
		return fmt.Errorf(`file: want a string or {"base64": "..."}`)
	}
	data, err := base64.StdEncoding.DecodeString(*obj.Base64)
	if err != nil {
		return fmt.Errorf("file: base64: %v", err)
	}
	f.Data, f.Binary = data, true
	return nil
}

// Duration is a time.Duration written as a Go duration string ("30s",
// "5m"); a number is read as seconds.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a string, "" for zero.
func (d Duration) MarshalJSON() ([]byte, error) {
	if d == 0 {
		return []byte(`""`), nil
	}
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads "90s" or 90 (seconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" || s == `""` {
		*d = 0
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		v, err := time.ParseDuration(str)
		if err != nil {
			return fmt.Errorf("duration %q: want a Go duration such as 30s or 5m", str)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("duration: want a string such as 30s or a number of seconds")
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}
