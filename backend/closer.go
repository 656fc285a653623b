package backend

// Closer is implemented by backends that hold resources beyond the
// sandboxes they make: API clients and their connections (container,
// Kubernetes), port-forwards (Kubernetes). The Registry closes a backend
// when a provider change replaces it, when its provider is deleted, and at
// shutdown, so nothing it holds outlives it. Close is idempotent; after it
// the backend may refuse calls that need what it released. Sandboxes are
// not touched: they belong to their workspaces.
type Closer interface {
	Close() error
}

// closeBackend closes b if it is a Closer.
func closeBackend(b Backend) error {
	if c, ok := b.(Closer); ok {
		return c.Close()
	}
	return nil
}
