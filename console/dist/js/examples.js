// Example run configs the submit page starts from.

/** EXAMPLES are the configs of the "Load example" menu; the first prefills the editor. */
export const EXAMPLES = [
  {
    title: 'Demo: oracle, nop and a command agent',
    description: 'Runs offline on gauntlet local; three attempts per task.',
    toml: `# Three agents on every task of the example benchmark, three attempts each:
# oracle runs each task's reference solution, nop does nothing, and the
# command agent (examples/agents/heuristic-agent.sh, mounted at /agent)
# solves some tasks only some of the time. These three are gauntlet's own
# harnesses and run without a model, so they have no [agents.model]; every
# other harness needs one.

[experiment]
benchmark = "demo-bench"

[tasks]
# task_set = "parity"          # a named task set wins over the lines below
# task_names = ["csv-summary"]
# categories = ["data"]

[execution]
attempts_per_task = 3
max_concurrent_attempts = 4
timeout_multiplier = 1.0
max_retries = 1                 # retries of infrastructure errors only

[env]
LOG_LEVEL = "info"

[[agents]]
harness = "oracle"

[[agents]]
harness = "nop"

[[agents]]
name = "heuristic"
harness = "command"
command = "/agent/heuristic-agent.sh"
`,
  },
  {
    title: 'Provider models on the parity set',
    description: 'Coding agents with API keys from secret records.',
    toml: `# Coding agents with provider models on the parity task set.
# Each api_key_secret names a secret record (set it on the Secrets page);
# the config never holds a key itself.

[experiment]
benchmark = "demo-bench"

[tasks]
task_set = "parity"

[execution]
attempts_per_task = 5
max_concurrent_attempts = 8
timeout_multiplier = 2.0
max_retries = 2

[[agents]]
harness = "codex"
[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"

[[agents]]
harness = "claude-code"
[agents.model]
type = "provider"
model = "anthropic/claude-sonnet-4-5"
api_key_secret = "ANTHROPIC_API_KEY"
`,
  },
  {
    title: 'Your own endpoint',
    description: 'An OpenAI-compatible endpoint with extra headers.',
    toml: `[experiment]
benchmark = "demo-bench"

[tasks]
task_set = "smoke"

[execution]
attempts_per_task = 1
max_concurrent_attempts = 4

[[agents]]
name = "gateway"
harness = "terminus-2"
[agents.model]
type = "endpoint"
model = "qwen3-coder-480b"
base_url = "https://llm-gateway.example.com/v1"
api_key_secret = "LLM_GATEWAY_KEY"
extra_headers = { "X-Team" = "evals" }   # never Authorization: that comes from the secret
`,
  },
  {
    title: 'A model the platform hosts',
    description: 'A LoRA adapter served at the operator\'s endpoint; no key or URL in the config.',
    toml: `# A hosted model is exactly base_model + lora_model_name: the platform's
# operator serves the adapter at their own endpoint with their own key, so
# the config names neither. A platform that hosts no models refuses it at
# submit (agents[0].model.type); use provider or endpoint there.

[experiment]
benchmark = "demo-bench"

[tasks]
task_set = "smoke"

[[agents]]
harness = "terminus-2"
[agents.model]
type = "hosted"
base_model = "Qwen/Qwen3-8B"
lora_model_name = "my-finetune-step-400"
`,
  },
];

/** exampleFor returns the example's TOML with its benchmark set to benchmark (when given). */
export function exampleFor(example, benchmark) {
  if (!benchmark || !/^[a-z0-9][a-z0-9-]*$/.test(benchmark)) return example.toml;
  return example.toml.replace(/^benchmark = ".*"$/m, `benchmark = "${benchmark}"`);
}
