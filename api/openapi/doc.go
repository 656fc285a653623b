// Package openapi builds the OpenAPI 3.1 document of Primer's /v1 API
// (served at GET /v1/openapi.json, checked in as docs/openapi.json) from
// the Go types the handlers read and write: package wire's request and
// response bodies, the runtime protocol's file types and eval's suite
// documents, reflected over their json tags (schema.go). The route table
// (routes.go) says, for every /v1 route, what gin serves: its parameters,
// body, every status with its body, whether it needs a key, and its
// streams (SSE, NDJSON, WebSocket). A test in package api holds the table
// to engine.Routes(), so a route cannot be added without describing it.
package openapi
