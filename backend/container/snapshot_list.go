package container

import (
	"context"
	"slices"
	"strings"
	"time"

	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/primerhq/primer/backend"
)

var _ backend.SnapshotLister = (*Backend)(nil)

// ListSnapshots implements backend.SnapshotLister: the tagged snapshot
// images and the staging containers this installation made, by snapshot
// id. A retry of a capture whose row was deleted meanwhile finds
// no row and stops, leaving what the killed try had made; the reconciler
// removes it through this. A backend with no installation lists nothing:
// it could not tell its snapshots from another platform's on the same
// engine. Workspace containers made from a snapshot carry its label
// blanked, so they are never listed.
func (b *Backend) ListSnapshots(ctx context.Context) ([]backend.ListedSnapshot, error) {
	inst := b.opts.Installation
	if inst == "" {
		return nil, nil
	}
	// One label filter: given two, Podman returns what has either.
	f := filters.NewArgs(filters.Arg("label", LabelInstallation+"="+inst))
	byID := map[string]*backend.ListedSnapshot{}
	add := func(labels map[string]string, created time.Time, what string) {
		id := labels[LabelSnapshot]
		if labels[LabelManaged] != "true" || labels[LabelInstallation] != inst || !snapshotIDPattern.MatchString(id) {
			return
		}
		l := byID[id]
		if l == nil {
			l = &backend.ListedSnapshot{Ref: backend.SnapshotRef{Backend: Type, SnapshotID: id, Mode: backend.SnapshotFilesystem, Ref: SnapshotImage(id)}}
			byID[id] = l
		}
		if created.After(l.Modified) {
			l.Modified = created
		}
		l.Objects = append(l.Objects, what)
	}
	imgs, err := b.cli.ImageList(ctx, image.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, b.engineErr(err, "list snapshot images")
	}
	for _, img := range imgs {
		// Untagged ones are a capture's staging images, which its retry
		// or its delete removes, or a deleted snapshot's image that a
		// workspace made from it still runs from (the engine frees it
		// with the last one): listing them would delete them again on
		// every pass.
		if !tagged(img.RepoTags) {
			continue
		}
		add(img.Labels, time.Unix(img.Created, 0), "image "+strings.Join(img.RepoTags, ","))
	}
	cs, err := b.cli.ContainerList(ctx, dcontainer.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, b.engineErr(err, "list snapshot staging containers")
	}
	for _, c := range cs {
		add(c.Labels, time.Unix(c.Created, 0), "container "+strings.TrimPrefix(firstName(c.Names, c.ID), "/"))
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]backend.ListedSnapshot, 0, len(ids))
	for _, id := range ids {
		out = append(out, *byID[id])
	}
	return out, nil
}

// firstName is a listed container's first name, or def when it has none.
func firstName(names []string, def string) string {
	if len(names) > 0 {
		return names[0]
	}
	return def
}
