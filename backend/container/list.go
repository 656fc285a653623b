package container

import (
	"context"
	"slices"
	"strings"
	"time"

	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dnetwork "github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/primerhq/primer/backend"
)

// List implements backend.Lister: the containers and volumes labelled as
// managed by Primer, grouped by their workspace label. An object counts only
// when its name is the one the backend gives the workspace of its label
// (primer-<id>) and that id has the form the server mints, so a look-alike
// made by hand or by another tool is never listed. The build containers of
// runtime images belong to no workspace and are not listed (a stale one is
// replaced by the next build).
func (b *Backend) List(ctx context.Context) ([]backend.Listed, error) {
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	cs, err := b.cli.ContainerList(ctx, dcontainer.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, b.engineErr(err, "list containers")
	}
	vs, err := b.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, b.engineErr(err, "list volumes")
	}
	byID := map[string]*backend.Listed{}
	add := func(labels map[string]string, names []string, kind string, created time.Time) {
		id := labels[LabelWorkspace]
		if labels[LabelManaged] != "true" || !backend.IsWorkspaceID(id) || labels[LabelInstallation] != b.opts.Installation {
			return
		}
		for _, n := range names {
			if strings.TrimPrefix(n, "/") != Name(id) {
				continue
			}
			l := byID[id]
			if l == nil {
				l = &backend.Listed{WorkspaceID: id}
				byID[id] = l
			}
			l.Objects = append(l.Objects, kind+" "+Name(id))
			if !created.IsZero() && (l.Created.IsZero() || created.Before(l.Created)) {
				l.Created = created
			}
			return
		}
	}
	for _, c := range cs {
		add(c.Labels, c.Names, "container", time.Unix(c.Created, 0))
	}
	for _, v := range vs.Volumes {
		if v == nil {
			continue
		}
		created, _ := time.Parse(time.RFC3339Nano, v.CreatedAt)
		add(v.Labels, []string{v.Name}, "volume", created)
	}
	out := make([]backend.Listed, 0, len(byID))
	for _, l := range byID {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b backend.Listed) int { return strings.Compare(a.WorkspaceID, b.WorkspaceID) })
	return out, nil
}

// Objects lists the names of the engine's containers and volumes labelled
// as belonging to workspace id, and its kept image (tests and the
// reconciler use it).
func (b *Backend) Objects(ctx context.Context, id string) ([]string, error) {
	f := filters.NewArgs(filters.Arg("label", LabelWorkspace+"="+id))
	cs, err := b.cli.ContainerList(ctx, dcontainer.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, b.engineErr(err, "list containers")
	}
	var out []string
	for _, c := range cs {
		for _, n := range c.Names {
			out = append(out, "container "+strings.TrimPrefix(n, "/"))
		}
	}
	vs, err := b.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, b.engineErr(err, "list volumes")
	}
	for _, v := range vs.Volumes {
		out = append(out, "volume "+v.Name)
	}
	// A torn-down layer sandbox's files (layer.go).
	if _, err := b.cli.ImageInspect(ctx, keptImage(id)); err == nil {
		out = append(out, "image "+keptImage(id))
	}
	// Objects named after the workspace but not labelled (made by hand)
	// count too.
	byName := filters.NewArgs(filters.Arg("name", Name(id)))
	ns, err := b.cli.NetworkList(ctx, dnetwork.ListOptions{Filters: byName})
	if err != nil {
		return nil, b.engineErr(err, "list networks")
	}
	for _, n := range ns {
		if strings.Contains(n.Name, id) {
			out = append(out, "network "+n.Name)
		}
	}
	return out, nil
}
