package backend_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/wire"
)

// closing is a backend that counts its Close calls.
type closing struct {
	config string
	closed atomic.Int32
}

var _ backend.Closer = (*closing)(nil)

func (c *closing) Capabilities() backend.Capabilities            { return backend.Capabilities{} }
func (c *closing) ValidateTemplate(json.RawMessage) error        { return nil }
func (c *closing) Destroy(context.Context, backend.Handle) error { return nil }
func (c *closing) Provision(context.Context, backend.ProvisionRequest) (backend.Handle, error) {
	return backend.Handle{}, nil
}
func (c *closing) Endpoint(context.Context, backend.Handle, string) (backend.Endpoint, error) {
	return backend.Endpoint{}, nil
}
func (c *closing) Close() error { c.closed.Add(1); return nil }

// TestRegistryCloses checks that every backend the registry builds is
// closed exactly once: the one built to validate a provider at once, one
// replaced by a config change when it is replaced, a deleted provider's on
// Drop, and the rest at Close.
func TestRegistryCloses(t *testing.T) {
	var built []*closing
	reg := backend.NewRegistry(map[string]backend.Factory{"fake": func(cfg json.RawMessage) (backend.Backend, error) {
		b := &closing{config: string(cfg)}
		built = append(built, b)
		return b, nil
	}})
	closed := func() []int32 {
		out := make([]int32, len(built))
		for i, b := range built {
			out[i] = b.closed.Load()
		}
		return out
	}
	want := func(step string, w ...int32) {
		t.Helper()
		got := closed()
		if len(got) != len(w) {
			t.Fatalf("%s: %d backends built, want %d", step, len(got), len(w))
		}
		for i := range w {
			if got[i] != w[i] {
				t.Fatalf("%s: Close calls per backend = %v, want %v", step, got, w)
			}
		}
	}
	prov := func(id, cfg string) *wire.Provider {
		return &wire.Provider{ID: id, Provider: "fake", Config: json.RawMessage(cfg)}
	}

	if err := reg.Validate(prov("a", `{"v":0}`)); err != nil {
		t.Fatal(err)
	}
	want("validate", 1)
	a1, _ := reg.For(prov("a", `{"v":1}`))
	same, _ := reg.For(prov("a", `{"v":1}`))
	if same != a1 {
		t.Fatal("For with the same config built a new backend")
	}
	want("first For", 1, 0)
	a2, _ := reg.For(prov("a", `{"v":2}`))
	if a2 == a1 {
		t.Fatal("For with a changed config kept the old backend")
	}
	want("replace", 1, 1, 0)
	_, _ = reg.For(prov("b", `{}`))
	_, _ = reg.For(prov("c", `{}`))
	want("two more providers", 1, 1, 0, 0, 0)
	if err := reg.Drop("b"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Drop("never-built"); err != nil {
		t.Fatal(err)
	}
	want("drop b", 1, 1, 0, 1, 0)
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	want("close", 1, 1, 1, 1, 1)
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	want("close again", 1, 1, 1, 1, 1)
}
