package wire

// ToolExecResult answers workspace__exec. A non-zero exit code is not an
// error: the call ran and is recorded.
type ToolExecResult struct {
	ExitCode   int    `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	TimedOut   bool   `json:"timed_out"`
	DurationMS int64  `json:"duration_ms"`
	Signal     string `json:"signal,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	Commit     string `json:"commit"`
}

// ToolWriteResult answers workspace__write.
type ToolWriteResult struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Commit string `json:"commit"`
}

// ToolReadResult answers workspace__read. Content is the file as text when
// it is valid UTF-8 (encoding "utf-8"), else base64 (encoding "base64").
type ToolReadResult struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
	Size     int64  `json:"size"`
	Commit   string `json:"commit"`
}
