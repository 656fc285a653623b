package envd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"path"
	"sync"

	"github.com/primerhq/primer/api/e2b/connect"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// eventTypes maps the runtime's watch events to envd's.
var eventTypes = map[string]EventType{
	protocol.WatchCreate: EventCreate,
	protocol.WatchWrite:  EventWrite,
	protocol.WatchRemove: EventRemove,
	protocol.WatchRename: EventRename,
	protocol.WatchChmod:  EventChmod,
}

// fsEvent turns a runtime event under dir into envd's; with entry, the
// entry is described when it still exists.
func (c *call) fsEvent(ctx context.Context, dir string, ev protocol.WatchEvent, entry bool) (*FilesystemEvent, bool) {
	t, ok := eventTypes[ev.Event]
	if !ok {
		return nil, false
	}
	out := &FilesystemEvent{Name: ev.Name, Type: t}
	if entry && t != EventRemove && t != EventRename {
		if e, err := c.statEntry(ctx, path.Join(dir, ev.Name)); err == nil {
			out.Entry = e
		}
	}
	return out, true
}

// startWatch resolves and arms a watch for a WatchDir or CreateWatcher.
func (c *call) startWatch(ctx context.Context, req *WatchDirRequest) (string, *client.Watch, error) {
	dir, err := c.path(req.Path)
	if err != nil {
		return "", nil, err
	}
	w, err := c.rt.Watch(ctx, dir, req.Recursive)
	if err != nil {
		return "", nil, err
	}
	return dir, w, nil
}

// watchDir streams a directory's changes: a start event once the watch is
// armed, then one event per change, until the client goes or the
// directory does.
func (h *handler) watchDir(ctx context.Context, header http.Header, req *WatchDirRequest, s *connect.Sender[WatchDirResponse]) error {
	c, err := h.begin(ctx, header)
	if err != nil {
		return err
	}
	dir, w, err := c.startWatch(ctx, req)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop(context.WithoutCancel(ctx)) }()
	if err := s.Send(&WatchDirResponse{Start: &Empty{}}); err != nil {
		return err
	}
	for {
		ev, ok, err := w.Next(ctx)
		if !ok {
			return err
		}
		if fe, ok := c.fsEvent(ctx, dir, ev, req.IncludeEntry); ok {
			if err := s.Send(&WatchDirResponse{Filesystem: fe}); err != nil {
				return err
			}
		}
	}
}

// maxWatcherEvents bounds what a polled watcher holds between two
// GetWatcherEvents; the oldest are dropped past it.
const maxWatcherEvents = 10_000

// watcher is a watch polled with GetWatcherEvents.
type watcher struct {
	workspaceID string
	cancel      context.CancelFunc

	mu     sync.Mutex
	events []*FilesystemEvent
	err    error // why the watch ended, reported once by GetWatcherEvents
	ended  bool
}

// watchers are the polled watches of every sandbox, by id.
type watchers struct {
	mu sync.Mutex
	m  map[string]*watcher
}

func newWatchers() *watchers { return &watchers{m: map[string]*watcher{}} }

// get returns the watcher id of workspace ws.
func (ws *watchers) get(workspaceID, id string) (*watcher, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.m[id]
	if w == nil || w.workspaceID != workspaceID {
		return nil, connect.NewError(connect.NotFound, "watcher "+id+" not found")
	}
	return w, nil
}

func (h *handler) createWatcher(ctx context.Context, header http.Header, req *WatchDirRequest) (*CreateWatcherResponse, error) {
	c, err := h.begin(ctx, header)
	if err != nil {
		return nil, err
	}
	dir, rw, err := c.startWatch(ctx, req)
	if err != nil {
		return nil, err
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	// The watch outlives this call: it runs until RemoveWatcher or the
	// runtime connection's end.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &watcher{workspaceID: c.sb.Workspace.ID, cancel: cancel}
	h.watchers.mu.Lock()
	h.watchers.m[id] = w
	h.watchers.mu.Unlock()
	go func() {
		defer func() { _ = rw.Stop(context.WithoutCancel(wctx)) }()
		for {
			ev, ok, err := rw.Next(wctx)
			if !ok {
				w.mu.Lock()
				w.ended = true
				if wctx.Err() == nil {
					w.err = err
				}
				w.mu.Unlock()
				return
			}
			fe, ok := c.fsEvent(wctx, dir, ev, req.IncludeEntry)
			if !ok {
				continue
			}
			w.mu.Lock()
			if len(w.events) >= maxWatcherEvents {
				w.events = w.events[1:]
			}
			w.events = append(w.events, fe)
			w.mu.Unlock()
		}
	}()
	return &CreateWatcherResponse{WatcherID: id}, nil
}

func (h *handler) getWatcherEvents(ctx context.Context, header http.Header, req *WatcherRequest) (*GetWatcherEventsResponse, error) {
	sb, ok := SandboxFrom(ctx)
	if !ok {
		return nil, connect.NewError(connect.Unauthenticated, "no sandbox resolved for this request")
	}
	w, err := h.watchers.get(sb.Workspace.ID, req.WatcherID)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	events, werr, ended := w.events, w.err, w.ended
	w.events, w.err = nil, nil
	w.mu.Unlock()
	if len(events) == 0 && ended {
		h.dropWatcher(req.WatcherID)
		if werr != nil {
			return nil, werr
		}
		return nil, connect.NewError(connect.NotFound, "watcher "+req.WatcherID+" ended: its directory is gone")
	}
	if events == nil {
		events = []*FilesystemEvent{}
	}
	return &GetWatcherEventsResponse{Events: events}, nil
}

func (h *handler) removeWatcher(ctx context.Context, header http.Header, req *WatcherRequest) (*Empty, error) {
	sb, ok := SandboxFrom(ctx)
	if !ok {
		return nil, connect.NewError(connect.Unauthenticated, "no sandbox resolved for this request")
	}
	if _, err := h.watchers.get(sb.Workspace.ID, req.WatcherID); err != nil {
		return nil, err
	}
	h.dropWatcher(req.WatcherID)
	return &Empty{}, nil
}

func (h *handler) dropWatcher(id string) {
	h.watchers.mu.Lock()
	w := h.watchers.m[id]
	delete(h.watchers.m, id)
	h.watchers.mu.Unlock()
	if w != nil {
		w.cancel()
	}
}
