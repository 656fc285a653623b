package api

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// defaultPreviewRecheck is how often a preview link with requests still
// open (a WebSocket, a stream) is read again, so that a revoke made by
// another platform process ends them too; one made here ends them at once.
const defaultPreviewRecheck = 5 * time.Second

// previewConns holds the requests still being served through preview
// links, by link, so that a link's end (revoked, gone, expired) ends them:
// a link that no longer opens anything keeps nothing open either.
type previewConns struct {
	// recheck is the interval between reads of a link with open requests
	// (nanoseconds; tests shorten or lengthen it while the server runs).
	recheck atomic.Int64

	mu   sync.Mutex
	next uint64
	open map[string]*previewHold
}

// previewHold is one link's open requests and the recheck watching it.
type previewHold struct {
	ends map[uint64]context.CancelCauseFunc
	stop context.CancelFunc
}

func newPreviewConns() *previewConns {
	pc := &previewConns{open: map[string]*previewHold{}}
	pc.recheck.Store(int64(defaultPreviewRecheck))
	return pc
}

// holdPreview returns the context to serve a request through preview p
// on: it ends with the caller's, at p's expiry, and when p is revoked or
// deleted. release is called when the request ends.
func (s *server) holdPreview(ctx context.Context, p *wire.Preview) (context.Context, func()) {
	pc := s.previews
	ctx, end := context.WithCancelCause(ctx)
	ctx, stopDeadline := context.WithDeadlineCause(ctx, p.ExpiresAt, previewExpired(p))

	pc.mu.Lock()
	h := pc.open[p.ID]
	if h == nil {
		rctx, stop := context.WithCancel(context.Background())
		h = &previewHold{ends: map[uint64]context.CancelCauseFunc{}, stop: stop}
		pc.open[p.ID] = h
		go s.recheckPreview(rctx, p.ID, time.Duration(pc.recheck.Load()))
	}
	n := pc.next
	pc.next++
	h.ends[n] = end
	pc.mu.Unlock()

	return ctx, func() {
		pc.mu.Lock()
		delete(h.ends, n)
		if len(h.ends) == 0 && pc.open[p.ID] == h {
			h.stop()
			delete(pc.open, p.ID)
		}
		pc.mu.Unlock()
		stopDeadline()
		end(nil)
	}
}

// endPreview ends the requests open through preview id, for cause.
func (pc *previewConns) endPreview(id string, cause error) {
	pc.mu.Lock()
	var ends []context.CancelCauseFunc
	if h := pc.open[id]; h != nil {
		for _, end := range h.ends {
			ends = append(ends, end)
		}
	}
	pc.mu.Unlock()
	for _, end := range ends {
		end(cause)
	}
}

// recheckPreview reads preview id every interval while requests are open
// through it and ends them once it is revoked or gone. A failed read ends
// nothing: the next one decides.
func (s *server) recheckPreview(ctx context.Context, id string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p, err := s.cfg.Store.GetPreview(ctx, id)
		switch {
		case errs.Is(err, errs.NotFound):
			s.previews.endPreview(id, previewGone(id))
		case err == nil:
			if ended := previewEnded(p, time.Now()); ended != nil {
				s.previews.endPreview(id, ended)
			}
		}
	}
}
