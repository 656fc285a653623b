package backend

import (
	"context"
	"time"
)

// Snapshot modes: what a snapshot captures.
const (
	// SnapshotFilesystem captures the sandbox's whole filesystem: on
	// containers and pods the root filesystem and the workspace volume, on
	// host backends the workspace directory (and what the backend says it
	// restores beside it).
	SnapshotFilesystem = "filesystem"
	// SnapshotFull captures the running processes' memory too (CRIU), so a
	// sandbox made from it continues running programs.
	SnapshotFull = "full"
)

// Snapshotter is implemented by backends that can capture a sandbox and
// make new sandboxes from the capture. A workspace made from a snapshot is
// provisioned with ProvisionRequest.Snapshot set: the backend starts it from
// the captured state instead of the template's clean one.
//
// Snapshot is idempotent on req.SnapshotID: a retry after a crash finds what
// the first try made (a committed image, an archive) and returns it, or
// replaces a partial capture. It never leaves a partial capture that a later
// call could take for a complete one. DeleteSnapshot removes what Snapshot
// made; deleting one that is already gone is not an error.
type Snapshotter interface {
	Snapshot(ctx context.Context, h Handle, req SnapshotRequest) (SnapshotRef, error)
	DeleteSnapshot(ctx context.Context, ref SnapshotRef) error
}

// SnapshotLister is implemented by Snapshotters whose captures live where
// deleting a sandbox does not reach them and a lost row would leave them
// for ever (Kubernetes' archives in the platform's snapshot store). The
// reconciler removes, with DeleteSnapshot, each listed capture older than
// its grace whose snapshot has no row. ListSnapshots returns only what is
// certainly a capture of this backend (named as it names them), since
// whatever it returns may be deleted.
type SnapshotLister interface {
	ListSnapshots(ctx context.Context) ([]ListedSnapshot, error)
}

// ListedSnapshot is one capture found by a SnapshotLister.
type ListedSnapshot struct {
	// Ref is what DeleteSnapshot removes the capture by.
	Ref SnapshotRef
	// Modified is when any of its objects last changed (a capture being
	// written is young), zero when the backend cannot tell.
	Modified time.Time
	// Objects describes what the backend holds of it, for logs.
	Objects []string
}

// SnapshotRequest asks for one capture of a sandbox.
type SnapshotRequest struct {
	// SnapshotID is the platform's id of the snapshot (snap-<hex>); the
	// backend names what it makes after it.
	SnapshotID string
	// TenantID is the workspace's tenant; backends label what they make
	// with it.
	TenantID string
	// Mode is SnapshotFilesystem or SnapshotFull; the caller has checked it
	// against Capabilities.Snapshots.
	Mode string
}

// SnapshotRef is what a backend needs to find a snapshot again: a value
// that travels through workflow history and the database. It holds no
// secret.
type SnapshotRef struct {
	Backend    string `json:"backend"`
	SnapshotID string `json:"snapshot_id"`
	Mode       string `json:"mode"`
	// Ref is the backend's name for the capture: an image id, an archive
	// path, a commit.
	Ref string `json:"ref,omitempty"`
	// Bytes is the capture's size as the backend measures it (the image's
	// or the archive's size); it counts against max_snapshot_bytes.
	Bytes int64 `json:"bytes"`
	// Attrs holds other backend-specific identifiers.
	Attrs map[string]string `json:"attrs,omitempty"`
}

// Pauser is implemented by backends that can stop a sandbox's compute and
// start it again with its files (and, in SnapshotFull mode, its
// processes). Pause keeps everything Destroy would remove and frees the
// CPU and memory: the container stopped, the StatefulSet scaled to 0, the
// runtime's processes stopped. Resume starts it again and returns the
// handle to find it with, which may differ from h (a new published port).
// Both are idempotent: pausing a paused sandbox or resuming a running one
// is not an error. token and env are what Provision had (env is read only
// when the backend must start the runtime itself, as local does).
type Pauser interface {
	Pause(ctx context.Context, h Handle, mode string) (Handle, error)
	Resume(ctx context.Context, h Handle, token string, env EnvFunc) (Handle, error)
}
