// Package openapitest checks HTTP answers against Primer's OpenAPI
// document: a test wraps its client's transport with Checker, every /v1
// answer it receives is validated against the document's schema for that
// route, status and media type (JSON bodies whole, NDJSON line by line,
// SSE event by event as the test reads them), and Failures lists what did
// not match. A field the document lacks (every wire object is
// additionalProperties: false), a required field missing, a wrong type, a
// status or media type the route does not declare: each is a failure.
//
// The validator (schema.go) covers the JSON Schema the generator emits:
// $ref, type (with null), properties, required, additionalProperties,
// items, anyOf, oneOf, enum, minimum, format date-time and base64 content.
package openapitest
