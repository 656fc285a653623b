// Package restoring marks the workspaces whose sandbox a backend's Restore
// is making again, so its Endpoint waits for the new sandbox instead of
// answering that the sandbox is gone: a probe (or an exec) that comes in
// that second would otherwise count a miss, and on a machine where eval
// cases remake their sandboxes all the time, misses in a row fail a
// healthy workspace. The container and Kubernetes backends share it.
package restoring

import (
	"context"
	"sync"
)

// Set is the workspaces being restored; its zero value is ready.
type Set struct {
	mu sync.Mutex
	m  map[string]chan struct{} // workspace id -> closed when done
}

// Begin marks id as being restored until the returned func runs.
func (r *Set) Begin(id string) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	r.m[id] = ch
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.m[id] == ch {
			delete(r.m, id)
		}
		close(ch)
	}
}

// Wait returns once id is not being restored, or when ctx ends.
func (r *Set) Wait(ctx context.Context, id string) {
	r.mu.Lock()
	ch := r.m[id]
	r.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}
