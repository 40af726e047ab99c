package web

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 description of the JSON API. It is
// written by hand, and TestOpenAPIMatchesRoutes holds it to the routes the
// server really has, both ways.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPI serves the document. It is public: it describes the API's shape,
// which the source code shows anyway, never its data.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(openAPIDocument)
}
