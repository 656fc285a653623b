package activities

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/primerhq/primer/errs"
)

// Liveness that scales (issue 14): a healthy workspace's workflow does not
// wake for every probe. Its probe (a local activity, so it runs in the
// worker process that runs the workflow task) hands the workspace to that
// worker's Prober, and the workflow sleeps on a long backstop timer. The
// Prober probes every watched runtime on its interval from one goroutine
// and a few probe goroutines, counts misses as the workflow would, and
// signals the workflow only when something must change: a miss streak that
// fails the workspace, or a lifetime deadline that comes before the
// workflow's next wake. See docs/DECISIONS.md, "Liveness that scales".

// WatchRequest asks the probe to hand a healthy workspace's liveness to
// the worker's Prober when it hits (ProbeInput.Watch).
type WatchRequest struct {
	// WorkflowID is the workflow to signal.
	WorkflowID string
	// Interval is the workspace's probe interval.
	Interval time.Duration
	// Backstop is how long the workflow sleeps before it probes (and
	// watches) again itself; the watch lapses a little after it.
	Backstop time.Duration
	// MissesToFail is how many consecutive misses make the workflow fail
	// the workspace: the Prober signals when its streak reaches it.
	MissesToFail int
}

// LivenessSignal is what the Prober tells a workflow whose workspace's
// state must change. Misses and Reason are the miss streak and the last
// miss's reason (Misses 0: no miss to report); Lifetime, when set, is the
// deadlines the last probe read, when their nearest comes before the
// workflow's next wake.
type LivenessSignal struct {
	Misses int
	Reason string
	// Probes is how many probes the Prober made since the watch began, so
	// the workflow's probe count stays right.
	Probes int
	// At is when the last probe ran (wall clock of the Prober's worker).
	At       time.Time
	Lifetime *Lifetime `json:",omitempty"`
}

// SignalFunc delivers a LivenessSignal to a workflow. It returns an error
// of kind errs.NotFound when the workflow has closed.
type SignalFunc func(ctx context.Context, workflowID string, s LivenessSignal) error

// ProbeFunc probes one watched workspace (Activities.probeWatched). held
// is what the watch holds of the workspace (its rows and backend, nil:
// nothing); the probe uses it rather than reading the rows, reads them
// again when it must, and returns what the next probe is to use.
type ProbeFunc func(ctx context.Context, in ProbeInput, held *probeTarget) (ProbeOutput, *probeTarget, error)

// DefaultProberConcurrency bounds the probes a Prober runs at once: a
// paused sandbox holds a probe for the whole probe timeout.
const DefaultProberConcurrency = 64

// watchLapse is how long after its backstop a watch that was not renewed
// is dropped: the workflow task that renews it may be late.
const watchLapse = 30 * time.Second

// Prober probes the runtimes of the healthy workspaces its worker's
// workflows handed to it, each on its own interval, and signals a
// workflow only when its workspace's state must change. The zero value is
// not usable: use NewProber.
type Prober struct {
	probe  ProbeFunc
	signal SignalFunc
	sem    chan struct{}
	// beaconPing is how often a beacon-backed watch is pinged anyway
	// (BeaconBackstopPing; the bench shortens it with its other times).
	beaconPing time.Duration

	mu      sync.Mutex
	watches map[string]*watch // by workspace id
	due     watchHeap
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	stopped bool
}

// watch is one watched workspace.
type watch struct {
	id string
	in ProbeInput // the workspace, its handle, whether to read lifetimes
	// held is the workspace's rows and backend as last read (by the probe
	// that started or renewed the watch, or one that had to read them
	// again): a healthy workspace's probes read no row.
	held  *probeTarget
	req   WatchRequest
	wake  time.Time // the workflow's next wake (backstop or deadline)
	lapse time.Time // dropped when not renewed by then
	next  time.Time // next probe due
	busy  bool      // a probe is in flight
	// pingAt is when a beacon-backed watch is pinged anyway
	// (BeaconBackstopPing after its last probe that was not a beacon's).
	pingAt time.Time
	gen    uint64 // bumped by a renewal, so a late result of the old one is ignored
	index  int    // in the heap; -1 when not in it

	misses int
	probes int
}

// NewProber returns a running Prober; Stop ends it.
func NewProber(probe ProbeFunc, signal SignalFunc, concurrency int) *Prober {
	if concurrency <= 0 {
		concurrency = DefaultProberConcurrency
	}
	p := &Prober{
		probe:      probe,
		signal:     signal,
		sem:        make(chan struct{}, concurrency),
		beaconPing: BeaconBackstopPing,
		watches:    map[string]*watch{},
		kick:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	go p.run()
	return p
}

// Stop ends the Prober and waits for its scheduler; probes in flight end
// on their own timeout. Watches are not handed anywhere: each workflow's
// backstop brings its workspace to whichever worker runs it next.
func (p *Prober) Stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	p.mu.Unlock()
	close(p.stop)
	<-p.done
}

// Watch starts or renews the watch of a workspace whose probe just hit, at
// now: its next probe is due an interval later. held is what that probe
// read, which the watch's probes use (nil: they read it).
func (p *Prober) Watch(in ProbeInput, held *probeTarget, req WatchRequest, now time.Time, lt *Lifetime) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || req.Interval <= 0 || req.MissesToFail <= 0 || req.WorkflowID == "" {
		return false
	}
	in.ScheduledAt = time.Time{}
	w, ok := p.watches[in.WorkspaceID]
	if !ok {
		w = &watch{id: in.WorkspaceID, index: -1}
		p.watches[in.WorkspaceID] = w
	}
	w.gen++
	w.in, w.req, w.held = in, req, held
	w.misses, w.probes = 0, 0
	w.wake = now.Add(req.Backstop)
	if at := nearest(lt); !at.IsZero() && at.Before(w.wake) {
		w.wake = at
	}
	w.lapse = now.Add(req.Backstop + watchLapse)
	w.next = now.Add(req.Interval)
	w.pingAt = now.Add(p.beaconPing)
	if w.index >= 0 {
		heap.Fix(&p.due, w.index)
	} else if !w.busy {
		heap.Push(&p.due, w)
	}
	p.poke()
	return true
}

// Unwatch ends the watch of a workspace, if any.
func (p *Prober) Unwatch(workspaceID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop(workspaceID)
}

// Watching is how many workspaces the Prober watches.
func (p *Prober) Watching() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.watches)
}

// drop removes a watch; p.mu is held.
func (p *Prober) drop(id string) {
	w, ok := p.watches[id]
	if !ok {
		return
	}
	delete(p.watches, id)
	if w.index >= 0 {
		heap.Remove(&p.due, w.index)
	}
	w.gen++
}

func (p *Prober) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run starts every probe that is due, then sleeps until the next is.
func (p *Prober) run() {
	defer close(p.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		p.mu.Lock()
		now := time.Now()
		for p.due.Len() > 0 && !p.due[0].next.After(now) {
			w := heap.Pop(&p.due).(*watch)
			if now.After(w.lapse) {
				// Not renewed: its workflow watches it elsewhere, or is gone.
				delete(p.watches, w.id)
				continue
			}
			if b := beaconOf(w.held); b != nil && b.Fresh(now) && now.Before(w.pingAt) {
				// The runtime's beacon says it is alive: a hit, with no
				// goroutine, no round trip and no row (prober_beacon.go).
				w.probes++
				w.misses = 0
				w.next = now.Add(w.req.Interval)
				heap.Push(&p.due, w)
				continue
			}
			w.busy = true
			in, held, gen := w.in, w.held, w.gen
			in.ScheduledAt = w.next
			go p.probeOne(w, in, held, gen)
		}
		wait := time.Hour
		if p.due.Len() > 0 {
			wait = time.Until(p.due[0].next)
		}
		p.mu.Unlock()
		timer.Reset(max(wait, 0))
		select {
		case <-p.stop:
			return
		case <-p.kick:
		case <-timer.C:
		}
	}
}

// probeOne probes one watched workspace and acts on the result.
func (p *Prober) probeOne(w *watch, in ProbeInput, held *probeTarget, gen uint64) {
	select {
	case p.sem <- struct{}{}:
	case <-p.stop:
		return
	}
	out, held, err := p.probe(context.Background(), in, held)
	<-p.sem
	if err != nil {
		out = ProbeOutput{Reason: "probe: " + err.Error()}
	}
	now := time.Now()

	p.mu.Lock()
	w.busy = false
	if w.gen != gen || p.stopped {
		// Renewed or dropped meanwhile: the renewal scheduled it afresh.
		if cur, ok := p.watches[w.id]; ok && cur == w && w.index < 0 && !p.stopped {
			heap.Push(&p.due, w)
			p.poke()
		}
		p.mu.Unlock()
		return
	}
	if out.Paused {
		p.drop(w.id)
		p.mu.Unlock()
		return
	}
	w.probes++
	w.held = held
	var sig *LivenessSignal
	if out.Hit {
		w.misses = 0
		if at := nearest(out.Lifetime); !at.IsZero() && at.Before(w.wake) {
			// A deadline (a lease granted, a shorter ttl) the workflow
			// would otherwise sleep past.
			w.wake = at
			sig = &LivenessSignal{Probes: w.probes, At: now, Lifetime: out.Lifetime}
		}
	} else {
		w.misses++
		if w.misses >= w.req.MissesToFail {
			sig = &LivenessSignal{Misses: w.misses, Reason: out.Reason, Probes: w.probes, At: now, Lifetime: out.Lifetime}
		}
	}
	// The next probe is an interval after this one ended, as the
	// workflow's own loop waits an interval after each probe: misses of a
	// slow runtime (a probe that waits out its timeout, an endpoint being
	// made again) are spread as they were, so the reason of the third is
	// the same as before.
	w.next = now.Add(w.req.Interval)
	w.pingAt = now.Add(p.beaconPing)
	failing := sig != nil && sig.Misses > 0
	if failing {
		// The workflow takes over its failed workspace: stop watching.
		delete(p.watches, w.id)
		w.gen++
	} else {
		heap.Push(&p.due, w)
		p.poke()
	}
	if sig != nil {
		w.probes = 0
	}
	req := w.req
	p.mu.Unlock()

	if sig == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.signal(ctx, req.WorkflowID, *sig); err != nil {
		if errs.Is(err, errs.NotFound) {
			p.mu.Lock()
			if cur, ok := p.watches[w.id]; ok && cur == w {
				p.drop(w.id)
			}
			p.mu.Unlock()
			return
		}
		if failing {
			// Watch again with the streak kept: the next miss signals again.
			// The rows are read again: the workflow may have had the
			// signal and be replacing the sandbox (a new handle and token).
			p.mu.Lock()
			if _, ok := p.watches[w.id]; !ok && !p.stopped {
				w.gen++
				w.held = nil
				p.watches[w.id] = w
				heap.Push(&p.due, w)
				p.poke()
			}
			p.mu.Unlock()
		}
	}
}

// nearest is the nearest deadline of lt, zero when none.
func nearest(lt *Lifetime) time.Time {
	if lt == nil || lt.Resting {
		return time.Time{}
	}
	var at time.Time
	for _, t := range []time.Time{lt.ExpiresAt, lt.IdleDeadline, lt.LeaseExpiresAt} {
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	return at
}

// watchHeap orders watches by their next probe.
type watchHeap []*watch

func (h watchHeap) Len() int           { return len(h) }
func (h watchHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h watchHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *watchHeap) Push(x any) {
	w := x.(*watch)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *watchHeap) Pop() any {
	old := *h
	n := len(old)
	w := old[n-1]
	old[n-1] = nil
	w.index = -1
	*h = old[:n-1]
	return w
}
