package envd

import (
	"context"
	"net/http"
	"path"

	"github.com/primerhq/primer/api/e2b/connect"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// call is what every procedure starts from: the sandbox, the user of the
// call and a connection to the runtime.
type call struct {
	h    *handler
	sb   *Sandbox
	user string
	rt   *client.Client
}

// begin resolves a Connect call's sandbox, user and runtime.
func (h *handler) begin(ctx context.Context, header http.Header) (*call, error) {
	sb, ok := SandboxFrom(ctx)
	if !ok {
		return nil, connect.NewError(connect.Unauthenticated, "no sandbox resolved for this request")
	}
	cl, err := h.rt.Client(ctx, sb.Workspace)
	if err != nil {
		return nil, err
	}
	return &call{h: h, sb: sb, user: userOf(sb, header), rt: cl}, nil
}

// path resolves p for this call's user.
func (c *call) path(p string) (string, error) { return c.h.resolve(c.sb, c.user, p) }

// beginAt is begin, then the request's path resolved for its user: the
// first steps of every call on one path.
func (h *handler) beginAt(ctx context.Context, header http.Header, path string) (*call, string, error) {
	c, err := h.begin(ctx, header)
	if err != nil {
		return nil, "", err
	}
	p, err := c.path(path)
	if err != nil {
		return nil, "", err
	}
	return c, p, nil
}

func (h *handler) registerFilesystem() {
	h.mux.Handle("filesystem.Filesystem/Stat", connect.Unary(h.stat))
	h.mux.Handle("filesystem.Filesystem/MakeDir", connect.Unary(h.makeDir))
	h.mux.Handle("filesystem.Filesystem/Move", connect.Unary(h.move))
	h.mux.Handle("filesystem.Filesystem/ListDir", connect.Unary(h.listDir))
	h.mux.Handle("filesystem.Filesystem/Remove", connect.Unary(h.remove))
	h.mux.Handle("filesystem.Filesystem/WatchDir", connect.ServerStream(h.watchDir,
		func() *WatchDirResponse { return &WatchDirResponse{Keepalive: &Empty{}} }))
	h.mux.Handle("filesystem.Filesystem/CreateWatcher", connect.Unary(h.createWatcher))
	h.mux.Handle("filesystem.Filesystem/GetWatcherEvents", connect.Unary(h.getWatcherEvents))
	h.mux.Handle("filesystem.Filesystem/RemoveWatcher", connect.Unary(h.removeWatcher))
}

// entryOf describes a runtime file as envd's EntryInfo; p is its absolute
// path. Mode and permissions are Go's os.FileMode, type bits included, as
// envd sends them.
func entryOf(p string, fi protocol.FileInfo) *EntryInfo {
	mode := fi.FileMode()
	t := FileTypeFile
	switch {
	case fi.IsSymlink:
		t = FileTypeSymlink
	case fi.IsDir:
		t = FileTypeDirectory
	}
	mt := Timestamp(fi.ModTime)
	var target *string
	if fi.IsSymlink && fi.LinkTarget != "" {
		// envd reports where the link leads, as an absolute path.
		t := fi.LinkTarget
		if !path.IsAbs(t) {
			t = path.Join(path.Dir(p), t)
		}
		target = &t
	}
	return &EntryInfo{
		Name:          path.Base(p),
		Type:          t,
		Path:          p,
		Size:          Int64(fi.Size),
		Mode:          uint32(mode),
		Permissions:   mode.String(),
		Owner:         fi.Owner,
		Group:         fi.Group,
		ModifiedTime:  &mt,
		SymlinkTarget: target,
	}
}

// statEntry stats p and describes it.
func (c *call) statEntry(ctx context.Context, p string) (*EntryInfo, error) {
	fi, err := c.rt.Stat(ctx, p)
	if err != nil {
		return nil, err
	}
	return entryOf(p, fi), nil
}

func (h *handler) stat(ctx context.Context, header http.Header, req *PathRequest) (*EntryResponse, error) {
	c, p, err := h.beginAt(ctx, header, req.Path)
	if err != nil {
		return nil, err
	}
	e, err := c.statEntry(ctx, p)
	if err != nil {
		return nil, err
	}
	return &EntryResponse{Entry: e}, nil
}

// makeDir creates a directory and its missing parents, owned by the user;
// an existing directory is already_exists (the SDK's makeDir answers false),
// an existing file invalid_argument, as envd does.
func (h *handler) makeDir(ctx context.Context, header http.Header, req *PathRequest) (*EntryResponse, error) {
	c, p, err := h.beginAt(ctx, header, req.Path)
	if err != nil {
		return nil, err
	}
	fi, err := c.rt.Stat(ctx, p)
	switch {
	case err == nil && fi.IsDir:
		return nil, connect.NewError(connect.AlreadyExists, "directory already exists: "+p)
	case err == nil:
		return nil, connect.NewError(connect.InvalidArgument, "path already exists but it is not a directory: "+p)
	case !errs.Is(err, errs.NotFound):
		return nil, err
	}
	if err := c.rt.MkdirAs(ctx, p, true, c.user); err != nil {
		return nil, err
	}
	e, err := c.statEntry(ctx, p)
	if err != nil {
		return nil, err
	}
	return &EntryResponse{Entry: e}, nil
}

// move renames source to destination, creating the destination's missing
// parents.
func (h *handler) move(ctx context.Context, header http.Header, req *MoveRequest) (*EntryResponse, error) {
	c, from, err := h.beginAt(ctx, header, req.Source)
	if err != nil {
		return nil, err
	}
	to, err := c.path(req.Destination)
	if err != nil {
		return nil, err
	}
	if _, err := c.rt.Stat(ctx, from); err != nil {
		return nil, err
	}
	if err := c.rt.MkdirAs(ctx, path.Dir(to), true, c.user); err != nil {
		return nil, err
	}
	if err := c.rt.Rename(ctx, from, to); err != nil {
		return nil, err
	}
	e, err := c.statEntry(ctx, to)
	if err != nil {
		return nil, err
	}
	return &EntryResponse{Entry: e}, nil
}

// remove deletes a file or a directory with its content; a missing path is
// no error, as with envd's os.RemoveAll.
func (h *handler) remove(ctx context.Context, header http.Header, req *PathRequest) (*Empty, error) {
	c, p, err := h.beginAt(ctx, header, req.Path)
	if err != nil {
		return nil, err
	}
	if err := c.rt.Remove(ctx, p, true); err != nil && !errs.Is(err, errs.NotFound) {
		return nil, err
	}
	return &Empty{}, nil
}

// maxListEntries bounds one ListDir answer, so a depth over a huge tree
// cannot hold the door's memory.
const maxListEntries = 100_000

// listDir lists a directory down to depth levels (0 is 1), parents before
// their children; symlinked directories below the top are not entered.
func (h *handler) listDir(ctx context.Context, header http.Header, req *ListDirRequest) (*ListDirResponse, error) {
	c, top, err := h.beginAt(ctx, header, req.Path)
	if err != nil {
		return nil, err
	}
	depth := int(req.Depth)
	if depth == 0 {
		depth = 1
	}
	fi, err := c.rt.Stat(ctx, top)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir && !fi.IsSymlink {
		return nil, connect.NewError(connect.InvalidArgument, "path is not a directory: "+top)
	}
	out := []*EntryInfo{}
	var walk func(dir string, level int) error
	walk = func(dir string, level int) error {
		entries, err := c.rt.List(ctx, dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name)
			out = append(out, entryOf(p, e))
			if len(out) > maxListEntries {
				return connect.NewError(connect.ResourceExhausted, "more than 100000 entries: list with a smaller depth")
			}
			if e.IsDir && !e.IsSymlink && level < depth {
				if err := walk(p, level+1); err != nil && !errs.Is(err, errs.Forbidden) {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(top, 1); err != nil {
		return nil, err
	}
	return &ListDirResponse{Entries: out}, nil
}
