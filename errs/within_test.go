package errs

import (
	"errors"
	"testing"
)

func TestWithin(t *testing.T) {
	cause := errors.New("no such image")
	for _, tc := range []struct {
		prefix string
		err    error
		want   string
	}{
		{"workspace ws-1: provision", E(Unavailable, "workspace ws-1: container backend: pull: %w", cause),
			"workspace ws-1: provision: container backend: pull: no such image"},
		{"workspace ws-1: provision", E(Unavailable, "workspace ws-1: provision: workspace ws-1: runtime did not answer"),
			"workspace ws-1: provision: runtime did not answer"},
		{"workspace ws-1: provision", E(Invalid, "template t: bad"), "workspace ws-1: provision: template t: bad"},
		{"workspace ws-1: runtime unreachable", E(NotFound, "runtime endpoint: workspace ws-1: directory /w/ws-1 not found"),
			"workspace ws-1: runtime unreachable: runtime endpoint: directory /w/ws-1 not found"},
		// Another workspace's name is not a repeat.
		{"workspace ws-1: replace", E(NotFound, "workspace ws-2: not found"), "workspace ws-1: replace: workspace ws-2: not found"},
	} {
		got := Within(tc.prefix, tc.err)
		if got.Error() != tc.want {
			t.Errorf("Within(%q, %q) = %q, want %q", tc.prefix, tc.err, got, tc.want)
		}
		if KindOf(got) != KindOf(tc.err) || !errors.Is(got, tc.err) {
			t.Errorf("Within(%q, %q): kind %v, chain lost (want kind %v)", tc.prefix, tc.err, KindOf(got), KindOf(tc.err))
		}
	}
	if Within("x", nil) != nil {
		t.Error("Within of nil is not nil")
	}
}
