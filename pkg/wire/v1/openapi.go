package v1

import _ "embed" // OpenAPI embeds the document

// OpenAPI is the OpenAPI 3.1 document of the API (served at
// /v1/openapi.json): the same contract as the types of this package, which
// the api package's tests check against it.
//
//go:embed openapi.json
var OpenAPI []byte
