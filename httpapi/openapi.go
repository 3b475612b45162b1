package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI 3.1 document of every route, body, answer and
// error code this package serves. It is written by hand; the tests check
// it is a valid 3.1 document and validate every answer they get against
// it.
//
//go:embed openapi.json
var openAPI []byte

// serveOpenAPI is GET /v1/openapi.json.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	writeRawJSON(w, http.StatusOK, openAPI)
}
