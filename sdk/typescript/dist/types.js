// The API's resources and request bodies, as docs/API.md and the Go
// package wire define them (JSON field names as sent on the wire).
export {};
