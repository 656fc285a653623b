// Package protocol defines the messages the platform and primer-runtime
// exchange over one WebSocket per client. Frames are JSON text messages;
// requests carry a client-chosen id and every server frame names the request
// it belongs to, so many calls share one connection. PROTOCOL.md in the
// runtime folder documents every frame with examples.
//
// Compatibility rule: fields may be added (receivers ignore unknown fields);
// any incompatible change gets a new subprotocol name instead of Version.
package protocol

import (
	"encoding/json"
	"os"
	"time"

	"github.com/primerhq/primer/errs"
)

// Version is the WebSocket subprotocol both sides must agree on. It changes
// only for incompatible changes.
const Version = "primer.runtime.v1"

// DefaultMaxFileBytes is the largest file read or written in one request
// unless the server is configured otherwise.
const DefaultMaxFileBytes int64 = 64 << 20

// DefaultChunkBytes is the size of one read.range or write.range chunk
// the Go client uses; MaxChunkBytes is the largest a runtime accepts. A
// chunk is far below any frame limit, so chunks are never refused as too
// large, whatever the file's size.
const (
	DefaultChunkBytes int64 = 512 << 10
	MaxChunkBytes     int64 = 8 << 20
)

// FrameLimit is the largest frame a side must accept to carry a file of
// maxFileBytes: base64 grows data by 4/3, plus room for the envelope.
func FrameLimit(maxFileBytes int64) int64 {
	return (maxFileBytes+2)/3*4 + 1<<20
}

// Request operations (the "op" field of a client frame).
const (
	OpPing       = "ping"
	OpRead       = "read"
	OpWrite      = "write"
	OpStat       = "stat"
	OpList       = "list"
	OpRemove     = "remove"
	OpMkdir      = "mkdir"
	OpRename     = "rename"
	OpExec       = "exec"
	OpExecStdin  = "exec.stdin"
	OpExecCancel = "exec.cancel"

	// OpReadRange and OpWriteRange move a file in chunks, so a file of any
	// size crosses the connection in constant memory on both sides (see
	// PROTOCOL.md). A runtime that predates them answers invalid.
	OpReadRange  = "read.range"
	OpWriteRange = "write.range"

	// State operations keep the workspace's history in a git repository
	// at <root>/.state (see PROTOCOL.md).
	OpStateCommit  = "state.commit"
	OpStateLog     = "state.log"
	OpStateDiff    = "state.diff"
	OpStateRestore = "state.restore"

	// OpReset stops every process and empties the workspace root, for a
	// pooled workspace being handed back.
	OpReset = "reset"

	// OpShutdown stops the runtime as SIGTERM does: it answers, then
	// closes every connection, kills every process it started and exits.
	// The kubernetes backend's Destroy sends it so a pod's runtime stops
	// at once, where the kubelet may first wait up to a second for its
	// next look at the node's containers. A runtime embedded in another
	// process (the local backend) and one that predates it answer invalid.
	OpShutdown = "shutdown"

	// Process operations run commands that outlive the connection that
	// started them (see PROTOCOL.md, "Processes"). proc.start and
	// proc.connect may stream like exec: exec.output frames, then one
	// exec.exit.
	OpProcStart      = "proc.start"
	OpProcList       = "proc.list"
	OpProcConnect    = "proc.connect"
	OpProcDetach     = "proc.detach"
	OpProcInput      = "proc.input"
	OpProcCloseStdin = "proc.close_stdin"
	OpProcSignal     = "proc.signal"
	OpProcResize     = "proc.resize"

	// OpUserEnsure creates a user of the sandbox (passwd, group, shadow
	// lines and a home) unless it exists, and describes it. Only a runtime
	// in whole-filesystem mode owns the sandbox's users; others answer
	// invalid.
	OpUserEnsure = "user.ensure"
)

// Values of the runtime's file system mode (primer-runtime --fs).
const (
	// FSRoot confines every path to the workspace root: absolute paths
	// are refused. Backends without isolation (local, worktree) use it.
	FSRoot = "root"
	// FSWhole accepts absolute paths anywhere in the sandbox, for file
	// operations and exec's cwd; relative paths still resolve against the
	// workspace root. Only where the sandbox is the workspace's own.
	FSWhole = "whole"
)

// StateDir is the directory under the workspace root that holds the
// history's git repository. It is never part of the history itself.
const StateDir = ".state"

// Kinds of change in StateChange.
const (
	ChangeAdded    = "added"
	ChangeModified = "modified"
	ChangeDeleted  = "deleted"
)

// Server frame types (the "type" field of a server frame).
const (
	TypeResult     = "result"
	TypeExecOutput = "exec.output"
	TypeExecExit   = "exec.exit"
)

// Output stream names in exec.output frames.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	// StreamPTY is the one output stream of a process with a terminal.
	StreamPTY = "pty"
)

// Request is every client frame. Op says which fields are read; the others
// are left empty. ID is chosen by the client and unique among its requests
// in flight on the connection.
type Request struct {
	ID uint64 `json:"id"`
	Op string `json:"op"`

	// Path is the file or directory for read, write, stat, list, remove and
	// mkdir, relative to the workspace root, or absolute on a runtime in
	// whole-filesystem mode.
	Path string `json:"path,omitempty"`
	// User names the sandbox user (from its /etc/passwd) that owns what
	// write, write.range and mkdir create; empty means the runtime's
	// default user (primer-runtime --user), else its own. For user.ensure
	// it is the user to create.
	User string `json:"user,omitempty"`
	// UID is the uid user.ensure gives a new user; zero picks the first
	// free one from 1000.
	UID int `json:"uid,omitempty"`
	// Home is the home directory user.ensure gives a new user; empty means
	// /home/<user>.
	Home string `json:"home,omitempty"`
	// Data is the content for write and the bytes for exec.stdin.
	Data []byte `json:"data,omitempty"`
	// Mode is the permission bits for write and mkdir; zero means 0644 for
	// files and 0755 for directories.
	Mode uint32 `json:"mode,omitempty"`
	// Recursive makes remove delete a directory and everything in it, and
	// watch.start watch the whole tree.
	Recursive bool `json:"recursive,omitempty"`
	// Parents makes mkdir create missing parents and accept an existing
	// directory.
	Parents bool `json:"parents,omitempty"`
	// From and To are the rename source and destination.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`

	// Offset is where read.range and write.range start, in bytes.
	Offset int64 `json:"offset,omitempty"`
	// Length is how many bytes read.range returns at most; zero means
	// DefaultChunkBytes.
	Length int64 `json:"length,omitempty"`
	// Final makes write.range end the file after its data, apply Mode and
	// answer with the file's description.
	Final bool `json:"final,omitempty"`

	// IntervalMS is the cadence beacon.start asks for (beacon.go).
	IntervalMS int64 `json:"interval_ms,omitempty"`

	// Exec holds the command for exec.
	Exec *ExecParams `json:"exec,omitempty"`

	// Target is the id of the exec request that exec.stdin and exec.cancel
	// act on.
	Target uint64 `json:"target,omitempty"`
	// Close closes the process's stdin after Data (exec.stdin).
	Close bool `json:"close,omitempty"`
	// Signal is the signal exec.cancel sends to the process group, by name
	// ("SIGTERM", "TERM", "KILL"); empty means SIGKILL.
	Signal string `json:"signal,omitempty"`

	// AuthorName and AuthorEmail sign the commit state.commit and
	// state.restore make (as author and committer).
	AuthorName  string `json:"author_name,omitempty"`
	AuthorEmail string `json:"author_email,omitempty"`
	// Message is that commit's message; trailers ("Key: value" lines) go
	// in its last paragraph.
	Message string `json:"message,omitempty"`
	// Time is that commit's date; zero means now. Git keeps whole seconds
	// and the time zone offset.
	Time time.Time `json:"time,omitzero"`
	// Expect is a commit state.commit's caller recorded earlier (40 hex
	// digits): the result says whether it is still on the history's line.
	Expect string `json:"expect,omitempty"`
	// Commit is the commit state.restore brings back (40 hex digits).
	Commit string `json:"commit,omitempty"`
	// Limit bounds the commits state.log returns; zero means all.
	Limit int `json:"limit,omitempty"`
	// TrailerKey and TrailerValue make state.log return only the commits
	// with that trailer (the key compared without case).
	TrailerKey   string `json:"trailer_key,omitempty"`
	TrailerValue string `json:"trailer_value,omitempty"`

	// PID names the process of proc.connect, proc.input,
	// proc.close_stdin, proc.signal and proc.resize.
	PID int `json:"pid,omitempty"`
	// Tag names the process of proc.connect when PID is zero.
	Tag string `json:"tag,omitempty"`
	// Replay makes proc.connect send the process's recent output first:
	// the last ProcReplayBytes the runtime kept (a terminal's screen).
	Replay bool `json:"replay,omitempty"`
	// Cols and Rows are the terminal size of proc.resize.
	Cols uint16 `json:"cols,omitempty"`
	Rows uint16 `json:"rows,omitempty"`

	// Port is the sandbox's loopback port tcp.open dials (tunnel.go).
	Port int `json:"port,omitempty"`
}

// ExecParams is the command of an exec request.
type ExecParams struct {
	// Args is the program and its arguments; no shell is involved unless the
	// caller asks for one (["sh", "-c", "..."]).
	Args []string `json:"args"`
	// Env is added to the runtime's environment for this command.
	Env map[string]string `json:"env,omitempty"`
	// Cwd is the working directory relative to the workspace root, or
	// absolute on a runtime in whole-filesystem mode. Empty means the
	// root, or User's home in whole-filesystem mode when User is set.
	Cwd string `json:"cwd,omitempty"`
	// User names the sandbox user the command runs as: its uid, gid and
	// groups from the sandbox's /etc/passwd and /etc/group, HOME, USER and
	// LOGNAME from its passwd entry. Empty means the runtime's own user.
	User string `json:"user,omitempty"`
	// Stdin is written to the process's stdin first.
	Stdin []byte `json:"stdin,omitempty"`
	// StdinOpen keeps stdin open after Stdin for exec.stdin frames; without
	// it stdin is closed after Stdin (or is empty).
	StdinOpen bool `json:"stdin_open,omitempty"`
	// TimeoutMS kills the process group after this many milliseconds; zero
	// means no limit.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Stream sends output in exec.output frames as it is produced. Without
	// it the server may hold output back and return it in exec.exit, which
	// saves frames for short commands. On proc.start it makes the request
	// watch the process (as proc.connect does); without it proc.start
	// answers the start only.
	Stream bool `json:"stream,omitempty"`

	// Tag names a process of proc.start so proc.connect can find it
	// without its pid; no two running processes share one.
	Tag string `json:"tag,omitempty"`
	// PTY gives a process of proc.start a terminal of this size: its
	// stdin, stdout and stderr are the terminal, and its output is one
	// stream, StreamPTY.
	PTY *PTYSize `json:"pty,omitempty"`
}

// ProcReplayBytes is how much of a process's latest output the runtime
// keeps for proc.connect with replay.
const ProcReplayBytes = 16 << 10

// PTYSize is a terminal's size in characters.
type PTYSize struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
}

// ProcInfo describes a process of proc.start. It answers proc.start and
// proc.connect and makes up proc.list. The environment is left out: it
// may hold secrets.
type ProcInfo struct {
	PID  int      `json:"pid"`
	Tag  string   `json:"tag,omitempty"`
	Args []string `json:"args"`
	// Cwd is the working directory as the request gave it.
	Cwd string `json:"cwd,omitempty"`
	// User is the user the process runs as, as the request gave it.
	User string `json:"user,omitempty"`
	// PTY is the terminal's current size; nil without a terminal.
	PTY       *PTYSize  `json:"pty,omitempty"`
	StdinOpen bool      `json:"stdin_open,omitempty"`
	StartedAt time.Time `json:"started_at"`
	Running   bool      `json:"running"`
	// Exit is how the process ended; nil while it runs.
	Exit *ProcExit `json:"exit,omitempty"`
}

// ProcExit is how a process of proc.start ended.
type ProcExit struct {
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// Canceled says reset or the runtime's shutdown killed it.
	Canceled   bool      `json:"canceled,omitempty"`
	DurationMS float64   `json:"duration_ms"`
	EndedAt    time.Time `json:"ended_at"`
}

// ProcListResult answers proc.list: running processes and those that
// ended recently, by pid.
type ProcListResult struct {
	Processes []ProcInfo `json:"processes"`
}

// Response is the result frame that answers a request.
type Response struct {
	Type   string `json:"type"` // TypeResult
	ID     uint64 `json:"id"`
	Result any    `json:"result,omitempty"`
	Error  *Error `json:"error,omitempty"`
}

// Error is a failed request. Code is an errs.Kind string.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ErrorOf turns an error into its wire form.
func ErrorOf(err error) *Error {
	return &Error{Code: errs.KindOf(err).String(), Message: err.Error()}
}

// Err turns a wire error back into an errs-kinded error.
func (e *Error) Err() error {
	return &errs.Error{Kind: errs.ParseKind(e.Code), Msg: e.Message}
}

// ExecOutput is a chunk of a running command's output.
type ExecOutput struct {
	Type   string `json:"type"` // TypeExecOutput
	ID     uint64 `json:"id"`
	Stream string `json:"stream"`
	Data   []byte `json:"data"`
}

// ExecExit ends an exec: it follows every exec.output frame of the command.
type ExecExit struct {
	Type     string `json:"type"` // TypeExecExit
	ID       uint64 `json:"id"`
	ExitCode int    `json:"exit_code"`
	// Signal names the signal that ended the process, if one did.
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out"`
	Canceled bool   `json:"canceled"`
	// DurationMS is the run time in milliseconds, fractional.
	DurationMS float64 `json:"duration_ms"`
	// Stdout and Stderr hold output not yet sent in exec.output frames.
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
}

// Frame is any server frame, for decoding: Type says which fields are set.
type Frame struct {
	Type string `json:"type"`
	ID   uint64 `json:"id"`

	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`

	Stream string `json:"stream,omitempty"`
	Data   []byte `json:"data,omitempty"`

	ExitCode   int     `json:"exit_code,omitempty"`
	Signal     string  `json:"signal,omitempty"`
	TimedOut   bool    `json:"timed_out,omitempty"`
	Canceled   bool    `json:"canceled,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`
	Stdout     []byte  `json:"stdout,omitempty"`
	Stderr     []byte  `json:"stderr,omitempty"`

	// Length is the window a tcp.ack frame gives back (tunnel.go).
	Length int64 `json:"length,omitempty"`
	// Tunnel is the tunnel a tcp.accept frame opens (gateway.go).
	Tunnel uint64 `json:"tunnel,omitempty"`

	// Name and Event are a watch.event's (watch.go).
	Name  string `json:"name,omitempty"`
	Event string `json:"event,omitempty"`

	// Payload is the data of a binary frame (see binary.go).
	Payload []byte `json:"-"`
}

// PingResult answers ping.
type PingResult struct {
	Version string `json:"version"`
}

// ReadResult answers read.
type ReadResult struct {
	Data []byte `json:"data"`
}

// ReadRangeResult answers read.range: Size is the file's size when it was
// opened for this chunk, Data the bytes from the request's offset (fewer
// than asked at the end of the file, none at or past it).
type ReadRangeResult struct {
	Size int64  `json:"size"`
	Data []byte `json:"data,omitempty"`
}

// ListResult answers list.
type ListResult struct {
	Entries []FileInfo `json:"entries"`
}

// ExecStarted answers exec once the process runs; its output and exit follow.
type ExecStarted struct {
	PID int `json:"pid"`
}

// StateChange is one path a commit or diff changed. Change is
// ChangeAdded, ChangeModified (content, mode or type) or ChangeDeleted.
type StateChange struct {
	Path   string `json:"path"`
	Change string `json:"change"`
}

// StateCommitResult answers state.commit.
type StateCommitResult struct {
	// Commit is the new commit's id (40 hex digits).
	Commit string `json:"commit"`
	// Parent is the previous head, or "" for the first commit.
	Parent string `json:"parent"`
	// Changed lists the paths that differ from Parent, sorted.
	Changed []StateChange `json:"changed"`
	// Skipped lists what the history cannot hold, sorted: files over the
	// size limit, sockets, FIFOs, devices and unreadable entries (a
	// directory with a final "/").
	Skipped []string `json:"skipped"`
	// ExpectMissing is true when the params' Expect is not Parent nor an
	// ancestor of it along first parents: the history was rewritten (a
	// reset or an amend run on .state) since the caller recorded it.
	ExpectMissing bool `json:"expect_missing,omitempty"`
	// Bytes is the size of the history (.state) after the commit.
	Bytes int64 `json:"bytes"`
}

// StateCommit is one commit of state.log.
type StateCommit struct {
	Commit      string    `json:"commit"`
	Parents     []string  `json:"parents"`
	AuthorName  string    `json:"author_name"`
	AuthorEmail string    `json:"author_email"`
	Time        time.Time `json:"time"`
	Message     string    `json:"message"`
	// Trailers are the "Key: value" lines of the message's last paragraph;
	// for a repeated key, the first value.
	Trailers map[string]string `json:"trailers,omitempty"`
}

// StateLogResult answers state.log, newest commit first.
type StateLogResult struct {
	Commits []StateCommit `json:"commits"`
}

// StateDiffResult answers state.diff.
type StateDiffResult struct {
	// From and To are the compared commits; From is "" for the empty tree.
	From  string        `json:"from"`
	To    string        `json:"to"`
	Files []StateChange `json:"files"`
	// Patch is the unified diff (git's format, binary files named only).
	Patch string `json:"patch"`
	// Truncated says Patch was cut at its size limit.
	Truncated bool `json:"truncated"`
}

// StateRestoreResult answers state.restore.
type StateRestoreResult struct {
	// Commit is the new commit recording the restored tree.
	Commit string `json:"commit"`
	// RestoredFrom is the commit whose tree was restored.
	RestoredFrom string `json:"restored_from"`
	// Changed lists the paths the restore changed, sorted.
	Changed []StateChange `json:"changed"`
}

// ResetResult answers reset.
type ResetResult struct {
	// Killed is the number of the runtime's own processes it stopped.
	Killed int `json:"killed"`
}

// ShutdownResult answers shutdown; the runtime stops right after.
type ShutdownResult struct{}

// UserInfo answers user.ensure: the user as the sandbox's passwd file
// holds it.
type UserInfo struct {
	Name  string `json:"name"`
	UID   int    `json:"uid"`
	GID   int    `json:"gid"`
	Home  string `json:"home"`
	Shell string `json:"shell"`
	// Created says this call added the user.
	Created bool `json:"created"`
}

// UserParams is the user user.ensure makes sure exists.
type UserParams struct {
	// Name is the user name.
	Name string
	// UID is a new user's uid; zero picks the first free one from 1000.
	UID int
	// Home is a new user's home; empty means /home/<Name>.
	Home string
}

// FileInfo describes a file or directory in the workspace. A symlink is
// described itself, not its target.
type FileInfo struct {
	Name string `json:"name"`
	// Path is relative to the workspace root, or absolute when the
	// request named an absolute path.
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Mode is the Unix permission bits (0o7777).
	Mode      uint32    `json:"mode"`
	ModTime   time.Time `json:"mod_time"`
	IsDir     bool      `json:"is_dir"`
	IsSymlink bool      `json:"is_symlink"`
	// Owner and Group name the file's owner and group as the sandbox's
	// passwd and group files do (the number when they do not).
	Owner string `json:"owner,omitempty"`
	Group string `json:"group,omitempty"`
	// LinkTarget is a symlink's target as the link holds it (stat and
	// list).
	LinkTarget string `json:"link_target,omitempty"`
}

// FileMode returns the permission bits with the directory and symlink type
// bits of os.FileMode.
func (fi FileInfo) FileMode() os.FileMode {
	m := os.FileMode(fi.Mode & 0o777)
	if fi.Mode&0o4000 != 0 {
		m |= os.ModeSetuid
	}
	if fi.Mode&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	if fi.Mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	if fi.IsDir {
		m |= os.ModeDir
	}
	if fi.IsSymlink {
		m |= os.ModeSymlink
	}
	return m
}

// ExecRequest is a command to run in the workspace.
type ExecRequest struct {
	// Args is the program and its arguments; use ["sh", "-c", script] for a
	// shell.
	Args []string
	// Env is added to the workspace environment.
	Env map[string]string
	// Cwd is relative to the workspace root, or absolute where the runtime
	// is in whole-filesystem mode; empty means the root (User's home in
	// whole-filesystem mode when User is set).
	Cwd string
	// User is the sandbox user the command runs as; empty means the
	// runtime's own.
	User string
	// Stdin is the command's input.
	Stdin []byte
	// Timeout kills the command's process group after this long; zero means
	// no limit.
	Timeout time.Duration
}

// StateCommitParams is a commit to record with state.commit.
type StateCommitParams struct {
	// AuthorName and AuthorEmail sign the commit; empty means "primer" and
	// "primer@localhost".
	AuthorName, AuthorEmail string
	// Message is the commit message, trailers in its last paragraph.
	Message string
	// Time is the commit date; zero means now.
	Time time.Time
	// Expect is the commit the caller recorded last (optional): the
	// result's ExpectMissing says whether it is still in the history.
	Expect string
}

// StateLogParams selects the commits state.log returns.
type StateLogParams struct {
	// Limit bounds the number of commits; zero means all.
	Limit int
	// TrailerKey and TrailerValue keep only the commits with that trailer.
	TrailerKey, TrailerValue string
}

// StateDiffParams names the commits state.diff compares.
type StateDiffParams struct {
	// To is the newer commit; empty means the head.
	To string
	// From is the older commit; empty means To's first parent (the empty
	// tree for the first commit).
	From string
}

// StateRestoreParams is a restore: Commit's tree becomes the work tree and
// a new commit, signed like a state.commit, records it.
type StateRestoreParams struct {
	Commit string
	StateCommitParams
}

// ExecResult is how a command ended.
type ExecResult struct {
	// ExitCode is the process's exit status, or 128+n when signal n ended it.
	ExitCode int
	// Stdout and Stderr hold the output when the caller did not give
	// writers for it.
	Stdout, Stderr []byte
	Duration       time.Duration
	// Signal names the signal that ended the process, if one did.
	Signal   string
	TimedOut bool
	Canceled bool
}
