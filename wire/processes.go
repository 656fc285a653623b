package wire

import "time"

// ProcessSpec is the body of POST /v1/workspaces/{id}/processes: a process
// that outlives the request (and any connection), found again by its pid
// or Tag. Timeout is a Go duration ("1h"); empty means none. PTY gives it
// a terminal of that size. StdinOpen keeps stdin open for input (a process
// with a terminal always takes input).
type ProcessSpec struct {
	Command   []string          `json:"command"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	User      string            `json:"user,omitempty"`
	Tag       string            `json:"tag,omitempty"`
	Stdin     string            `json:"stdin,omitempty"`
	StdinOpen bool              `json:"stdin_open,omitempty"`
	PTY       *TerminalSize     `json:"pty,omitempty"`
	Timeout   string            `json:"timeout,omitempty"`
}

// TerminalSize is a terminal's size in characters: the body of POST
// .../processes/{pid}/resize and ProcessSpec's PTY.
type TerminalSize struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// Process is a process of a workspace started through /processes: running,
// or ended recently (then Exit says how). The environment is never shown.
type Process struct {
	PID       int           `json:"pid"`
	Tag       string        `json:"tag,omitempty"`
	Command   []string      `json:"command"`
	Cwd       string        `json:"cwd,omitempty"`
	User      string        `json:"user,omitempty"`
	PTY       *TerminalSize `json:"pty,omitempty"`
	StdinOpen bool          `json:"stdin_open,omitempty"`
	StartedAt time.Time     `json:"started_at"`
	Running   bool          `json:"running"`
	Exit      *ExecExit     `json:"exit,omitempty"`
}

// ProcessList is the answer of GET /v1/workspaces/{id}/processes.
type ProcessList struct {
	Items []Process `json:"items"`
}

// ProcessInput is the body of POST .../processes/{pid}/input: Data goes to
// the process's stdin or terminal as it is (a JSON string: UTF-8 text;
// binary input goes through the attach stream).
type ProcessInput struct {
	Data string `json:"data"`
}

// ProcessSignal is the body of POST .../processes/{pid}/signal: a signal
// name ("SIGTERM", "TERM", "KILL").
type ProcessSignal struct {
	Signal string `json:"signal"`
}

// Kinds of AttachMessage.
const (
	AttachInput      = "input"       // client to server: Data
	AttachResize     = "resize"      // client to server: Cols, Rows
	AttachCloseStdin = "close_stdin" // client to server
	AttachSignal     = "signal"      // client to server: Signal
	AttachOutput     = "output"      // server to client: Stream, Data
	AttachExit       = "exit"        // server to client: Exit, the last message
	AttachError      = "error"       // server to client: Error (a refused message; or the failure that ends the stream)
)

// AttachMessage is one WebSocket text message of GET
// .../processes/{pid}/attach, in either direction; Type says which fields
// are set. Data is bytes (base64 in JSON). Stream is stdout, stderr or pty.
type AttachMessage struct {
	Type   string     `json:"type"`
	Stream string     `json:"stream,omitempty"`
	Data   []byte     `json:"data,omitempty"`
	Cols   int        `json:"cols,omitempty"`
	Rows   int        `json:"rows,omitempty"`
	Signal string     `json:"signal,omitempty"`
	Exit   *ExecExit  `json:"exit,omitempty"`
	Error  *ErrorBody `json:"error,omitempty"`
}
