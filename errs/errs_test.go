package errs

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorMessagesAndKinds(t *testing.T) {
	cause := errors.New("connection refused")
	tests := []struct {
		name      string
		err       error
		wantMsg   string
		wantKind  Kind
		wantField string
	}{
		{"E with cause prints it once", E(Unavailable, "workspace ws-1: ping: %w", cause), "workspace ws-1: ping: connection refused", Unavailable, ""},
		{"E without cause", E(NotFound, "provider %s: not found", "p1"), "provider p1: not found", NotFound, ""},
		{"Field", Field("spec.provider_id", "provider %q not found", "x"), `provider "x" not found`, Invalid, "spec.provider_id"},
		{"Wrap keeps message", Wrap(Conflict, cause), "connection refused", Conflict, ""},
		{"struct with Msg and Err", &Error{Kind: Timeout, Msg: "exec", Err: cause}, "exec: connection refused", Timeout, ""},
		{"kind seen through fmt wrapping", fmt.Errorf("outer: %w", E(Forbidden, "no")), "outer: no", Forbidden, ""},
		{"plain error is Other", cause, "connection refused", Other, ""},
		{"field seen through wrapping", fmt.Errorf("create: %w", Field("id", "bad id")), "create: bad id", Invalid, "id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.wantMsg {
				t.Errorf("Error() = %q, want %q", got, tt.wantMsg)
			}
			if got := KindOf(tt.err); got != tt.wantKind {
				t.Errorf("KindOf = %v, want %v", got, tt.wantKind)
			}
			if got := FieldOf(tt.err); got != tt.wantField {
				t.Errorf("FieldOf = %q, want %q", got, tt.wantField)
			}
		})
	}
	if !errors.Is(E(Unavailable, "x: %w", cause), cause) {
		t.Error("E does not unwrap to its cause")
	}
	if Wrap(Invalid, nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	for k := Other; k <= Canceled; k++ {
		if ParseKind(k.String()) != k {
			t.Errorf("ParseKind(%q) = %v, want %v", k.String(), ParseKind(k.String()), k)
		}
	}
}
