package wire

// ExecSpec is the body of POST /v1/workspaces/{id}/exec: the command and
// its environment; Timeout is a Go duration ("30s"); Stream asks for NDJSON
// chunks (ExecChunk) then the exit (ExecExit) instead of one ExecResponse.
type ExecSpec struct {
	Command []string          `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	// Cwd is relative to the workspace root, or absolute (any directory
	// of the sandbox) on a workspace whose backend isolates it
	// (container, kubernetes, a vm machine of its own).
	Cwd string `json:"cwd,omitempty"`
	// User is the sandbox user the command runs as (a name in its
	// /etc/passwd); empty means the template's user, else root or the
	// runtime's own.
	User    string `json:"user,omitempty"`
	Stdin   string `json:"stdin,omitempty"`
	Timeout string `json:"timeout,omitempty"`
	Stream  bool   `json:"stream,omitempty"`
}

// ExecResponse is a finished command: its exit, its output (cut to the
// platform's bound when Truncated) and how long it ran.
type ExecResponse struct {
	ExitCode   int    `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	DurationMS int64  `json:"duration_ms"`
	TimedOut   bool   `json:"timed_out"`
	Canceled   bool   `json:"canceled,omitempty"`
	Signal     string `json:"signal,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
}

// ExecChunk is one streamed line of output: Stream is stdout or stderr.
type ExecChunk struct {
	Stream string `json:"stream"`
	Data   string `json:"data"`
}

// ExecExit is the last streamed line: how the command ended.
type ExecExit struct {
	ExitCode   int    `json:"exit_code"`
	DurationMS int64  `json:"duration_ms"`
	TimedOut   bool   `json:"timed_out"`
	Canceled   bool   `json:"canceled,omitempty"`
	Signal     string `json:"signal,omitempty"`
}
