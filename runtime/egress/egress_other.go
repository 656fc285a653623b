//go:build !linux

package egress

import (
	"errors"
	"fmt"
	"runtime"
)

var errUnsupported = fmt.Errorf("egress: %s: %w", runtime.GOOS, errors.ErrUnsupported)

// Deny is only supported on Linux.
func Deny() error { return errUnsupported }

// DropCaps is only supported on Linux.
func DropCaps(caps ...uintptr) error { return errUnsupported }

// SetNotDumpable is only supported on Linux.
func SetNotDumpable() error { return errUnsupported }
