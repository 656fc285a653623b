package backend_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

func TestDecodeHandle(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    backend.Handle
		wantOK  bool
		wantErr bool // an Other error naming the workspace
	}{
		{"no handle yet", "", backend.Handle{}, false, false},
		{"json null", " null ", backend.Handle{}, false, false},
		{"stored handle", `{"backend":"container","workspace_id":"ws-1a","path":"primer-ws-1a","attrs":{"container_id":"c1"}}`,
			backend.Handle{Backend: "container", WorkspaceID: "ws-1a", Path: "primer-ws-1a", Attrs: map[string]string{"container_id": "c1"}}, true, false},
		{"not json", `{"backend":`, backend.Handle{}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ok, err := backend.DecodeHandle("ws-1a", []byte(tt.raw))
			if tt.wantErr {
				if err == nil || errs.KindOf(err) != errs.Other || !strings.Contains(err.Error(), "workspace ws-1a: decode handle") {
					t.Fatalf("error = %v, want an Other error naming the workspace", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("error = %v, want nil", err)
			}
			if ok != tt.wantOK || !reflect.DeepEqual(h, tt.want) {
				t.Errorf("DecodeHandle = %+v, %v; want %+v, %v", h, ok, tt.want, tt.wantOK)
			}
		})
	}
}
