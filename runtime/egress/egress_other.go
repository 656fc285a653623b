//go:build !linux

package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
)

var errUnsupported = fmt.Errorf("egress: %s: %w", runtime.GOOS, errors.ErrUnsupported)

// Deny is only supported on Linux.
func Deny() error { return errUnsupported }

// Restrict is only supported on Linux.
func Restrict(port uint16, allow, except []netip.Prefix) error { return errUnsupported }

// DropCaps is only supported on Linux.
func DropCaps(caps ...uintptr) error { return errUnsupported }

// SetNotDumpable is only supported on Linux.
func SetNotDumpable() error { return errUnsupported }
