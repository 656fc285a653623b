package container

import (
	"context"
)

// ChangesOf is what a reset reads of workspace id's container: its
// changes outside the workspace from the overlay upper directory (fast,
// ok false where that cannot be read) and from the engine's changes API.
func (b *Backend) ChangesOf(ctx context.Context, id string) (upper []string, ok bool, api []string, err error) {
	info, err := b.cli.ContainerInspect(ctx, Name(id))
	if err != nil {
		return nil, false, nil, err
	}
	upper, ok = b.upperChanges(info, volumeWorkdir(info))
	cs, err := b.cli.ContainerDiff(ctx, info.ID)
	if err != nil {
		return nil, false, nil, err
	}
	for _, c := range cs {
		api = append(api, c.Kind.String()+" "+c.Path)
	}
	return upper, ok, api, nil
}
