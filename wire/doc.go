// Package wire holds the types that cross the wire of Primer's /v1 API:
// the resources it answers with (workspaces, templates, events, runs, ...)
// with their states and event names, and the request and response bodies
// of every route. The server (api/), the Go client (api/client), the
// console, primectl and the OpenAPI document share them, so a type is
// defined once (coder's codersdk is the model).
//
// It imports no store and no server package: primectl links no database
// driver. The resources are also the store's rows, so their fields carry
// `gorm` tags; those are plain strings here, read only by models.
package wire
