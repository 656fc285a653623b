package envd

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// The messages of envd's filesystem.proto and process.proto, written with
// their proto3 JSON names: lowerCamelCase fields, int64 as strings, enums
// as their names, bytes as base64, a oneof as the one field it holds. The
// SDK parses responses strictly (an unknown field fails the call), so a
// response carries only the proto's fields.

// FileType is filesystem.FileType.
type FileType string

// The file types.
const (
	FileTypeFile      FileType = "FILE_TYPE_FILE"
	FileTypeDirectory FileType = "FILE_TYPE_DIRECTORY"
	FileTypeSymlink   FileType = "FILE_TYPE_SYMLINK"
)

// EventType is filesystem.EventType.
type EventType string

// The event types of a watch.
const (
	EventCreate EventType = "EVENT_TYPE_CREATE"
	EventWrite  EventType = "EVENT_TYPE_WRITE"
	EventRemove EventType = "EVENT_TYPE_REMOVE"
	EventRename EventType = "EVENT_TYPE_RENAME"
	EventChmod  EventType = "EVENT_TYPE_CHMOD"
)

// Timestamp is google.protobuf.Timestamp in its JSON form: RFC 3339 in UTC
// with 0, 3, 6 or 9 fractional digits (the SDK's parser takes no other).
type Timestamp time.Time

// MarshalJSON writes the timestamp.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	u := time.Time(t).UTC()
	layout := "2006-01-02T15:04:05"
	switch ns := u.Nanosecond(); {
	case ns == 0:
	case ns%1_000_000 == 0:
		layout += ".000"
	case ns%1_000 == 0:
		layout += ".000000"
	default:
		layout += ".000000000"
	}
	return json.Marshal(u.Format(layout + "Z"))
}

// Int64 is an int64 in proto3 JSON: written as a string, read from a string
// or a number.
type Int64 int64

// MarshalJSON writes the number as a string.
func (n Int64) MarshalJSON() ([]byte, error) {
	return json.Marshal(strconv.FormatInt(int64(n), 10))
}

// UnmarshalJSON reads a string or a number.
func (n *Int64) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		s = string(b)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("int64 %s: %w", b, err)
	}
	*n = Int64(v)
	return nil
}

// Empty is every message without fields.
type Empty struct{}

// EntryInfo is filesystem.EntryInfo.
type EntryInfo struct {
	Name          string            `json:"name"`
	Type          FileType          `json:"type"`
	Path          string            `json:"path"`
	Size          Int64             `json:"size"`
	Mode          uint32            `json:"mode"`
	Permissions   string            `json:"permissions"`
	Owner         string            `json:"owner"`
	Group         string            `json:"group"`
	ModifiedTime  *Timestamp        `json:"modifiedTime,omitempty"`
	SymlinkTarget *string           `json:"symlinkTarget,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
}

// PathRequest is StatRequest, MakeDirRequest and RemoveRequest.
type PathRequest struct {
	Path string `json:"path"`
}

// EntryResponse is StatResponse, MakeDirResponse and MoveResponse.
type EntryResponse struct {
	Entry *EntryInfo `json:"entry"`
}

// MoveRequest is filesystem.MoveRequest.
type MoveRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// ListDirRequest is filesystem.ListDirRequest.
type ListDirRequest struct {
	Path  string `json:"path"`
	Depth uint32 `json:"depth"`
}

// ListDirResponse is filesystem.ListDirResponse.
type ListDirResponse struct {
	Entries []*EntryInfo `json:"entries"`
}

// WatchDirRequest is filesystem.WatchDirRequest and CreateWatcherRequest.
type WatchDirRequest struct {
	Path               string `json:"path"`
	Recursive          bool   `json:"recursive"`
	IncludeEntry       bool   `json:"includeEntry"`
	AllowNetworkMounts bool   `json:"allowNetworkMounts"`
}

// FilesystemEvent is filesystem.FilesystemEvent.
type FilesystemEvent struct {
	Name  string     `json:"name"`
	Type  EventType  `json:"type"`
	Entry *EntryInfo `json:"entry,omitempty"`
}

// WatchDirResponse is filesystem.WatchDirResponse: one of its fields is set.
type WatchDirResponse struct {
	Start      *Empty           `json:"start,omitempty"`
	Filesystem *FilesystemEvent `json:"filesystem,omitempty"`
	Keepalive  *Empty           `json:"keepalive,omitempty"`
}

// CreateWatcherResponse is filesystem.CreateWatcherResponse.
type CreateWatcherResponse struct {
	WatcherID string `json:"watcherId"`
}

// WatcherRequest is GetWatcherEventsRequest and RemoveWatcherRequest.
type WatcherRequest struct {
	WatcherID string `json:"watcherId"`
}

// GetWatcherEventsResponse is filesystem.GetWatcherEventsResponse.
type GetWatcherEventsResponse struct {
	Events []*FilesystemEvent `json:"events"`
}

// PTYSize is process.PTY.Size.
type PTYSize struct {
	Cols uint32 `json:"cols"`
	Rows uint32 `json:"rows"`
}

// PTY is process.PTY.
type PTY struct {
	Size *PTYSize `json:"size,omitempty"`
}

// ProcessConfig is process.ProcessConfig.
type ProcessConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args"`
	Envs map[string]string `json:"envs"`
	Cwd  *string           `json:"cwd,omitempty"`
}

// ProcessInfo is process.ProcessInfo.
type ProcessInfo struct {
	Config *ProcessConfig `json:"config"`
	PID    uint32         `json:"pid"`
	Tag    *string        `json:"tag,omitempty"`
}

// ListResponse is process.ListResponse.
type ListResponse struct {
	Processes []*ProcessInfo `json:"processes"`
}

// StartRequest is process.StartRequest.
type StartRequest struct {
	Process *ProcessConfig `json:"process"`
	PTY     *PTY           `json:"pty,omitempty"`
	Tag     *string        `json:"tag,omitempty"`
	Stdin   *bool          `json:"stdin,omitempty"`
}

// ProcessSelector is process.ProcessSelector: a pid or a tag.
type ProcessSelector struct {
	PID *uint32 `json:"pid,omitempty"`
	Tag *string `json:"tag,omitempty"`
}

// SelectRequest is ConnectRequest, CloseStdinRequest and the process of
// the other requests.
type SelectRequest struct {
	Process *ProcessSelector `json:"process"`
}

// UpdateRequest is process.UpdateRequest.
type UpdateRequest struct {
	Process *ProcessSelector `json:"process"`
	PTY     *PTY             `json:"pty,omitempty"`
}

// ProcessInput is process.ProcessInput: stdin or pty bytes.
type ProcessInput struct {
	Stdin []byte `json:"stdin,omitempty"`
	PTY   []byte `json:"pty,omitempty"`
}

// SendInputRequest is process.SendInputRequest.
type SendInputRequest struct {
	Process *ProcessSelector `json:"process"`
	Input   *ProcessInput    `json:"input"`
}

// StreamInputRequest is process.StreamInputRequest: one of its fields.
type StreamInputRequest struct {
	Start *struct {
		Process *ProcessSelector `json:"process"`
	} `json:"start,omitempty"`
	Data *struct {
		Input *ProcessInput `json:"input"`
	} `json:"data,omitempty"`
	Keepalive *Empty `json:"keepalive,omitempty"`
}

// Signal is process.Signal, read from its name or its number.
type Signal string

// UnmarshalJSON reads "SIGNAL_SIGKILL" or 9.
func (s *Signal) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		*s = Signal(name)
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("signal %s: want a name or a number", b)
	}
	switch n {
	case 9:
		*s = "SIGNAL_SIGKILL"
	case 15:
		*s = "SIGNAL_SIGTERM"
	default:
		*s = Signal(strconv.Itoa(n))
	}
	return nil
}

// SendSignalRequest is process.SendSignalRequest.
type SendSignalRequest struct {
	Process *ProcessSelector `json:"process"`
	Signal  Signal           `json:"signal"`
}

// ProcessEvent is process.ProcessEvent: one of its fields.
type ProcessEvent struct {
	Start     *StartEvent `json:"start,omitempty"`
	Data      *DataEvent  `json:"data,omitempty"`
	End       *EndEvent   `json:"end,omitempty"`
	Keepalive *Empty      `json:"keepalive,omitempty"`
}

// StartEvent is ProcessEvent.StartEvent.
type StartEvent struct {
	PID uint32 `json:"pid"`
}

// DataEvent is ProcessEvent.DataEvent: one of its fields.
type DataEvent struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	PTY    []byte `json:"pty,omitempty"`
}

// EndEvent is ProcessEvent.EndEvent.
type EndEvent struct {
	ExitCode int32   `json:"exitCode"`
	Exited   bool    `json:"exited"`
	Status   string  `json:"status"`
	Error    *string `json:"error,omitempty"`
}

// ProcessResponse is StartResponse and ConnectResponse.
type ProcessResponse struct {
	Event *ProcessEvent `json:"event"`
}

// Proto3 JSON readers accept a field's proto name as well as its JSON
// name; the requests with multi-word fields take both, for clients whose
// encoder writes proto names.

// UnmarshalJSON reads includeEntry or include_entry, and so on.
func (r *WatchDirRequest) UnmarshalJSON(b []byte) error {
	type plain WatchDirRequest
	var aux struct {
		plain
		IncludeEntry       *bool `json:"include_entry"`
		AllowNetworkMounts *bool `json:"allow_network_mounts"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*r = WatchDirRequest(aux.plain)
	if aux.IncludeEntry != nil {
		r.IncludeEntry = *aux.IncludeEntry
	}
	if aux.AllowNetworkMounts != nil {
		r.AllowNetworkMounts = *aux.AllowNetworkMounts
	}
	return nil
}

// UnmarshalJSON reads watcherId or watcher_id.
func (r *WatcherRequest) UnmarshalJSON(b []byte) error {
	type plain WatcherRequest
	var aux struct {
		plain
		WatcherID *string `json:"watcher_id"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*r = WatcherRequest(aux.plain)
	if aux.WatcherID != nil {
		r.WatcherID = *aux.WatcherID
	}
	return nil
}
