package activities

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/memory"
	"github.com/primerhq/primer/errs"
)

// tidying is a backend that keeps shared objects (backend.Tidier): it
// removes those older than the grace it is given.
type tidying struct {
	backend.Backend
	made  map[string]time.Time
	grace []time.Duration
	err   error
}

func (b *tidying) Tidy(_ context.Context, grace time.Duration) ([]string, error) {
	b.grace = append(b.grace, grace)
	if b.err != nil {
		return nil, b.err
	}
	var removed []string
	for name, at := range b.made {
		if time.Since(at) >= grace {
			removed = append(removed, name)
			delete(b.made, name)
		}
	}
	slices.Sort(removed)
	return removed, nil
}

// The reconciler asks each backend that keeps shared objects to remove
// those no sandbox uses, with its grace, and reports what went and what
// failed without stopping the pass.
func TestReconcileTidies(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	tb := &tidying{Backend: r.mem, made: map[string]time.Time{
		"network old": time.Now().Add(-time.Hour),
		"network new": time.Now(),
	}}
	r.a.Backends = backend.NewRegistry(map[string]backend.Factory{memory.Type: func(json.RawMessage) (backend.Backend, error) { return tb, nil }})

	out, err := r.a.Reconcile(ctx, ReconcileInput{Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Tidied, []string{"network old"}) || len(out.Errors) != 0 {
		t.Fatalf("tidied %v, errors %v; want the old network only", out.Tidied, out.Errors)
	}
	if !slices.Equal(tb.grace, []time.Duration{time.Minute}) {
		t.Errorf("Tidy got grace %v, want the pass's", tb.grace)
	}
	if _, ok := tb.made["network new"]; !ok {
		t.Error("the young network was removed")
	}

	tb.err = errs.E(errs.Unavailable, "engine down")
	out, err = r.a.Reconcile(ctx, ReconcileInput{Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 1 || !strings.Contains(out.Errors[0], "provider mem: tidy: engine down") {
		t.Fatalf("errors = %v, want the tidy failure", out.Errors)
	}
}
