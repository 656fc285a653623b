package connect

import (
	"context"
	"errors"
	"net/http"

	"github.com/primerhq/primer/errs"
)

// Code is a Connect error code, written in its snake_case wire form.
type Code string

// The Connect error codes (connectrpc.com/docs/protocol#error-codes).
const (
	Canceled           Code = "canceled"
	Unknown            Code = "unknown"
	InvalidArgument    Code = "invalid_argument"
	DeadlineExceeded   Code = "deadline_exceeded"
	NotFound           Code = "not_found"
	AlreadyExists      Code = "already_exists"
	PermissionDenied   Code = "permission_denied"
	ResourceExhausted  Code = "resource_exhausted"
	FailedPrecondition Code = "failed_precondition"
	Aborted            Code = "aborted"
	OutOfRange         Code = "out_of_range"
	Unimplemented      Code = "unimplemented"
	Internal           Code = "internal"
	Unavailable        Code = "unavailable"
	DataLoss           Code = "data_loss"
	Unauthenticated    Code = "unauthenticated"
)

// HTTPStatus is the status a unary error with this code is answered with,
// per the protocol's mapping. Streams always answer 200 and carry the code
// in the end-stream message.
func (c Code) HTTPStatus() int {
	switch c {
	case Canceled:
		return 499
	case InvalidArgument, FailedPrecondition, OutOfRange:
		return http.StatusBadRequest
	case DeadlineExceeded:
		return http.StatusGatewayTimeout
	case NotFound:
		return http.StatusNotFound
	case AlreadyExists, Aborted:
		return http.StatusConflict
	case PermissionDenied:
		return http.StatusForbidden
	case ResourceExhausted:
		return http.StatusTooManyRequests
	case Unimplemented:
		return http.StatusNotImplemented
	case Unavailable:
		return http.StatusServiceUnavailable
	case Unauthenticated:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// Error is an error with a Connect code; it is what clients see, as
// {"code", "message"} (unary) or inside the end-stream message (streams).
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message,omitempty"`
}

// Error returns the code and the message.
func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// NewError returns an *Error with code and message.
func NewError(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

// errDeadline is the cause a handler's context is canceled with when the
// client's Connect-Timeout-Ms runs out.
var errDeadline = errors.New("deadline exceeded")

// ErrorOf turns any error a handler returns into the Connect error sent to
// the client: an *Error passes through, an errs kind maps to its code, and a
// context ended by the client's deadline is deadline_exceeded.
func ErrorOf(ctx context.Context, err error) *Error {
	if ctx != nil && errors.Is(context.Cause(ctx), errDeadline) {
		return &Error{Code: DeadlineExceeded, Message: "the request's Connect-Timeout-Ms passed"}
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	switch {
	case errors.Is(err, context.Canceled):
		return &Error{Code: Canceled, Message: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: DeadlineExceeded, Message: err.Error()}
	}
	return &Error{Code: codeOfKind(errs.KindOf(err)), Message: err.Error()}
}

// codeOfKind maps Primer's error kinds onto Connect codes.
func codeOfKind(k errs.Kind) Code {
	switch k {
	case errs.Invalid:
		return InvalidArgument
	case errs.NotFound:
		return NotFound
	case errs.Conflict:
		return AlreadyExists
	case errs.Precondition:
		return FailedPrecondition
	case errs.Forbidden:
		return PermissionDenied
	case errs.Unavailable:
		return Unavailable
	case errs.TooLarge, errs.Exhausted:
		return ResourceExhausted
	case errs.Timeout:
		return DeadlineExceeded
	case errs.Canceled:
		return Canceled
	case errs.Unauthenticated:
		return Unauthenticated
	}
	return Internal
}
