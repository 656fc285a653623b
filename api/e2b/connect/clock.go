package connect

import "time"

// Clock is the time source of deadlines and keepalives, so tests can fire
// them without sleeping.
type Clock interface {
	// AfterFunc calls f once d has passed, unless stop is called first.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
	// NewTicker delivers a tick every d until stop is called.
	NewTicker(d time.Duration) (ticks <-chan time.Time, stop func())
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

func (realClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
