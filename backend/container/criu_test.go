package container

import (
	"errors"
	"testing"
)

func TestCriuCause(t *testing.T) {
	check := "Error (criu/vdso.c:381): vdso: Unexpected rt vDSO area bounds\n" +
		"Error (criu/vdso.c:613): vdso: Failed to fill self vdso symtable\n" +
		"Error (criu/crtools.c:260): Could not initialize kernel features detection.\n"
	for _, tc := range []struct{ out, want string }{
		{check, "Error (criu/vdso.c:381): vdso: Unexpected rt vDSO area bounds"},
		{"Warn: something\nLooks bad\n\n", "Looks bad"},
		{"", "exit status 1"},
	} {
		if got := criuCause(tc.out, errors.New("exit status 1")); got != tc.want {
			t.Errorf("criuCause(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
}
