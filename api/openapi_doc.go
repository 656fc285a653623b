package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/api/openapi"
)

// openAPIHandler serves GET /v1/openapi.json: the OpenAPI 3.1 document of
// /v1 (package openapi), built once. It needs no key: the document says
// only what the public API is (the repository holds it as
// docs/openapi.json), and code generators and API browsers fetch it
// before they have one (docs/DECISIONS.md).
func openAPIHandler() gin.HandlerFunc {
	doc := openapi.JSON()
	return func(c *gin.Context) {
		c.Header("Cache-Control", "public, max-age=300")
		c.Data(http.StatusOK, "application/json", doc)
	}
}
