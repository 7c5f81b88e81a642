package api

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestOpenAPIMatchesRoutes checks every registered route against
// openapi.json and every documented operation against the routes.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(v1.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	var documented []string
	for path, item := range doc.Paths {
		for method := range item {
			if method == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	var registered []string
	for _, rt := range (&Handler{}).routes() {
		registered = append(registered, rt.method+" "+strings.ReplaceAll(rt.pattern, "...}", "}"))
	}
	slices.Sort(documented)
	slices.Sort(registered)
	if diff := cmp.Diff(registered, documented); diff != "" {
		t.Errorf("routes (-registered +documented):\n%s", diff)
	}
}

// TestOpenAPIRefsResolve checks that every $ref names a schema that exists
// and every path parameter of a path is declared.
func TestOpenAPIRefsResolve(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(v1.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	for _, m := range regexp.MustCompile(`"\$ref": ?"#/components/schemas/([A-Za-z0-9]+)"`).FindAllSubmatch(v1.OpenAPI, -1) {
		if _, ok := doc.Components.Schemas[string(m[1])]; !ok {
			t.Errorf("$ref to missing schema %s", m[1])
		}
	}
	for path, item := range doc.Paths {
		declared := string(item["parameters"])
		for method, op := range item {
			if method != "parameters" {
				declared += string(op)
			}
		}
		for _, m := range regexp.MustCompile(`\{([a-z]+)\}`).FindAllStringSubmatch(path, -1) {
			if !strings.Contains(declared, `"name": "`+m[1]+`"`) {
				t.Errorf("%s: path parameter %s is not declared", path, m[1])
			}
		}
	}
}
