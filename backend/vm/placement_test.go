package vm

import (
	"errors"
	"strings"
	"testing"

	"github.com/primerhq/primer/errs"
)

func TestPlace(t *testing.T) {
	ptr := func(n int) *int { return &n }
	down := errs.E(errs.Unavailable, "ssh h: connection refused")
	keyChanged := errs.Wrap(errs.Forbidden, &HostKeyError{Addr: "k:22", KnownHosts: "/etc/kh", Changed: true})
	host := func(addr string, labels map[string]string, max *int, load int, err error) candidate {
		return candidate{HostConfig: HostConfig{Address: addr, Labels: labels, MaxWorkspaces: max}, Load: load, Err: err}
	}
	gpu := map[string]string{"gpu": "a100"}
	tests := []struct {
		name     string
		hosts    []candidate
		selector map[string]string
		want     string
		wantKind errs.Kind // when want is empty
		wantMsg  string
	}{
		{"least loaded", []candidate{host("a", nil, nil, 3, nil), host("b", nil, nil, 1, nil), host("c", nil, nil, 2, nil)}, nil, "b", 0, ""},
		{"tie goes to the first", []candidate{host("a", nil, nil, 1, nil), host("b", nil, nil, 1, nil)}, nil, "a", 0, ""},
		{"selector", []candidate{host("a", nil, nil, 0, nil), host("b", gpu, nil, 5, nil)}, gpu, "b", 0, ""},
		{"selector needs every label", []candidate{host("a", map[string]string{"gpu": "a100"}, nil, 0, nil), host("b", map[string]string{"gpu": "a100", "zone": "x"}, nil, 3, nil)}, map[string]string{"gpu": "a100", "zone": "x"}, "b", 0, ""},
		{"full host skipped", []candidate{host("a", nil, ptr(2), 2, nil), host("b", nil, ptr(8), 5, nil)}, nil, "b", 0, ""},
		{"unreachable host skipped", []candidate{host("a", nil, nil, 0, down), host("b", nil, nil, 4, nil)}, nil, "b", 0, ""},
		{"no match", []candidate{host("a", nil, nil, 0, nil)}, gpu, "", errs.Invalid, "template selector {gpu=a100} matches no host"},
		{"all full", []candidate{host("a", gpu, ptr(1), 1, nil), host("b", gpu, ptr(2), 2, nil), host("c", nil, nil, 0, nil)}, gpu, "", errs.Unavailable, "all 2 hosts matching selector {gpu=a100} are full"},
		{"all down", []candidate{host("a", nil, nil, 0, down)}, nil, "", errs.Unavailable, "connection refused"},
		{"every host refuses its key", []candidate{host("k", nil, nil, 0, keyChanged), host("k2", nil, nil, 0, keyChanged)}, nil, "", errs.Forbidden, "host key of k:22 does not match known_hosts /etc/kh"},
		{"one refuses its key, one down", []candidate{host("a", nil, nil, 0, down), host("k", nil, nil, 0, keyChanged)}, nil, "", errs.Unavailable, "host key of k:22 does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := place(tt.hosts, tt.selector)
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("place = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil || errs.KindOf(err) != tt.wantKind || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("place = %q, %v (kind %v); want a %v error containing %q", got, err, errs.KindOf(err), tt.wantKind, tt.wantMsg)
			}
			if tt.wantKind == errs.Invalid && errs.FieldOf(err) != "spec.backend.selector" {
				t.Errorf("field = %q, want spec.backend.selector", errs.FieldOf(err))
			}
			if tt.name == "all down" && !errors.Is(err, down) {
				t.Errorf("error %v does not wrap the host's", err)
			}
		})
	}
}

// A template's selector is checked against the fleet when the template
// is stored: 400 naming spec.backend.selector.
func TestCheckSelector(t *testing.T) {
	hosts := []HostConfig{{Address: "a", Labels: map[string]string{"gpu": "a100"}}, {Address: "b"}}
	if err := checkSelector(hosts, map[string]string{"gpu": "a100"}); err != nil {
		t.Errorf("matching selector: %v", err)
	}
	if err := checkSelector(hosts, nil); err != nil {
		t.Errorf("empty selector: %v", err)
	}
	err := checkSelector(hosts, map[string]string{"gpu": "h100"})
	if errs.FieldOf(err) != "spec.backend.selector" || !strings.Contains(err.Error(), "{gpu=h100}") {
		t.Errorf("selector matching nothing = %v, want invalid naming spec.backend.selector", err)
	}
}
