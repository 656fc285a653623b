package eval

import "time"

// Outcome is what one execution of a case produced, as the activity saw
// it: the input of Judge.
type Outcome struct {
	// SetupFailed names the setup command that failed ("setup[1]: exit
	// status 2: ..."), empty when setup passed.
	SetupFailed string
	ExitCode    int
	TimedOut    bool
	// Stdout and Stderr are the whole outputs (Judge matches on stdout).
	Stdout, Stderr string
	// Files holds the content of every path of Expect.Files; a missing
	// path has no entry.
	Files map[string][]byte
}

// Attempt is one execution of a case on one workspace.
type Attempt struct {
	Attempt     int       `json:"attempt"` // 1, 2, ...
	WorkspaceID string    `json:"workspace_id"`
	Verdict     string    `json:"verdict"` // pass | fail | error
	Reason      string    `json:"reason,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	EndedAt     time.Time `json:"ended_at"`
}

// Artifact is one collected file of a case.
type Artifact struct {
	Path string `json:"path"`
	// Size is the file's size in the workspace; Data holds at most
	// MaxArtifactBytes of it (Truncated says it was cut).
	Size      int64  `json:"size"`
	Data      []byte `json:"data,omitempty"` // base64 in JSON
	Truncated bool   `json:"truncated,omitempty"`
	// Error says why the file could not be collected (missing, a
	// directory); Data is empty then.
	Error string `json:"error,omitempty"`
}

// Score is the content of a case's score file.
type Score struct {
	Score   *float64           `json:"score"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// Selection picks the cases of a run: by id, by labels (every label must
// match), or all when both are empty.
type Selection struct {
	Cases  []string          `json:"cases,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}
