package api

import (
	"strconv"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
)

// Default caps on what one key or tenant may hold open at once, applied by
// New to zero Config fields. A stream holds a connection and reads the
// store whenever it is woken, for as long as it is open, and an upload holds a spooled file and a runtime
// write: without a cap one member key could open thousands of each.
const (
	DefaultMaxStreamsPerKey    = 16
	DefaultMaxStreamsPerTenant = 64
	DefaultMaxUploadsPerTenant = 4
)

// Retry-After of a refusal at a cap, in seconds: a stream or upload ends
// when its client is done, which the server cannot predict.
const (
	streamRetryAfter = 5
	uploadRetryAfter = 1
)

// inflight counts what is open per name (an API key, a tenant) under caps.
// The zero value is not usable; use newInflight.
type inflight struct {
	mu sync.Mutex
	n  map[string]int
}

func newInflight() *inflight { return &inflight{n: map[string]int{}} }

// take counts one more for every name whose cap allows it, all or none:
// it returns the index of the first (name, cap) pair that is at its cap,
// or -1 when everything was counted. An empty name is not counted (a
// principal without a key under OpenAccess).
func (f *inflight) take(names []string, caps []int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, name := range names {
		if name != "" && f.n[name] >= caps[i] {
			return i
		}
	}
	for _, name := range names {
		if name != "" {
			f.n[name]++
		}
	}
	return -1
}

// give uncounts one for every name, forgetting names that reach zero so the
// map holds only what is open.
func (f *inflight) give(names []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range names {
		if name == "" {
			continue
		}
		if f.n[name]--; f.n[name] <= 0 {
			delete(f.n, name)
		}
	}
}

// count returns what is open under name (for tests).
func (f *inflight) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[name]
}

// openStream counts a stream for the caller's key and tenant, or answers
// 429 naming the cap it would pass (with Retry-After) and returns false.
// The release function must run when the stream ends; it is safe to call
// more than once.
func (s *server) openStream(c *gin.Context) (release func(), ok bool) {
	p := callerOf(c)
	names := []string{"key\x00" + p.KeyID, "tenant\x00" + p.TenantID}
	if p.KeyID == "" {
		names[0] = ""
	}
	caps := []int{s.cfg.MaxStreamsPerKey, s.cfg.MaxStreamsPerTenant}
	switch s.streams.take(names, caps) {
	case 0:
		c.Header("Retry-After", strconv.Itoa(streamRetryAfter))
		s.fail(c, errs.E(errs.Exhausted, "streams: api key %s has %d open streams, the cap for one key; close one and retry", p.KeyID, caps[0]))
		return nil, false
	case 1:
		c.Header("Retry-After", strconv.Itoa(streamRetryAfter))
		s.fail(c, errs.E(errs.Exhausted, "streams: tenant %s has %d open streams, the cap for one tenant; close one and retry", p.TenantID, caps[1]))
		return nil, false
	}
	s.cfg.Metrics.OpenStreams.Inc()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.streams.give(names)
			s.cfg.Metrics.OpenStreams.Dec()
		})
	}, true
}

// openUpload counts an upload for the caller's tenant, or answers 429
// naming the cap (with Retry-After) and returns false. The release function
// must run when the upload is done; it is safe to call more than once.
func (s *server) openUpload(c *gin.Context) (release func(), ok bool) {
	p := callerOf(c)
	names := []string{"tenant\x00" + p.TenantID}
	if s.uploads.take(names, []int{s.cfg.MaxUploadsPerTenant}) >= 0 {
		c.Header("Retry-After", strconv.Itoa(uploadRetryAfter))
		s.fail(c, errs.E(errs.Exhausted, "uploads: tenant %s has %d uploads in flight, the cap for one tenant; retry when one has finished", p.TenantID, s.cfg.MaxUploadsPerTenant))
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { s.uploads.give(names) }) }, true
}
