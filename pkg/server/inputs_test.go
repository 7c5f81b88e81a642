package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestBadInputsAnswerWhatDocsAPISays: the error codes docs/API.md lists for
// bad input, through the real server.
func TestBadInputsAnswerWhatDocsAPISays(t *testing.T) {
	big := "# " + strings.Repeat("x", runconfig.MaxConfigBytes) + "\n" + oneTaskConfig
	tests := []struct {
		name       string
		rq         request
		wantStatus int
		wantCode   string
		wantMsg    string
	}{
		{"garbage cursor", request{method: "GET", path: "/v1/runs?cursor=not-a-cursor"}, 400, v1.CodeBadRequest, "cursor is not one this API returned"},
		{"run config over the limit", request{method: "POST", path: "/v1/runs", body: []byte(big), contentType: "application/toml"}, 413, v1.CodeTooLarge, "larger than 65536 bytes"},
		{"wrong content type", request{method: "POST", path: "/v1/runs", body: []byte(oneTaskConfig), contentType: "image/png"}, 415, v1.CodeUnsupportedType, "application/toml or application/json"},
		{"JSON body of another type", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":"demo-bench@1.0"}`), contentType: "text/plain"}, 415, v1.CodeUnsupportedType, "application/json"},
		{"duplicate key", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":"demo-bench@1.0","source":"other@1"}`), contentType: "application/json"}, 400, v1.CodeBadRequest, `key "source" appears twice`},
		{"duplicate key in a JSON run config", request{method: "POST", path: "/v1/runs", body: []byte(`{"experiment":{"benchmark":"a","benchmark":"b"},"agents":[{"harness":"oracle"}]}`), contentType: "application/json"}, 400, v1.CodeBadRequest, `key "benchmark" appears twice in experiment`},
		{"registry credential with a scheme", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":"demo-bench@1.0","registry_credentials":[{"registry":"https://ghcr.io","secret":"GHCR_PULL"}]}`), contentType: "application/json"}, 422, v1.CodeValidation, "registry_credentials[0].registry: \"https://ghcr.io\" has a scheme"},
		{"registry credential naming no record", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":"demo-bench@1.0","registry_credentials":[{"registry":"ghcr.io","secret":"NO_SUCH_RECORD"}]}`), contentType: "application/json"}, 422, v1.CodeValidation, "registry_credentials[0].secret: the workspace has no secret record NO_SUCH_RECORD"},
		{"NUL in an env value of a JSON run config", request{method: "POST", path: "/v1/runs", body: []byte(`{"experiment":{"benchmark":"demo-bench"},"env":{"LOG_LEVEL":"in\u0000fo"},"agents":[{"harness":"oracle"}]}`), contentType: "application/json"}, 422, v1.CodeValidation, "env.LOG_LEVEL: contains a NUL character (U+0000)"},
		{"NUL in an agent's command", toml("/v1/runs", "[experiment]\nbenchmark = \"demo-bench\"\n[[agents]]\nharness = \"command\"\ncommand = \"./solve\\u0000\"\n"), 422, v1.CodeValidation, "agents[0].command: contains a NUL character (U+0000)"},
		{"NUL in a secret value", request{method: "PUT", path: "/v1/secrets/NUL_VALUE", body: []byte("abc\x00def")}, 400, v1.CodeBadRequest, "contains a NUL character (U+0000)"},
		{"wrong JSON kind names no Go type", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":7}`), contentType: "application/json"}, 400, v1.CodeBadRequest, "source: want a string, got number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := alice().do(t, tt.rq)
			var e struct{ Code, Message string }
			_ = json.Unmarshal(body, &e)
			if status != tt.wantStatus || e.Code != tt.wantCode || !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("%s %s = %d %s, want %d %s containing %q", tt.rq.method, tt.rq.path, status, body, tt.wantStatus, tt.wantCode, tt.wantMsg)
			}
			for _, goType := range []string{"string", "struct", "map[", "[]"} {
				if strings.Contains(e.Message, "Go ") || strings.Contains(e.Message, "of type "+goType) {
					t.Errorf("message %q names a Go type", e.Message)
				}
			}
		})
	}
}

// TestValidateReportsControlCharacters: the dry run names the field too, so
// a config that would crash every attempt's runner is never reported valid.
func TestValidateReportsControlCharacters(t *testing.T) {
	var report v1.ValidationReport
	alice().call(t, toml("/v1/runs/validate", oneTaskConfig+"[agents.env]\nMODE = \"fast\\u0000\"\n"), 200, &report)
	if report.Valid || len(report.Problems) != 1 || report.Problems[0].Field != "agents[0].env.MODE" ||
		!strings.Contains(report.Problems[0].Message, "NUL character (U+0000)") {
		t.Errorf("validate = %+v, want invalid with one problem at agents[0].env.MODE naming the NUL", report)
	}
}

// TestSecretValueWithNULIsNotStored: the refused value leaves no record.
func TestSecretValueWithNULIsNotStored(t *testing.T) {
	wantError(t, alice(), request{method: "PUT", path: "/v1/secrets/NUL_STORED", body: []byte("a\x00b")}, 400, v1.CodeBadRequest)
	if strings.Contains(aliceSecrets(t), "NUL_STORED") {
		t.Error("a secret value refused for its NUL was stored")
	}
}
