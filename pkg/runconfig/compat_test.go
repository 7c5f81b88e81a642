package runconfig

import "testing"

// TestParseOsmosisConfigs checks that configs in the Osmosis benchmark form
// (its key set and model variants) are accepted.
func TestParseOsmosisConfigs(t *testing.T) {
	configs := map[string]string{
		"provider with every section": `
[experiment]
benchmark = "terminal-bench-2-1"

[tasks]
task_set = "parity"

[[agents]]
harness = "mini-swe-agent"

[agents.model]
type = "provider"
model = "anthropic/claude-sonnet-4"
api_key_secret = "ANTHROPIC_API_KEY"

[agents.env]
LOG_LEVEL = "debug"

[execution]
attempts_per_task = 3
judge_model = "openai/gpt-5"
judge_api_key_secret = "OPENAI_API_KEY"

[verifier]
required = ["VLM_API_KEY"]

[secrets]
required = ["MY_TOOL_TOKEN"]

[env]
LOG_LEVEL = "info"
`,
		"hosted checkpoint without a secret": `
[experiment]
benchmark = "swebench-verified"
[tasks]
task_names = ["django__django-11099"]
categories = ["django"]
[[agents]]
harness = "terminus-2"
[agents.model]
type = "hosted"
base_model = "Qwen/Qwen3-8B"
lora_model_name = "my-finetune-step-400"
`,
		"endpoint and official scaffold": `
[experiment]
benchmark = "HLE"
[[agents]]
[agents.model]
type = "endpoint"
base_url = "https://inference.example.org/v1"
model = "my-org/model"
api_key_secret = "INFERENCE_KEY"
extra_headers = { "X-Team" = "evals" }
[execution]
max_concurrent_attempts = 16
timeout_multiplier = 2
max_retries = 1
pass_threshold = 1
`,
		"cursor harness key": `
[experiment]
benchmark = "terminal-bench-2-1"
[[agents]]
harness = "cursor-cli"
harness_api_key_secret = "CURSOR_API_KEY"
[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"
`,
	}
	for name, doc := range configs {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(doc)); err != nil {
				t.Errorf("Parse: %v", err)
			}
		})
	}
}

// TestParseModelFreeHarnesses checks gauntlet's documented extension to
// Osmosis's rule that every agent has an [agents.model]: agents of the
// model-free harnesses (oracle, nop, command) may omit it, and the
// entrant's model label is then empty (it ranks as its harness).
func TestParseModelFreeHarnesses(t *testing.T) {
	cfg, err := Parse([]byte(`
[experiment]
benchmark = "terminal-bench-2-1"
[[agents]]
harness = "oracle"
[[agents]]
harness = "nop"
[[agents]]
harness = "command"
command = "python3 solve.py"
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	for i, a := range cfg.Agents {
		if a.Model != nil || a.ModelLabel() != "" {
			t.Errorf("agents[%d] = %+v, want no model", i, a)
		}
	}
}
