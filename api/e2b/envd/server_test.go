package envd

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// fakeRows is the store of a Server test: one provider, templates by id.
type fakeRows struct {
	templates map[string]*wire.Template
	reads     int
}

func (f *fakeRows) GetProvider(context.Context, string) (*wire.Provider, error) {
	return &wire.Provider{ID: "p", Provider: wire.BackendContainer}, nil
}

func (f *fakeRows) GetTemplate(_ context.Context, id string) (*wire.Template, error) {
	f.reads++
	if t, ok := f.templates[id]; ok {
		return t, nil
	}
	return nil, errs.E(errs.NotFound, "template %s: not found", id)
}

// TestServerDefaultUser: a call that names no user runs as the user its
// workspace's template names, E2B's "user" when it names none; a template
// generation is read once.
func TestServerDefaultUser(t *testing.T) {
	rows := &fakeRows{templates: map[string]*wire.Template{
		"dev":  {ID: "dev", Generation: 2, Backend: json.RawMessage(`{"kind":"container","image":"i","user":"dev"}`)},
		"none": {ID: "none", Generation: 1, Backend: json.RawMessage(`{"kind":"container","image":"i"}`)},
		"vm":   {ID: "vm", Generation: 1, Backend: json.RawMessage(`{"kind":"vm","user":"agent"}`)},
	}}
	var got string
	s := &Server{store: rows, h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sb, _ := SandboxFrom(r.Context())
		got = defaultUser(sb)
	})}
	serve := func(ws *wire.Workspace) string {
		s.ServeEnvd(httptest.NewRecorder(), httptest.NewRequest("POST", "/process.Process/Start", nil), ws)
		return got
	}
	tests := []struct {
		name string
		ws   wire.Workspace
		want string
	}{
		{"template user", wire.Workspace{ID: "ws-1", TemplateID: "dev", TemplateGeneration: 2, ProviderID: "p"}, "dev"},
		{"no template user", wire.Workspace{ID: "ws-2", TemplateID: "none", TemplateGeneration: 1, ProviderID: "p"}, DefaultUser},
		{"vm template user", wire.Workspace{ID: "ws-3", TemplateID: "vm", TemplateGeneration: 1, ProviderID: "p"}, "agent"},
		{"template gone", wire.Workspace{ID: "ws-4", TemplateID: "gone", TemplateGeneration: 1, ProviderID: "p"}, DefaultUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if u := serve(&tt.ws); u != tt.want {
				t.Fatalf("default user = %q, want %q", u, tt.want)
			}
		})
	}
	// The generation a workspace was made from is read once.
	reads := rows.reads
	ws := &wire.Workspace{ID: "ws-1", TemplateID: "dev", TemplateGeneration: 2, ProviderID: "p"}
	if u := serve(ws); u != "dev" || rows.reads != reads {
		t.Fatalf("again: user %q after %d more reads, want dev from the cache", u, rows.reads-reads)
	}
	// A workspace of an older generation than the row is not cached as it.
	old := &wire.Workspace{ID: "ws-5", TemplateID: "dev", TemplateGeneration: 1, ProviderID: "p"}
	serve(old)
	serve(old)
	if rows.reads != reads+2 {
		t.Fatalf("a workspace of an older generation read the template %d times, want every time (2)", rows.reads-reads)
	}
}
