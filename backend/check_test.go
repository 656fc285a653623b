package backend_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// The handle checks every backend shares: Check wants the backend named,
// CheckTypeID accepts a handle built from the id alone, and both hold the
// id to the backend's rule.
func TestHandleChecks(t *testing.T) {
	narrow := func(id string) error {
		if id != "ws-1" {
			return errs.E(errs.Invalid, "workspace %q: not ws-1", id)
		}
		return nil
	}
	for _, tc := range []struct {
		name          string
		h             backend.Handle
		check         func(string) error
		wantCheck     bool // Check accepts
		wantCheckType bool // CheckTypeID accepts
	}{
		{"named, good id", backend.Handle{Backend: "x", WorkspaceID: "ws-1"}, nil, true, true},
		{"unnamed, good id", backend.Handle{WorkspaceID: "ws-1"}, nil, false, true},
		{"other backend", backend.Handle{Backend: "y", WorkspaceID: "ws-1"}, nil, false, false},
		{"dotted id", backend.Handle{Backend: "x", WorkspaceID: "../ws"}, nil, false, false},
		{"empty id", backend.Handle{Backend: "x"}, nil, false, false},
		{"backend's own rule", backend.Handle{Backend: "x", WorkspaceID: "ws-2"}, narrow, false, false},
		{"backend's own rule passes", backend.Handle{Backend: "x", WorkspaceID: "ws-1"}, narrow, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct {
				what string
				err  error
				want bool
			}{
				{"Check", tc.h.Check("x", tc.check), tc.wantCheck},
				{"CheckTypeID", tc.h.CheckTypeID("x", tc.check), tc.wantCheckType},
			} {
				if (c.err == nil) != c.want {
					t.Errorf("%s = %v, want accepted %v", c.what, c.err, c.want)
				}
				if c.err != nil && !errs.Is(c.err, errs.Invalid) {
					t.Errorf("%s = %v, want Invalid", c.what, c.err)
				}
			}
		})
	}
}

// OpenProviderConfig decodes strictly, accepts its kind or none, and
// sets it.
func TestOpenProviderConfig(t *testing.T) {
	type cfg struct {
		Kind string `json:"kind"`
		Path string `json:"path"`
	}
	for _, tc := range []struct {
		doc, field string
	}{
		{`{"kind":"x","path":"/a"}`, ""},
		{`{"path":"/a"}`, ""},
		{`{"kind":"y"}`, "spec.config.kind"},
		{`{"kind":"x","paht":"/a"}`, "spec.config.paht"},
	} {
		var c cfg
		err := backend.OpenProviderConfig(json.RawMessage(tc.doc), &c, &c.Kind, "x")
		if tc.field == "" {
			if err != nil || c.Kind != "x" || c.Path != "/a" {
				t.Errorf("%s: %+v, %v; want kind x, path /a", tc.doc, c, err)
			}
			continue
		}
		var e *errs.Error
		if !errors.As(err, &e) || errs.FieldOf(err) != tc.field {
			t.Errorf("%s: err %v (field %q), want field %s", tc.doc, err, errs.FieldOf(err), tc.field)
		}
	}
}
