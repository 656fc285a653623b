// Package keylock serialises work per key (a workspace id, a repository) so
// that a provision, an endpoint and a destroy of the same workspace never
// interleave, while different workspaces proceed in parallel.
package keylock

import (
	"sync"

	"github.com/primerhq/primer/backend"
)

// Map is a set of mutexes created on demand and dropped when unused. The
// zero value is ready to use.
type Map struct {
	mu    sync.Mutex
	locks map[string]*entry
}

type entry struct {
	mu   sync.Mutex
	refs int
}

// Lock locks key and returns the function that unlocks it.
func (m *Map) Lock(key string) (unlock func()) {
	m.mu.Lock()
	if m.locks == nil {
		m.locks = map[string]*entry{}
	}
	e := m.locks[key]
	if e == nil {
		e = &entry{}
		m.locks[key] = e
	}
	e.refs++
	m.mu.Unlock()

	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		m.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(m.locks, key)
		}
		m.mu.Unlock()
	}
}

// LockHandle checks h as a backend of type typ must before it touches the
// workspace (backend.Handle.CheckTypeID with checkID, nil: backend.CheckID)
// and locks the workspace's id.
func (m *Map) LockHandle(h backend.Handle, typ string, checkID func(string) error) (unlock func(), err error) {
	if err := h.CheckTypeID(typ, checkID); err != nil {
		return nil, err
	}
	return m.Lock(h.WorkspaceID), nil
}
