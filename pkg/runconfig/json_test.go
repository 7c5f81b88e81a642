package runconfig

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
)

// fullJSON is fullTOML written by hand as JSON.
const fullJSON = `{
  "experiment": {
    "benchmark": "terminal-bench-2-0",
    "manifest_version": "2.0",
    "manifest_digest": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  },
  "tasks": {"task_set": "parity", "task_names": ["git-multibranch", "fix-permissions"], "categories": ["software-engineering"]},
  "execution": {
    "attempts_per_task": 3, "max_concurrent_attempts": 8, "timeout_multiplier": 1.5, "max_retries": 2,
    "max_tokens_per_attempt": 2000000, "max_cost_usd_per_attempt": 2.5,
    "pass_threshold": 0.5, "judge_model": "openai/gpt-5.2", "judge_api_key_secret": "JUDGE_KEY"
  },
  "env": {"LOG_LEVEL": "info"},
  "secrets": {"required": ["GITHUB_TOKEN"]},
  "verifier": {"required": ["VERIFIER_TOKEN"], "env": {"STRICT": "1"}},
  "agents": [
    {"name": "codex-high", "harness": "codex", "secrets": ["NPM_TOKEN"],
     "model": {"type": "provider", "model": "openai/gpt-5.2", "api_key_secret": "OPENAI_API_KEY"},
     "env": {"REASONING_EFFORT": "high"}},
    {"harness": "cursor-cli", "harness_api_key_secret": "CURSOR_API_KEY",
     "model": {"type": "endpoint", "model": "local/qwen", "api_key_secret": "ENDPOINT_KEY",
               "base_url": "https://llm.example.com/v1", "extra_headers": {"X-Org": "research", "x-trace": "on"}}},
    {"harness": "terminus-2", "model": {"type": "hosted", "base_model": "qwen3-8b", "lora_model_name": "ckpt-42"}},
    {"harness": "command", "command": "python3 /opt/solve.py --fast", "name": null}
  ]
}`

func TestParseJSONMatchesTOML(t *testing.T) {
	fromTOML, err := Parse([]byte(fullTOML))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	fromJSON, err := ParseJSON([]byte(fullJSON))
	if err != nil {
		t.Fatalf("ParseJSON: %v", err)
	}
	if diff := cmp.Diff(fromTOML, fromJSON); diff != "" {
		t.Errorf("JSON and TOML forms differ (-toml +json):\n%s", diff)
	}
}

// tomlToJSON converts a TOML document to the equivalent JSON document.
func tomlToJSON(t *testing.T, doc string) []byte {
	t.Helper()
	var raw map[string]any
	if _, err := toml.Decode(doc, &raw); err != nil {
		t.Fatalf("decode TOML: %v", err)
	}
	out, err := json.Marshal(raw)
	if err != nil {
		t.Fatalf("encode JSON: %v", err)
	}
	return out
}

// TestParseJSONSameErrors checks that the JSON form of every invalid config
// gets exactly the errors its TOML form gets.
func TestParseJSONSameErrors(t *testing.T) {
	for _, tt := range errorCases() {
		if tt.tomlOnly {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			_, tomlErr := Parse([]byte(tt.toml))
			_, jsonErr := ParseJSON(tomlToJSON(t, tt.toml))
			var a, b *ValidationError
			if !errors.As(tomlErr, &a) || !errors.As(jsonErr, &b) {
				t.Fatalf("errors = %v / %v, want *ValidationError from both", tomlErr, jsonErr)
			}
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("JSON errors differ from TOML errors (-toml +json):\n%s", diff)
			}
		})
	}
}

func TestParseJSONErrors(t *testing.T) {
	agentJSON := `"agents": [{"harness": "oracle"}]`
	tests := []struct {
		name string
		json string
		want []wantErr
	}{
		{"not an object", `["a"]`, []wantErr{{"", "the config must be a JSON object, got array"}}},
		{"syntax", `{"experiment": `, []wantErr{{"", "invalid JSON: unexpected end of input"}}},
		{"bad character", `{"experiment": x}`, []wantErr{{"", "invalid JSON at byte"}}},
		{"trailing data", `{"experiment": {"benchmark": "b"}, ` + agentJSON + `} {}`, []wantErr{{"", "data after the config object"}}},
		{"float for integer", `{"experiment": {"benchmark": "b"}, "execution": {"attempts_per_task": 1.5}, ` + agentJSON + `}`,
			[]wantErr{{"execution.attempts_per_task", "must be an integer, got float"}}},
		{"huge integer", `{"experiment": {"benchmark": "b"}, "execution": {"max_retries": 99999999999999999999}, ` + agentJSON + `}`,
			[]wantErr{{"execution.max_retries", "must be an integer from 0 to 10"}}},
		{"boolean", `{"experiment": {"benchmark": true}, ` + agentJSON + `}`, []wantErr{{"experiment.benchmark", "must be a string, got boolean"}}},
		{"null agents", `{"experiment": {"benchmark": "b"}, "agents": null}`, []wantErr{{"agents", "is required"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseJSON([]byte(tt.json))
			checkErrors(t, err, tt.want)
		})
	}
}
