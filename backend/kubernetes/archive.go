package kubernetes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	rtclient "github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// The snapshot store of a cluster without CSI snapshots is a directory of
// the platform (Options.SnapshotDir): snapshot snap-1a2b is the tar archive
// snap-1a2b.tar there. It is written as a hidden temporary file and renamed
// once the archive is complete and synced, so a file of the final name is
// always a complete archive; a crash leaves only a temporary file, which
// the next try of the same snapshot (or its deletion) removes.
//
// The archive is made and extracted by the image's tar, run as root through
// the workspace's runtime (the exec op), so modes, owners and symlinks
// survive as tar keeps them. Every worker that provisions from a snapshot
// must see the same directory (one platform process, or a shared volume).

// archiveUser runs tar: it must read every file and restore owners.
const archiveUser = "root"

// archivePath is where snapshot snapID's archive is in the store. The path
// is made from the id, never taken from a stored ref, so a ref cannot name
// another file of the platform.
func (b *Backend) archivePath(snapID string) string {
	return filepath.Join(b.snapshotDir(), snapID+".tar")
}

// archiveSnapshot streams the workspace volume, as a tar archive made in
// the pod, into the snapshot store.
func (b *Backend) archiveSnapshot(ctx context.Context, id string, req backend.SnapshotRequest) (backend.SnapshotRef, error) {
	final := b.archivePath(req.SnapshotID)
	if fi, err := os.Stat(final); err == nil {
		return archiveRef(req, final, fi.Size()), nil
	}
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return backend.SnapshotRef{}, errs.E(errs.Unavailable, "workspace %s: snapshot %s: make the snapshot store: %w", id, req.SnapshotID, err)
	}
	b.removePartial(req.SnapshotID)
	if b.paused(ctx, id) {
		// Only a running pod can archive its volume: the paused workspace
		// runs for the capture and is paused again after it, whatever
		// happened.
		token, err := b.tokenOf(ctx, id)
		if err != nil {
			return backend.SnapshotRef{}, fmt.Errorf("workspace %s: snapshot %s: %w", id, req.SnapshotID, err)
		}
		if err := b.resume(ctx, id, token); err != nil {
			return backend.SnapshotRef{}, fmt.Errorf("workspace %s: snapshot %s: run the paused workspace to archive it: %w", id, req.SnapshotID, err)
		}
		defer func() {
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			if err := b.pause(pctx, id); err != nil {
				b.logger.Warn("pause again after the snapshot of a paused workspace", "workspace_id", id, "snapshot_id", req.SnapshotID, "err", err)
			}
		}()
	}
	c, err := b.dialWorkspace(ctx, id)
	if err != nil {
		return backend.SnapshotRef{}, fmt.Errorf("workspace %s: snapshot %s: %w", id, req.SnapshotID, err)
	}
	defer c.Close()
	f, err := os.CreateTemp(dir, partialPrefix(req.SnapshotID)+"*")
	if err != nil {
		return backend.SnapshotRef{}, errs.E(errs.Unavailable, "workspace %s: snapshot %s: %w", id, req.SnapshotID, err)
	}
	done := false
	defer func() {
		if !done {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	stderr := &tail{max: 4 << 10}
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"tar", "-C", Workdir, "-cf", "-", "."}, User: archiveUser}, w, stderr)
	if err := tarFailed(id, "snapshot "+req.SnapshotID, "archive "+Workdir, res, err, stderr); err != nil {
		return backend.SnapshotRef{}, err
	}
	if err := errors.Join(w.Flush(), f.Sync(), f.Close()); err != nil {
		return backend.SnapshotRef{}, errs.E(errs.Unavailable, "workspace %s: snapshot %s: write %s: %w", id, req.SnapshotID, f.Name(), err)
	}
	fi, err := os.Stat(f.Name())
	if err != nil {
		return backend.SnapshotRef{}, errs.E(errs.Unavailable, "workspace %s: snapshot %s: %w", id, req.SnapshotID, err)
	}
	if err := os.Rename(f.Name(), final); err != nil {
		return backend.SnapshotRef{}, errs.E(errs.Unavailable, "workspace %s: snapshot %s: %w", id, req.SnapshotID, err)
	}
	done = true
	syncDir(dir)
	return archiveRef(req, final, fi.Size()), nil
}

func archiveRef(req backend.SnapshotRequest, path string, size int64) backend.SnapshotRef {
	return backend.SnapshotRef{
		Backend: Type, SnapshotID: req.SnapshotID, Mode: backend.SnapshotFilesystem,
		Ref: path, Bytes: size,
		Attrs: map[string]string{"method": methodArchive},
	}
}

// extractArchive extracts the snapshot's archive into the workspace volume
// through the runtime c, streaming it to tar's standard input.
func (b *Backend) extractArchive(ctx context.Context, c *rtclient.Client, id string, ref *backend.SnapshotRef) error {
	f, err := os.Open(b.archivePath(ref.SnapshotID))
	if errors.Is(err, os.ErrNotExist) {
		return errs.E(errs.NotFound, "workspace %s: snapshot %s: no archive %s in this platform's snapshot store", id, ref.SnapshotID, b.archivePath(ref.SnapshotID))
	}
	if err != nil {
		return errs.E(errs.Unavailable, "workspace %s: snapshot %s: %w", id, ref.SnapshotID, err)
	}
	defer f.Close()
	p, err := c.Start(ctx, protocol.ExecRequest{Args: []string{"tar", "-C", Workdir, "-xpf", "-"}, User: archiveUser})
	if err != nil {
		return tarFailed(id, "restore snapshot "+ref.SnapshotID, "extract into "+Workdir, protocol.ExecResult{}, err, nil)
	}
	stdin := p.Stdin()
	_, cerr := io.Copy(stdin, bufio.NewReaderSize(f, 1<<20))
	if cerr == nil {
		cerr = stdin.Close()
	}
	if cerr != nil {
		_ = p.Signal(context.WithoutCancel(ctx), "KILL")
	}
	res, err := p.Wait()
	if err := tarFailed(id, "restore snapshot "+ref.SnapshotID, "extract into "+Workdir, res, err, nil); err != nil {
		return err
	}
	if cerr != nil {
		return errs.E(errs.Unavailable, "workspace %s: restore snapshot %s: stream the archive: %w", id, ref.SnapshotID, cerr)
	}
	return nil
}

// tarFailed turns a tar run that did not exit 0 into an error that says
// why; nil when it did.
func tarFailed(id, op, what string, res protocol.ExecResult, err error, stderr *tail) error {
	if err != nil {
		if errs.Is(err, errs.NotFound) {
			return errs.E(errs.Invalid, "workspace %s: %s: the image has no tar, which Kubernetes snapshots without CSI need: %w", id, op, err)
		}
		return fmt.Errorf("workspace %s: %s: %s: %w", id, op, what, err)
	}
	if res.ExitCode == 0 {
		return nil
	}
	out := string(res.Stderr)
	if stderr != nil {
		out = stderr.String()
	}
	if res.ExitCode == 127 {
		return errs.E(errs.Invalid, "workspace %s: %s: the image has no tar, which Kubernetes snapshots without CSI need: %s", id, op, strings.TrimSpace(out))
	}
	return errs.E(errs.Unavailable, "workspace %s: %s: tar (%s) exited %d: %s", id, op, what, res.ExitCode, strings.TrimSpace(out))
}

// deleteArchive removes the snapshot's archive and any partial one.
func (b *Backend) deleteArchive(snapID string) error {
	b.removePartial(snapID)
	if err := os.Remove(b.archivePath(snapID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return errs.E(errs.Unavailable, "snapshot %s: remove archive: %w", snapID, err)
	}
	return nil
}

func partialPrefix(snapID string) string { return "." + snapID + ".tar.partial-" }

// removePartial removes what an interrupted archiveSnapshot of snapID
// left.
func (b *Backend) removePartial(snapID string) {
	left, _ := filepath.Glob(filepath.Join(b.snapshotDir(), partialPrefix(snapID)+"*"))
	for _, p := range left {
		_ = os.Remove(p)
	}
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// dialWorkspace connects to the runtime of the workspace's running pod
// with the token of its Secret.
func (b *Backend) dialWorkspace(ctx context.Context, id string) (*rtclient.Client, error) {
	token, err := b.tokenOf(ctx, id)
	if err != nil {
		return nil, err
	}
	ep, err := b.Endpoint(ctx, b.handle(id), token)
	if err != nil {
		return nil, err
	}
	c, err := rtclient.Dial(ctx, ep.URL, token)
	if err != nil {
		return nil, errs.E(errs.Unavailable, "connect to the runtime at %s: %w", ep.URL, err)
	}
	return c, nil
}

// tail keeps the last max bytes written to it (tar's error output).
type tail struct {
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.b) }

// tokenOf returns the runtime token in the workspace's Secret.
func (b *Backend) tokenOf(ctx context.Context, id string) (string, error) {
	s, err := b.cs.CoreV1().Secrets(b.cfg.Namespace).Get(ctx, Name(id), metav1.GetOptions{})
	if err != nil {
		return "", b.apiErr(err, "get Secret")
	}
	if !b.owns(s.Labels, id) || len(s.Data[tokenKey]) == 0 {
		return "", errs.E(errs.NotFound, "Secret %s/%s holds no runtime token of the workspace", b.cfg.Namespace, s.Name)
	}
	return string(s.Data[tokenKey]), nil
}
