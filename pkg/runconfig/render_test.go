package runconfig

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
)

func roundTripConfigs() map[string]Config {
	tricky := minimalConfig()
	tricky.Experiment.Benchmark = "Name with \"quotes\", \\backslash\\, tab\t and ünïcödé"
	tricky.Tasks.TaskNames = []string{"vuejs__core.d0b513eb.$emit", "a..b"}
	tricky.Env = map[string]string{"_UNDERSCORE": "multi\nline = \"value\"\r\n\ttabbed", "EMPTY": ""}
	tricky.Agents[0].Model = &modelref.Model{
		Type: modelref.Endpoint, Model: "m", APIKeySecret: "K", BaseURL: "http://127.0.0.1:8080/v1?x=1",
		ExtraHeaders: map[string]string{"X-Weird.Header!": "v", "x-plain": "#not a comment"},
	}
	tricky.Execution.TimeoutMultiplier = 0.1 + 0.2 // not exactly representable in short form
	tricky.Execution.MaxRetries = 10

	hosted := minimalConfig()
	hosted.Agents = []Agent{
		{Harness: "terminus-2", Model: &modelref.Model{Type: modelref.Hosted, BaseModel: "Qwen/Qwen3-8B", LoraModelName: "step-400"}},
		{Harness: "terminus-2", Name: "lora", Model: &modelref.Model{Type: modelref.Hosted, BaseModel: "qwen", LoraModelName: "a:b \"c\""}},
		{Harness: "oracle"}, {Harness: "nop"},
	}
	hosted.Verifier.Env = map[string]string{"ONLY_ENV": "1"}

	eighth := 0.125
	threshold := minimalConfig()
	threshold.Execution.PassThreshold = &eighth
	threshold.Execution.TimeoutMultiplier = 100
	threshold.Tasks.Categories = []string{"a"}
	threshold.Execution.MaxTokensPerAttempt = MaxTokensPerAttempt
	threshold.Execution.MaxCostUSDPerAttempt = 0.1 + 0.2

	return map[string]Config{
		"minimal":              minimalConfig(),
		"every optional field": fullConfig(),
		"tricky strings":       tricky,
		"hosted models":        hosted,
		"threshold":            threshold,
	}
}

func TestRenderRoundTrip(t *testing.T) {
	for name, cfg := range roundTripConfigs() {
		t.Run(name, func(t *testing.T) {
			out, err := Render(cfg)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			got, err := Parse(out)
			if err != nil {
				t.Fatalf("Parse(Render(cfg)): %v\n%s", err, out)
			}
			if diff := cmp.Diff(cfg, got); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s\nrendered:\n%s", diff, out)
			}
			again, err := Render(got)
			if err != nil || string(again) != string(out) {
				t.Errorf("Render is not stable: err=%v\nfirst:\n%s\nsecond:\n%s", err, out, again)
			}
		})
	}
}

// TestJSONMarshalRoundTrip checks that Config's JSON encoding is the JSON form ParseJSON reads.
func TestJSONMarshalRoundTrip(t *testing.T) {
	for name, cfg := range roundTripConfigs() {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseJSON(data)
			if err != nil {
				t.Fatalf("ParseJSON(json.Marshal(cfg)): %v\n%s", err, data)
			}
			if diff := cmp.Diff(cfg, got); diff != "" {
				t.Errorf("JSON round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderLayout(t *testing.T) {
	out, err := Render(fullConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := `[experiment]
benchmark = "terminal-bench-2-0"
manifest_version = "2.0"
manifest_digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

[tasks]
task_set = "parity"
task_names = ["git-multibranch", "fix-permissions"]
categories = ["software-engineering"]

[execution]
attempts_per_task = 3
max_concurrent_attempts = 8
timeout_multiplier = 1.5
max_retries = 2
max_tokens_per_attempt = 2000000
max_cost_usd_per_attempt = 2.5
pass_threshold = 0.5
judge_model = "openai/gpt-5.2"
judge_api_key_secret = "JUDGE_KEY"

[env]
LOG_LEVEL = "info"

[secrets]
required = ["GITHUB_TOKEN"]

[verifier]
required = ["VERIFIER_TOKEN"]

[verifier.env]
STRICT = "1"

[[agents]]
name = "codex-high"
harness = "codex"
secrets = ["NPM_TOKEN"]

[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"

[agents.env]
REASONING_EFFORT = "high"

[[agents]]
harness = "cursor-cli"
harness_api_key_secret = "CURSOR_API_KEY"

[agents.model]
type = "endpoint"
model = "local/qwen"
api_key_secret = "ENDPOINT_KEY"
base_url = "https://llm.example.com/v1"

[agents.model.extra_headers]
X-Org = "research"
x-trace = "on"

[[agents]]
harness = "terminus-2"

[agents.model]
type = "hosted"
base_model = "qwen3-8b"
lora_model_name = "ckpt-42"

[[agents]]
harness = "command"
command = "python3 /opt/solve.py --fast"
`
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("Render layout mismatch (-want +got):\n%s", diff)
	}
}

func TestRenderRejectsInvalidConfig(t *testing.T) {
	cfg := minimalConfig()
	cfg.Execution.AttemptsPerTask = 0
	if _, err := Render(cfg); err == nil || !strings.Contains(err.Error(), "execution.attempts_per_task") {
		t.Errorf("Render(invalid) error = %v, want one naming execution.attempts_per_task", err)
	}
}

func TestSecretNames(t *testing.T) {
	cfg := fullConfig()
	want := []string{"CURSOR_API_KEY", "ENDPOINT_KEY", "GITHUB_TOKEN", "JUDGE_KEY", "NPM_TOKEN", "OPENAI_API_KEY", "VERIFIER_TOKEN"}
	if diff := cmp.Diff(want, cfg.SecretNames()); diff != "" {
		t.Errorf("SecretNames mismatch (-want +got):\n%s", diff)
	}
	perAgent := [][]string{
		{"GITHUB_TOKEN", "NPM_TOKEN", "OPENAI_API_KEY"},
		{"CURSOR_API_KEY", "ENDPOINT_KEY", "GITHUB_TOKEN"},
		{"GITHUB_TOKEN"},
		{"GITHUB_TOKEN"},
	}
	for i, want := range perAgent {
		if diff := cmp.Diff(want, cfg.AgentSecretNames(i)); diff != "" {
			t.Errorf("AgentSecretNames(%d) mismatch (-want +got):\n%s", i, diff)
		}
	}
	if got := minimalConfig().SecretNames(); got != nil {
		t.Errorf("SecretNames of a config without secrets = %v, want nil", got)
	}
}

func TestModelLabel(t *testing.T) {
	tests := []struct {
		agent Agent
		want  string
	}{
		{Agent{Harness: "oracle"}, ""},
		{Agent{Model: &modelref.Model{Type: modelref.Provider, Model: "openai/gpt-5.2"}}, "openai/gpt-5.2"},
		{Agent{Model: &modelref.Model{Type: modelref.Hosted, BaseModel: "qwen", LoraModelName: "ckpt"}}, "qwen:ckpt"},
		{Agent{Model: &modelref.Model{Type: modelref.Hosted, BaseModel: "qwen"}}, "qwen"},
	}
	for _, tt := range tests {
		if got := tt.agent.ModelLabel(); got != tt.want {
			t.Errorf("ModelLabel(%+v) = %q, want %q", tt.agent, got, tt.want)
		}
	}
}
