package protocol

// Watching a directory (see PROTOCOL.md, "watch.start and watch.stop").
const (
	// OpWatchStart watches Path (a directory; its whole tree with
	// Recursive): a result once the watch is armed, then TypeWatchEvent
	// frames under the same id, ended by one TypeWatchEnd frame.
	OpWatchStart = "watch.start"
	// OpWatchStop ends the watch whose request id is Target.
	OpWatchStop = "watch.stop"

	// TypeWatchEvent is one change seen by a watch: Name and Event.
	TypeWatchEvent = "watch.event"
	// TypeWatchEnd is a watch's last frame; Error says why it ended when
	// it did not end by watch.stop or the watched directory's removal.
	TypeWatchEnd = "watch.end"
)

// The events of a watch, as envd names them.
const (
	WatchCreate = "create"
	WatchWrite  = "write"
	WatchRemove = "remove"
	WatchRename = "rename"
	WatchChmod  = "chmod"
)

// WatchEvent is a change under a watched directory. Name is the changed
// entry's path relative to the watched directory ("" for the directory
// itself); Event is one of the Watch* names.
type WatchEvent struct {
	Type  string `json:"type"` // TypeWatchEvent
	ID    uint64 `json:"id"`
	Name  string `json:"name"`
	Event string `json:"event"`
}

// WatchEnd is the last frame of a watch.
type WatchEnd struct {
	Type  string `json:"type"` // TypeWatchEnd
	ID    uint64 `json:"id"`
	Error *Error `json:"error,omitempty"`
}
