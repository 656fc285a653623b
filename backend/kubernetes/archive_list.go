package kubernetes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

var _ backend.SnapshotLister = (*Backend)(nil)

// ListSnapshots implements backend.SnapshotLister: the archives in the
// platform's snapshot store, complete (snap-1a2b.tar) and partial
// (.snap-1a2b.tar.partial-*), by snapshot id. Nothing else in the
// directory is listed. CSI VolumeSnapshots are not: they live in the
// cluster, named and labelled as the workspace's, and a row's delete
// reaches them through DeleteSnapshot.
func (b *Backend) ListSnapshots(_ context.Context) ([]backend.ListedSnapshot, error) {
	dir := b.snapshotDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.E(errs.Unavailable, "list the snapshot store %s: %w", dir, err)
	}
	byID := map[string]*backend.ListedSnapshot{}
	var ids []string
	for _, e := range entries {
		id := archiveSnapshotID(e.Name())
		if id == "" || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			// Removed since the directory was read.
			continue
		}
		l := byID[id]
		if l == nil {
			l = &backend.ListedSnapshot{Ref: backend.SnapshotRef{
				Backend: Type, SnapshotID: id, Mode: backend.SnapshotFilesystem,
				Ref: b.archivePath(id), Attrs: map[string]string{"method": methodArchive},
			}}
			byID[id] = l
			ids = append(ids, id)
		}
		if info.ModTime().After(l.Modified) {
			l.Modified = info.ModTime()
		}
		l.Objects = append(l.Objects, "archive "+filepath.Join(dir, e.Name()))
	}
	slices.Sort(ids)
	out := make([]backend.ListedSnapshot, 0, len(ids))
	for _, id := range ids {
		out = append(out, *byID[id])
	}
	return out, nil
}

// archiveSnapshotID is the snapshot id an archive file of the store is
// named after, or "" for a name archivePath and partialPrefix never make.
func archiveSnapshotID(name string) string {
	id, ok := strings.CutSuffix(name, ".tar")
	if !ok {
		rest, hidden := strings.CutPrefix(name, ".")
		if !hidden {
			return ""
		}
		id, _, ok = strings.Cut(rest, ".tar.partial-")
		if !ok {
			return ""
		}
	}
	if !snapshotIDPattern.MatchString(id) {
		return ""
	}
	return id
}
