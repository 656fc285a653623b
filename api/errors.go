package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// statusOf is the one place an errs kind becomes an HTTP status.
func statusOf(k errs.Kind) int {
	switch k {
	case errs.Invalid:
		return http.StatusBadRequest
	case errs.NotFound:
		return http.StatusNotFound
	case errs.Conflict, errs.Precondition:
		return http.StatusConflict
	case errs.Forbidden:
		return http.StatusForbidden
	case errs.TooLarge:
		return http.StatusRequestEntityTooLarge
	case errs.Unavailable:
		return http.StatusServiceUnavailable
	case errs.Timeout:
		return http.StatusGatewayTimeout
	case errs.Unauthenticated:
		return http.StatusUnauthorized
	case errs.Exhausted:
		return http.StatusTooManyRequests
	case errs.Canceled:
		// The client went away; nobody reads this status, but logs and
		// metrics should not count it as a server error.
		return 499
	}
	return http.StatusInternalServerError
}

// errorEnvelope builds the envelope for err. Internal errors keep their
// message (it names the object and the step that failed) so operators can act
// on a report; nothing secret is ever put into an error message.
func errorEnvelope(err error) (int, wire.ErrorEnvelope) {
	kind := errs.KindOf(err)
	body := wire.ErrorBody{Code: kind.String(), Message: err.Error(), Details: map[string]string{}}
	if f := errs.FieldOf(err); f != "" {
		body.Details["field"] = f
	}
	return statusOf(kind), wire.ErrorEnvelope{Error: body}
}

// fail writes err in the envelope and stops the handler chain.
func (s *server) fail(c *gin.Context, err error) {
	status, env := errorEnvelope(err)
	if status >= 500 && status != 499 {
		s.log.Warn("api: request failed", "method", c.Request.Method, "route", c.FullPath(),
			"status", status, "error", err.Error())
	}
	if c.Request.ContentLength < 0 {
		// A refused request whose body is still streaming in (chunked, of
		// no stated length): without this, net/http reads up to 256 KiB of
		// what remains before it sends the answer, so a client that sends
		// slowly never hears it. The connection closes instead.
		c.Header("Connection", "close")
	}
	c.AbortWithStatusJSON(status, env)
}

// failStatus writes an envelope with an explicit status and code, for the
// HTTP-level errors that have no errs kind (405).
func (s *server) failStatus(c *gin.Context, status int, code, msg string, details map[string]string) {
	if details == nil {
		details = map[string]string{}
	}
	c.AbortWithStatusJSON(status, wire.ErrorEnvelope{Error: wire.ErrorBody{Code: code, Message: msg, Details: details}})
}

// decodeJSON reads the request body into v strictly: at most MaxJSONBytes,
// no unknown fields, no trailing data. Errors are Invalid naming the field
// (prefixed with prefix, e.g. "spec.") or TooLarge. An empty body is allowed
// only when optional is true, leaving v untouched.
func (s *server) decodeJSON(c *gin.Context, v any, prefix string, optional bool) error {
	return s.decodeJSONLimit(c, v, prefix, optional, s.cfg.MaxJSONBytes)
}

// decodeJSONLimit is decodeJSON with a body limit of its own, for the
// bodies that carry file contents.
func (s *server) decodeJSONLimit(c *gin.Context, v any, prefix string, optional bool, limit int64) error {
	if c.Request.ContentLength > limit {
		return errs.E(errs.TooLarge, "request body: %d bytes is over the limit of %d", c.Request.ContentLength, limit)
	}
	body := http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	data, err := io.ReadAll(body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errs.E(errs.TooLarge, "request body: over the limit of %d bytes", limit)
		}
		return errs.E(errs.Invalid, "request body: read: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if optional {
			return nil
		}
		return errs.E(errs.Invalid, "request body: empty; a JSON object is required")
	}
	return decodeStrict(data, v, prefix)
}

// decodeStrict decodes exactly one JSON value from data into v.
func decodeStrict(data []byte, v any, prefix string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, prefix)
	}
	// A second value, or garbage, after the object is refused rather than
	// silently ignored: it usually means two requests were concatenated.
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return errs.E(errs.Invalid, "request body: unexpected data after the JSON value at offset %d", dec.InputOffset())
	}
	return nil
}

// jsonError turns an encoding/json error into an Invalid error that says
// where the body is wrong.
func jsonError(err error, prefix string) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return errs.E(errs.Invalid, "request body: malformed JSON at offset %d: %s", syn.Offset, syn.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errs.E(errs.Invalid, "request body: malformed JSON: unexpected end of input")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return errs.E(errs.Invalid, "request body: expected a JSON %s, got %s", goTypeName(typ), typ.Value)
		}
		return errs.Field(prefix+field, "%s: expected %s, got %s", prefix+field, goTypeName(typ), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for unknown fields; the message
		// is stable: json: unknown field "name".
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return errs.Field(prefix+name, "%s: unknown field", prefix+name)
	}
	return errs.E(errs.Invalid, "request body: %w", err)
}

// goTypeName names the JSON type a Go type expects, for error messages.
func goTypeName(typ *json.UnmarshalTypeError) string {
	if typ.Type == nil {
		return "value"
	}
	switch typ.Type.Kind().String() {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "a number"
	}
	return fmt.Sprintf("a %s", typ.Type)
}

// pathID makes *specID the id in the request's path: an update's body may
// leave its id out or repeat it, but naming another is refused, with field
// naming the body's id field ("spec.id").
func pathID(c *gin.Context, field string, specID *string) error {
	id := c.Param("id")
	if *specID != "" && *specID != id {
		return errs.Field(field, "%s: %q does not match the id in the path %q", field, *specID, id)
	}
	*specID = id
	return nil
}
