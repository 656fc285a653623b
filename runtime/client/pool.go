package client

import (
	"context"
	"sync"
	"time"

	"github.com/primerhq/primer/errs"
)

// dialTimeout bounds a pooled dial, which outlives the ctx of the Get that
// started it so one caller giving up does not fail the others waiting.
const dialTimeout = 30 * time.Second

// Pool keeps one live client per key (a workspace id). It is safe for
// concurrent use.
type Pool struct {
	mu      sync.Mutex
	entries map[string]*poolEntry
	closed  bool

	// OnConnect, when set (before the first Get), is called on a goroutine
	// of its own with each new connection the pool makes, and its key: the
	// model gateway asks the runtime to listen there, so a reconnect after
	// either side restarts serves it again.
	OnConnect func(key string, c *Client)

	// onWait, set by tests, is called when a Get waits for another
	// token's dial to the same url.
	onWait func(key string)
}

// poolEntry is a client, or a dial in progress, for one key.
type poolEntry struct {
	url, token string
	ready      chan struct{} // closed when the dial ended
	client     *Client
	err        error
	// prev is the live entry this dial would replace: one made with
	// another token to the same url. It stays open, and is what its
	// token's callers get, until this dial succeeds; if the runtime
	// refuses this token, prev is the pool's entry again. So a caller
	// holding a stale token (a workspace row read before a re-attach
	// stored the runtime's own) cannot cut the connection others use.
	prev *poolEntry
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{entries: map[string]*poolEntry{}} }

// Get returns the live client for key. It dials when there is none, when
// the connection died, or when url or token changed: the old client is
// closed when the url changed, and on a token change once the runtime has
// taken the new token (a refused one leaves the old connection the pool's).
// Concurrent Gets for one key share one dial.
func (p *Pool) Get(ctx context.Context, key, url, token string) (*Client, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed(url)
	}
	e := p.entries[key]
	if e != nil && e.prev != nil && e.prev.live(url, token) {
		// Another token is being tried; this one's connection still
		// stands.
		c := e.prev.client
		p.mu.Unlock()
		return c, nil
	}
	if e != nil && e.url == url && e.token != token && !e.finished() {
		// Another token's dial to this url is under way (a re-attach
		// with the runtime's own token, or a caller holding an older
		// row): wait for it, then try this token beside what it made.
		// Replacing it would drop the dial of the caller whose token
		// the runtime takes, for one it may refuse.
		ready := e.ready
		p.mu.Unlock()
		if p.onWait != nil {
			p.onWait(key)
		}
		select {
		case <-ready:
			return p.Get(ctx, key, url, token)
		case <-ctx.Done():
			return nil, ctxError(ctx, "runtime "+url+": dial")
		}
	}
	var prev *poolEntry
	if e != nil && (e.url != url || e.token != token || e.dead()) {
		switch {
		case e.url == url && e.live(e.url, e.token):
			prev = e
		case e.finished() && e.client != nil:
			_ = e.client.Close()
		}
		e = nil
	}
	if e == nil {
		e = &poolEntry{url: url, token: token, ready: make(chan struct{}), prev: prev}
		p.entries[key] = e
		go p.dial(ctx, key, e)
	}
	p.mu.Unlock()

	select {
	case <-e.ready:
	case <-ctx.Done():
		return nil, ctxError(ctx, "runtime "+url+": dial")
	}
	if e.err != nil {
		return nil, e.err
	}
	return e.client, nil
}

// Live returns the pooled client of key when it is connected and was dialed
// with token, without dialing. Callers use it to skip finding the endpoint
// (an engine call for a container) on every request.
func (p *Pool) Live(key, token string) (*Client, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[key]
	if e != nil && e.prev != nil && e.prev.live(e.prev.url, token) {
		return e.prev.client, true
	}
	if e == nil || !e.live(e.url, token) {
		return nil, false
	}
	return e.client, true
}

func (p *Pool) dial(ctx context.Context, key string, e *poolEntry) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dialTimeout)
	defer cancel()
	c, err := Dial(dctx, e.url, e.token)
	p.mu.Lock()
	defer p.mu.Unlock()
	defer close(e.ready)
	wanted := !p.closed && p.entries[key] == e
	prev := e.prev
	e.prev = nil
	switch {
	case err != nil && wanted && prev != nil && !prev.dead():
		// The runtime refused this token, not the connection that
		// stands: it stays the pool's.
		p.entries[key] = prev
		prev = nil
	case err != nil:
		// A failed dial is not cached: the next Get tries again.
		if wanted {
			delete(p.entries, key)
		}
	case !wanted:
		// Dropped, replaced or closed while dialing.
		_ = c.Close()
		c, err = nil, errs.E(errs.Unavailable, "runtime %s: dial: connection dropped from the pool", e.url)
	}
	if prev != nil && prev.client != nil && p.entries[key] != prev {
		// Replaced by this dial, or left behind by a drop or a newer Get.
		_ = prev.client.Close()
	}
	e.client, e.err = c, err
	if err == nil && p.OnConnect != nil {
		go p.OnConnect(key, c)
	}
}

func (e *poolEntry) finished() bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

// live reports a finished dial to url with token whose connection stands.
func (e *poolEntry) live(url, token string) bool {
	return e.url == url && e.token == token && e.finished() && e.err == nil && e.client != nil && !e.dead()
}

// dead reports a finished dial whose connection is gone.
func (e *poolEntry) dead() bool {
	if !e.finished() {
		return false
	}
	if e.client == nil {
		return true
	}
	select {
	case <-e.client.Done():
		return true
	default:
		return false
	}
}

// Drop closes and forgets the client for key.
func (p *Pool) Drop(key string) {
	p.mu.Lock()
	e := p.entries[key]
	delete(p.entries, key)
	var prev *poolEntry
	if e != nil {
		prev, e.prev = e.prev, nil
	}
	p.mu.Unlock()
	if e != nil && e.finished() && e.client != nil {
		_ = e.client.Close()
	}
	if prev != nil && prev.client != nil {
		_ = prev.client.Close()
	}
}

// Close closes every client; later Gets fail.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	entries := p.entries
	p.entries = map[string]*poolEntry{}
	var prevs []*poolEntry
	for _, e := range entries {
		if e.prev != nil {
			prevs = append(prevs, e.prev)
			e.prev = nil
		}
	}
	p.mu.Unlock()
	for _, e := range entries {
		if e.finished() && e.client != nil {
			_ = e.client.Close()
		}
	}
	for _, e := range prevs {
		if e.client != nil {
			_ = e.client.Close()
		}
	}
}
