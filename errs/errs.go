// Package errs defines Primer's one error kind enum. Errors are created with E
// and carry a Kind that is translated in exactly two places: to an HTTP status
// in api/, and to retryable or not in activities/.
package errs

import (
	"errors"
	"fmt"
)

// Kind classifies an error by what the caller can do about it.
type Kind int

// The kinds of error. Other is the zero value: an unexpected, internal failure.
const (
	Other           Kind = iota // internal error; not the caller's fault
	Invalid                     // bad input: malformed, unknown field, path escapes the workspace
	NotFound                    // the named object does not exist
	Conflict                    // the object already exists, or its state forbids the change
	Forbidden                   // the change is not allowed for this object (the reserved local provider)
	Unavailable                 // a backend, runtime or dependency cannot be reached now; retrying may help
	TooLarge                    // a body or file is larger than the configured limit
	Precondition                // the object is not in a state that allows the operation (exec on a pending workspace)
	Timeout                     // the operation ran out of time
	Canceled                    // the caller canceled the operation
	Unauthenticated             // the request has no valid API key
	Exhausted                   // a quota or rate limit is reached; retrying later may succeed
)

var kindNames = map[Kind]string{
	Other:        "internal",
	Invalid:      "invalid",
	NotFound:     "not_found",
	Conflict:     "conflict",
	Forbidden:    "forbidden",
	Unavailable:  "unavailable",
	TooLarge:     "too_large",
	Precondition: "failed_precondition",
	Timeout:      "timeout",
	Canceled:     "canceled",

	Unauthenticated: "unauthenticated",
	Exhausted:       "resource_exhausted",
}

// String returns the snake_case code used in API error envelopes.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "internal"
}

// ParseKind is the inverse of Kind.String; unknown codes give Other.
func ParseKind(s string) Kind {
	for k, n := range kindNames {
		if n == s {
			return k
		}
	}
	return Other
}

// Error is an error with a Kind and, for Invalid, the offending field.
type Error struct {
	Kind  Kind
	Field string // for Invalid: the input field at fault, e.g. "spec.provider_id"
	Msg   string
	Err   error // the wrapped cause, if any

	// msgHasCause is set by E, whose Msg already contains the cause's text.
	msgHasCause bool
}

func (e *Error) Error() string {
	switch {
	case e.msgHasCause:
		return e.Msg
	case e.Msg != "" && e.Err != nil:
		return e.Msg + ": " + e.Err.Error()
	case e.Msg != "":
		return e.Msg
	case e.Err != nil:
		return e.Err.Error()
	}
	return e.Kind.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// E returns an error of the given kind with a formatted message. A %w verb in
// format wraps its argument as the cause.
func E(kind Kind, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: kind, Msg: err.Error(), Err: errors.Unwrap(err), msgHasCause: true}
}

// Field returns an Invalid error that names the input field at fault.
func Field(field, format string, args ...any) error {
	return &Error{Kind: Invalid, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Wrap gives err a kind, keeping its message. A nil err stays nil.
func Wrap(kind Kind, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: kind, Err: err}
}

// KindOf returns the kind of the outermost *Error in err's chain, or Other.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		if e.Kind == Other && e.Err != nil {
			return KindOf(e.Err)
		}
		return e.Kind
	}
	return Other
}

// FieldOf returns the field named by the first Invalid error in err's chain.
func FieldOf(err error) string {
	var e *Error
	for errors.As(err, &e) {
		if e.Field != "" {
			return e.Field
		}
		err = e.Err
	}
	return ""
}

// Is reports whether err has the given kind.
func Is(err error, kind Kind) bool { return err != nil && KindOf(err) == kind }
