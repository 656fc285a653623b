package wire

// Items is the body of every list answer: {"items": [...]}.
type Items[T any] struct {
	Items []T `json:"items"`
}

// ErrorEnvelope is the body of every error answer: {"error": {...}}.
type ErrorEnvelope struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody says what went wrong: a stable code (the error kind: not_found,
// invalid, forbidden, ...), a message for people and, for a bad field, the
// field's path in details.field.
type ErrorBody struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Details map[string]string `json:"details"`
}
