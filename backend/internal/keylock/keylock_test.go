package keylock

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMap(t *testing.T) {
	var m Map
	var inA atomic.Int32
	var maxA atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			unlock := m.Lock("a")
			defer unlock()
			if n := inA.Add(1); n > maxA.Load() {
				maxA.Store(n)
			}
			time.Sleep(time.Millisecond)
			inA.Add(-1)
		})
	}
	// A different key is not held up by "a".
	unlockB := m.Lock("b")
	unlockB()
	wg.Wait()
	if maxA.Load() != 1 {
		t.Errorf("%d holders of one key at once, want 1", maxA.Load())
	}
	if len(m.locks) != 0 {
		t.Errorf("%d locks kept after use, want 0", len(m.locks))
	}
}
