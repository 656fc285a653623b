package api

import (
	"sync"
	"time"
)

// Defaults of the failed-authentication throttle: an address may fail 20
// times in a row, then once a second. A real user mistyping a key never
// gets near it; a script guessing keys is slowed to a crawl (and, the
// secret being 256 random bits, could not succeed anyway: the point is to
// keep a flood of bad requests off the store).
const (
	DefaultAuthFailBurst = 20
	DefaultAuthFailRate  = 1.0 // failures refilled per second
)

// maxFailBuckets bounds the addresses the throttle remembers; past it,
// buckets that have refilled (which carry no state worth keeping) go first.
const maxFailBuckets = 10000

// maxVouched bounds the hashes of keys known to be good.
const maxVouched = 10000

// vouchFor is how long a key that authenticated stays known as good to the
// throttle.
const vouchFor = 10 * time.Minute

// reportEvery is how often a throttled address is written to the audit log:
// a flood of rejected requests must not become a flood of writes.
const reportEvery = 10 * time.Second

// failLimiter throttles failed authentication per client address with a
// token bucket: each failure takes a token, tokens come back at rate per
// second up to burst. An address with no token left is answered 429
// without a store lookup, unless it presents a key that authenticated
// before (vouched): successful requests are never throttled.
type failLimiter struct {
	burst float64
	rate  float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*failBucket
	vouched map[string]time.Time // key hash -> when it last authenticated
}

type failBucket struct {
	tokens   float64
	last     time.Time // when tokens was computed
	reported time.Time // when a throttled request was last audited
}

// newFailLimiter returns a throttle allowing burst failures, then rate per
// second.
func newFailLimiter(burst int, rate float64) *failLimiter {
	return &failLimiter{
		burst: float64(burst), rate: rate, now: time.Now,
		buckets: map[string]*failBucket{}, vouched: map[string]time.Time{},
	}
}

// refill brings b's tokens up to now.
func (l *failLimiter) refill(b *failBucket, now time.Time) {
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
}

// exhausted reports whether addr has no failure left, and how long until it
// has one. report is true at most once per reportEvery per address: whether
// this throttled request should be audited.
func (l *failLimiter) exhausted(addr string) (wait time.Duration, report, out bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[addr]
	if !ok {
		return 0, false, false
	}
	now := l.now()
	l.refill(b, now)
	if b.tokens >= 1 {
		return 0, false, false
	}
	wait = time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	if now.Sub(b.reported) >= reportEvery {
		b.reported = now
		report = true
	}
	return wait, report, true
}

// fail takes a token from addr's bucket.
func (l *failLimiter) fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[addr]
	if !ok {
		if len(l.buckets) >= maxFailBuckets {
			l.prune(now)
		}
		b = &failBucket{tokens: l.burst, last: now}
		l.buckets[addr] = b
	}
	l.refill(b, now)
	b.tokens = max(0, b.tokens-1)
}

// prune drops the buckets that have refilled; if none has, it drops an
// arbitrary half, so memory stays bounded whatever the traffic.
func (l *failLimiter) prune(now time.Time) {
	for addr, b := range l.buckets {
		l.refill(b, now)
		if b.tokens >= l.burst {
			delete(l.buckets, addr)
		}
	}
	for addr := range l.buckets {
		if len(l.buckets) < maxFailBuckets/2 {
			break
		}
		delete(l.buckets, addr)
	}
}

// vouch remembers that the key with hash authenticated.
func (l *failLimiter) vouch(hash string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if _, ok := l.vouched[hash]; !ok && len(l.vouched) >= maxVouched {
		for h, at := range l.vouched {
			if now.Sub(at) > vouchFor || len(l.vouched) >= maxVouched {
				delete(l.vouched, h)
			}
		}
	}
	l.vouched[hash] = now
}

// vouchedFor reports whether the key with hash authenticated recently. It
// only decides whether a throttled address may try the store; the store
// still decides whether the key is valid (it may have been revoked since).
func (l *failLimiter) vouchedFor(hash string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.vouched[hash]
	return ok && l.now().Sub(at) <= vouchFor
}
