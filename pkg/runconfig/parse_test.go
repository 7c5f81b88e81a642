package runconfig

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
)

// fullTOML uses every key a config may have.
const fullTOML = `
[experiment]
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
env = { STRICT = "1" }

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
extra_headers = { "X-Org" = "research", "x-trace" = "on" }

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

func fullConfig() Config {
	half := 0.5
	return Config{
		Experiment: Experiment{
			Benchmark:       "terminal-bench-2-0",
			ManifestVersion: "2.0",
			ManifestDigest:  "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		},
		Tasks: Tasks{TaskSet: "parity", TaskNames: []string{"git-multibranch", "fix-permissions"}, Categories: []string{"software-engineering"}},
		Execution: Execution{
			AttemptsPerTask: 3, MaxConcurrentAttempts: 8, TimeoutMultiplier: 1.5, MaxRetries: 2,
			MaxTokensPerAttempt: 2_000_000, MaxCostUSDPerAttempt: 2.5,
			PassThreshold: &half, JudgeModel: "openai/gpt-5.2", JudgeAPIKeySecret: "JUDGE_KEY",
		},
		Env:      map[string]string{"LOG_LEVEL": "info"},
		Secrets:  Secrets{Required: []string{"GITHUB_TOKEN"}},
		Verifier: Verifier{Required: []string{"VERIFIER_TOKEN"}, Env: map[string]string{"STRICT": "1"}},
		Agents: []Agent{
			{
				Name: "codex-high", Harness: "codex", Secrets: []string{"NPM_TOKEN"},
				Model: &modelref.Model{Type: modelref.Provider, Model: "openai/gpt-5.2", APIKeySecret: "OPENAI_API_KEY"},
				Env:   map[string]string{"REASONING_EFFORT": "high"},
			},
			{
				Harness: "cursor-cli", HarnessAPIKeySecret: "CURSOR_API_KEY",
				Model: &modelref.Model{
					Type: modelref.Endpoint, Model: "local/qwen", APIKeySecret: "ENDPOINT_KEY", BaseURL: "https://llm.example.com/v1",
					ExtraHeaders: map[string]string{"X-Org": "research", "x-trace": "on"},
				},
			},
			{Harness: "terminus-2", Model: &modelref.Model{Type: modelref.Hosted, BaseModel: "qwen3-8b", LoraModelName: "ckpt-42"}},
			{Harness: "command", Command: "python3 /opt/solve.py --fast"},
		},
	}
}

const minimalTOML = `
[experiment]
benchmark = "example"

[[agents]]
harness = "oracle"
`

func minimalConfig() Config {
	return Config{
		Experiment: Experiment{Benchmark: "example"},
		Execution:  Execution{AttemptsPerTask: 1, MaxConcurrentAttempts: 4, TimeoutMultiplier: 1.0, MaxRetries: 0},
		Agents:     []Agent{{Harness: "oracle"}},
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want Config
	}{
		{"every key", fullTOML, fullConfig()},
		{"defaults", minimalTOML, minimalConfig()},
		{"integer for a float", minimalTOML + "[execution]\ntimeout_multiplier = 2\npass_threshold = 1\nmax_cost_usd_per_attempt = 3\n", func() Config {
			c := minimalConfig()
			one := 1.0
			c.Execution.TimeoutMultiplier, c.Execution.PassThreshold, c.Execution.MaxCostUSDPerAttempt = 2, &one, 3
			return c
		}()},
		{"budgets at their bounds", minimalTOML + "[execution]\nmax_tokens_per_attempt = 1\nmax_cost_usd_per_attempt = 1000000\n", func() Config {
			c := minimalConfig()
			c.Execution.MaxTokensPerAttempt, c.Execution.MaxCostUSDPerAttempt = 1, 1_000_000
			return c
		}()},
		{"inline agents array", "agents = [{harness = \"nop\"}]\n[experiment]\nbenchmark = \"b\"\n", func() Config {
			c := minimalConfig()
			c.Experiment.Benchmark, c.Agents = "b", []Agent{{Harness: "nop"}}
			return c
		}()},
		{"hosted adapter", strings.Replace(minimalTOML, "oracle", "terminus-2", 1) + "[agents.model]\ntype = \"hosted\"\nbase_model = \"Qwen/Qwen3-8B\"\nlora_model_name = \"step-400\"\n", func() Config {
			c := minimalConfig()
			c.Agents[0].Harness = "terminus-2"
			c.Agents[0].Model = &modelref.Model{Type: modelref.Hosted, BaseModel: "Qwen/Qwen3-8B", LoraModelName: "step-400"}
			return c
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.toml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// wantErr is an expected fielderr.Error: the exact field and a part of the message.
type wantErr struct{ field, msg string }

func checkErrors(t *testing.T, err error, want []wantErr) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v, want *ValidationError", err)
	}
	var got []wantErr
	for _, fe := range ve.Errors {
		got = append(got, wantErr{fe.Field, fe.Message})
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), formatErrs(got))
	}
	for i := range want {
		if got[i].field != want[i].field || !strings.Contains(got[i].msg, want[i].msg) {
			t.Errorf("error %d = %s: %q, want %s: …%q…", i, got[i].field, got[i].msg, want[i].field, want[i].msg)
		}
	}
}

func formatErrs(errs []wantErr) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s: %s\n", e.field, e.msg)
	}
	return b.String()
}

const head = "[experiment]\nbenchmark = \"b\"\n"

// agent is a valid [[agents]] table to append extra keys to.
const agent = "[[agents]]\nharness = \"oracle\"\n"

type errorCase struct {
	name string
	toml string
	want []wantErr
	// tomlOnly marks cases whose JSON form (via a generic conversion) differs:
	// a TOML float like 2.0 becomes the JSON integer 2.
	tomlOnly bool
}

func errorCases() []errorCase {
	many := func(n int, f func(i int) string) string {
		var parts []string
		for i := range n {
			parts = append(parts, f(i))
		}
		return strings.Join(parts, ", ")
	}
	var envLines strings.Builder
	for i := range 65 {
		fmt.Fprintf(&envLines, "V%d = \"x\"\n", i)
	}
	return []errorCase{
		{"unknown top-level key", "extra = 1\n" + head + agent, []wantErr{{"extra", "unknown key; the top level allows experiment, tasks, execution, env, secrets, verifier, agents"}}, false},
		{"unknown execution key", head + agent + "[execution]\nmax_retry = 1\n", []wantErr{{"execution.max_retry", "unknown key; [execution] allows attempts_per_task,"}}, false},
		{"unknown agent key", head + agent + "temperature = 0.2\n", []wantErr{{"agents[0].temperature", "unknown key; [[agents]] allows name, harness"}}, false},
		{"unknown model key", head + agent + "[agents.model]\ntype = \"provider\"\nmodel = \"m\"\napi_key_secret = \"K\"\nseed = 1\n", []wantErr{{"agents[0].model.seed", "unknown key; [agents.model] allows type,"}}, false},
		{"missing experiment", agent, []wantErr{{"experiment", "is required"}}, false},
		{"missing benchmark", "[experiment]\n" + agent, []wantErr{{"experiment.benchmark", "is required"}}, false},
		{"empty benchmark", "[experiment]\nbenchmark = \" \"\n" + agent, []wantErr{{"experiment.benchmark", "must not be empty"}}, false},
		{"wrong type string", "[experiment]\nbenchmark = 3\n" + agent, []wantErr{{"experiment.benchmark", "must be a string, got integer"}}, false},
		{"wrong type table", "experiment = \"b\"\n" + agent, []wantErr{{"experiment", "must be a table, got string"}}, false},
		{"bad digest", head + "manifest_digest = \"md5:00\"\n" + agent, []wantErr{{"experiment.manifest_digest", "must be \"sha256:\" followed by 64"}}, false},
		{"no agents", head, []wantErr{{"agents", "is required: 1 to 8 [[agents]] tables"}}, false},
		{"empty agents", "agents = []\n" + head, []wantErr{{"agents", "must have 1 to 8 agents, got 0"}}, false},
		{"nine agents", head + strings.Repeat(agent, 8) + "[[agents]]\nharness = \"nop\"\n", []wantErr{
			{"agents", "must have 1 to 8 agents, got 9"},
			{"agents[1]", "has the same harness, model and name as agents[0]"},
			{"agents[2]", "agents[0]"}, {"agents[3]", "agents[0]"}, {"agents[4]", "agents[0]"},
			{"agents[5]", "agents[0]"}, {"agents[6]", "agents[0]"}, {"agents[7]", "agents[0]"},
		}, false},
		{"nine distinct agents", head + strings.ReplaceAll(many(9, func(i int) string { return fmt.Sprintf("[[agents]]\nname = \"a%d\"\n", i) }), ", ", ""), []wantErr{
			{"agents", "must have 1 to 8 agents, got 9"},
		}, false},
		{"agents not a list", "agents = \"codex\"\n" + head, []wantErr{{"agents", "must be an array of tables ([[agents]]), got string"}}, false},
		{"agent not a table", "agents = [\"codex\"]\n" + head, []wantErr{{"agents[0]", "must be a table, got string"}}, false},
		{"duplicate agents", head + agent + agent, []wantErr{{"agents[1]", "has the same harness, model and name as agents[0]; give one of them a distinct name"}}, false},
		{"bad agent name", head + agent + "name = \"has space\"\n", []wantErr{{"agents[0].name", "must be letters, digits"}}, false},
		{"bad harness", head + "[[agents]]\nharness = \"Codex CLI\"\n", []wantErr{{"agents[0].harness", "is not a harness name"}}, false},
		{"command without command harness", head + agent + "command = \"ls\"\n", []wantErr{{"agents[0].command", "is only allowed with harness = \"command\""}}, false},
		{"command harness without command", head + "[[agents]]\nharness = \"command\"\n", []wantErr{{"agents[0].command", "is required for harness = \"command\""}}, false},
		{"missing model type", head + agent + "[agents.model]\nmodel = \"m\"\n", []wantErr{{"agents[0].model.type", "is required: provider, endpoint or hosted"}}, false},
		{"bad model type", head + agent + "[agents.model]\ntype = \"local\"\nmodel = \"m\"\n", []wantErr{{"agents[0].model.type", "\"local\" must be one of provider, endpoint, hosted"}}, false},
		{"provider without key", head + agent + "[agents.model]\ntype = \"provider\"\nmodel = \"m\"\n", []wantErr{{"agents[0].model.api_key_secret", "is required for type = \"provider\""}}, false},
		{"provider with base_url", head + agent + "[agents.model]\ntype = \"provider\"\nmodel = \"m\"\napi_key_secret = \"K\"\nbase_url = \"https://x\"\n", []wantErr{{"agents[0].model.base_url", "is not allowed for type = \"provider\""}}, false},
		{"endpoint without base_url", head + agent + "[agents.model]\ntype = \"endpoint\"\nmodel = \"m\"\napi_key_secret = \"K\"\n", []wantErr{{"agents[0].model.base_url", "is required for type = \"endpoint\""}}, false},
		{"endpoint bad base_url", head + agent + "[agents.model]\ntype = \"endpoint\"\nmodel = \"m\"\napi_key_secret = \"K\"\nbase_url = \"ftp://x\"\n", []wantErr{{"agents[0].model.base_url", "must be an absolute http or https URL"}}, false},
		{"endpoint base_url with credentials", head + agent + "[agents.model]\ntype = \"endpoint\"\nmodel = \"m\"\napi_key_secret = \"K\"\nbase_url = \"https://u:p@x\"\n", []wantErr{{"agents[0].model.base_url", "must not contain credentials"}}, false},
		{"authorization header", head + agent + "[agents.model]\ntype = \"endpoint\"\nmodel = \"m\"\napi_key_secret = \"K\"\nbase_url = \"https://x\"\nextra_headers = { AUTHORIZATION = \"Bearer x\" }\n", []wantErr{{"agents[0].model.extra_headers.AUTHORIZATION", "Authorization is not allowed in extra_headers"}}, false},
		{"bad header name", head + agent + "[agents.model]\ntype = \"endpoint\"\nmodel = \"m\"\napi_key_secret = \"K\"\nbase_url = \"https://x\"\nextra_headers = { \"a b\" = \"x\" }\n", []wantErr{{"agents[0].model.extra_headers[\"a b\"]", "is not a valid HTTP header name"}}, false},
		// Osmosis's hosted model: exactly base_model + lora_model_name.
		{"hosted without its fields", head + agent + "[agents.model]\ntype = \"hosted\"\n", []wantErr{
			{"agents[0].model.base_model", "is required for type = \"hosted\": the base model the adapter was trained from"},
			{"agents[0].model.lora_model_name", "is required for type = \"hosted\": the name of the LoRA adapter"},
		}, false},
		{"hosted with a model id", head + agent + "[agents.model]\ntype = \"hosted\"\nmodel = \"a\"\nbase_model = \"b\"\nlora_model_name = \"c\"\n", []wantErr{
			{"agents[0].model.model", "is not allowed for type = \"hosted\" (it takes type, base_model, lora_model_name)"},
		}, false},
		{"hosted base model alone", head + agent + "[agents.model]\ntype = \"hosted\"\nbase_model = \"b\"\n", []wantErr{
			{"agents[0].model.lora_model_name", "is required for type = \"hosted\""},
		}, false},
		{"hosted adapter alone", head + agent + "[agents.model]\ntype = \"hosted\"\nlora_model_name = \"c\"\n", []wantErr{
			{"agents[0].model.base_model", "is required for type = \"hosted\""},
		}, false},
		{"hosted with a key", head + agent + "[agents.model]\ntype = \"hosted\"\nbase_model = \"b\"\nlora_model_name = \"c\"\napi_key_secret = \"HOSTED_KEY\"\n", []wantErr{
			{"agents[0].model.api_key_secret", "is not allowed for type = \"hosted\" (it takes type, base_model, lora_model_name)"},
		}, false},
		{"hosted with an endpoint", head + agent + "[agents.model]\ntype = \"hosted\"\nbase_model = \"b\"\nlora_model_name = \"c\"\nbase_url = \"https://x/v1\"\nextra_headers = { X = \"1\" }\n", []wantErr{
			{"agents[0].model.base_url", "is not allowed for type = \"hosted\""},
			{"agents[0].model.extra_headers", "is not allowed for type = \"hosted\""},
		}, false},
		{"endpoint with hosted fields", head + agent + "[agents.model]\ntype = \"endpoint\"\nmodel = \"m\"\napi_key_secret = \"K\"\nbase_url = \"https://x\"\nlora_model_name = \"c\"\n", []wantErr{
			{"agents[0].model.lora_model_name", "is not allowed for type = \"endpoint\" (it takes type, model, api_key_secret, base_url, extra_headers)"},
		}, false},
		{"hosted model on a harness that calls no model", head + agent + "[agents.model]\ntype = \"hosted\"\nbase_model = \"b\"\nlora_model_name = \"c\"\n", []wantErr{
			{"agents[0].model.type", "\"hosted\" is not allowed for harness \"oracle\": a hosted model is served only through the platform's model gateway"},
		}, false},
		// Every agent has a model, as in Osmosis, except gauntlet's own
		// model-free harnesses (oracle, nop, command).
		{"harness that needs a model without one", head + "[[agents]]\nharness = \"codex\"\n", []wantErr{
			{"agents[0].model", "is required for harness \"codex\": an [agents.model] table with type = provider, endpoint or hosted (only command, nop, oracle run without a model)"},
		}, false},
		{"secret value instead of name", head + agent + "[agents.model]\ntype = \"provider\"\nmodel = \"m\"\napi_key_secret = \"sk-live-abc123\"\n", []wantErr{{"agents[0].model.api_key_secret", "must be a secret record NAME matching ^[A-Z][A-Z0-9_]*$"}}, false},
		// Osmosis's secret-name shape: no leading '_'.
		{"secret name with a leading underscore", head + agent + "[agents.model]\ntype = \"provider\"\nmodel = \"m\"\napi_key_secret = \"_KEY\"\n", []wantErr{{"agents[0].model.api_key_secret", "must be a secret record NAME matching ^[A-Z][A-Z0-9_]*$"}}, false},
		// Names the runner reserves, one per prefix and per place a name goes.
		{"reserved gauntlet secret", head + agent + "secrets = [\"GAUNTLET_TOKEN\"]\n", []wantErr{{"agents[0].secrets[0]", "names a reserved secret: names starting with GAUNTLET_"}}, false},
		{"reserved osmosis secret", head + agent + "[secrets]\nrequired = [\"_OSMOSIS_KEY\"]\n", []wantErr{{"secrets.required[0]", "must be a secret record NAME matching"}}, false},
		{"reserved daytona secret", head + agent + "[verifier]\nrequired = [\"DAYTONA_API_KEY\"]\n", []wantErr{{"verifier.required[0]", "names a reserved secret: names starting with DAYTONA_"}}, false},
		{"reserved skypilot judge secret", head + "[execution]\njudge_api_key_secret = \"SKYPILOT_KEY\"\n" + agent, []wantErr{{"execution.judge_api_key_secret", "names a reserved secret: names starting with SKYPILOT_"}}, false},
		{"reserved env var", head + "[env]\nGAUNTLET_MODEL = \"x\"\n" + agent, []wantErr{{"env.GAUNTLET_MODEL", "is reserved: env vars starting with GAUNTLET_"}}, false},
		{"reserved osmosis env var", head + agent + "[agents.env]\n_OSMOSIS_RUN = \"x\"\n", []wantErr{{"agents[0].env._OSMOSIS_RUN", "is reserved: env vars starting with _OSMOSIS_"}}, false},
		{"reserved verifier env var", head + agent + "[verifier]\nenv = { DAYTONA_TARGET = \"eu\" }\n", []wantErr{{"verifier.env.DAYTONA_TARGET", "is reserved"}}, false},
		{"all reserved names at once", head + "[env]\nSKYPILOT_X = \"1\"\n" + agent + "secrets = [\"GAUNTLET_A\", \"_B\"]\n", []wantErr{
			{"env.SKYPILOT_X", "is reserved"},
			{"agents[0].secrets[0]", "names a reserved secret"},
			{"agents[0].secrets[1]", "must be a secret record NAME"},
		}, false},
		{"zero attempts", head + agent + "[execution]\nattempts_per_task = 0\n", []wantErr{{"execution.attempts_per_task", "must be an integer from 1 to 100, got 0"}}, false},
		{"float attempts", head + agent + "[execution]\nattempts_per_task = 2.0\n", []wantErr{{"execution.attempts_per_task", "must be an integer, got float"}}, true},
		{"zero concurrency", head + agent + "[execution]\nmax_concurrent_attempts = 0\n", []wantErr{{"execution.max_concurrent_attempts", "must be an integer from 1 to 1024, got 0"}}, false},
		{"negative retries", head + agent + "[execution]\nmax_retries = -1\n", []wantErr{{"execution.max_retries", "must be an integer from 0 to 10, got -1"}}, false},
		{"zero multiplier", head + agent + "[execution]\ntimeout_multiplier = 0\n", []wantErr{{"execution.timeout_multiplier", "must be greater than 0 and at most 100, got 0"}}, false},
		{"negative multiplier", head + agent + "[execution]\ntimeout_multiplier = -1.5\n", []wantErr{{"execution.timeout_multiplier", "must be greater than 0"}}, false},
		{"infinite multiplier", head + agent + "[execution]\ntimeout_multiplier = inf\n", []wantErr{{"execution.timeout_multiplier", "must be a finite number"}}, true},
		{"threshold above one", head + agent + "[execution]\npass_threshold = 1.5\n", []wantErr{{"execution.pass_threshold", "must be greater than 0 and at most 1, got 1.5"}}, false},
		{"zero token budget", head + agent + "[execution]\nmax_tokens_per_attempt = 0\n", []wantErr{{"execution.max_tokens_per_attempt", "must be an integer from 1 to 1000000000000, got 0"}}, false},
		{"negative token budget", head + agent + "[execution]\nmax_tokens_per_attempt = -5\n", []wantErr{{"execution.max_tokens_per_attempt", "must be an integer from 1 to 1000000000000, got -5"}}, false},
		{"huge token budget", head + agent + "[execution]\nmax_tokens_per_attempt = 1000000000001\n", []wantErr{{"execution.max_tokens_per_attempt", "must be an integer from 1 to 1000000000000, got 1000000000001"}}, false},
		{"float token budget", head + agent + "[execution]\nmax_tokens_per_attempt = 1.5e6\n", []wantErr{{"execution.max_tokens_per_attempt", "must be an integer, got float"}}, true},
		{"string token budget", head + agent + "[execution]\nmax_tokens_per_attempt = \"1M\"\n", []wantErr{{"execution.max_tokens_per_attempt", "must be an integer, got string"}}, false},
		{"zero cost budget", head + agent + "[execution]\nmax_cost_usd_per_attempt = 0\n", []wantErr{{"execution.max_cost_usd_per_attempt", "must be a number of US dollars greater than 0 and at most 1e+06, got 0"}}, false},
		{"negative cost budget", head + agent + "[execution]\nmax_cost_usd_per_attempt = -0.5\n", []wantErr{{"execution.max_cost_usd_per_attempt", "greater than 0 and at most 1e+06, got -0.5"}}, false},
		{"huge cost budget", head + agent + "[execution]\nmax_cost_usd_per_attempt = 2e6\n", []wantErr{{"execution.max_cost_usd_per_attempt", "at most 1e+06, got 2e+06"}}, false},
		{"infinite cost budget", head + agent + "[execution]\nmax_cost_usd_per_attempt = inf\n", []wantErr{{"execution.max_cost_usd_per_attempt", "must be a finite number"}}, true},
		{"string cost budget", head + agent + "[execution]\nmax_cost_usd_per_attempt = \"$5\"\n", []wantErr{{"execution.max_cost_usd_per_attempt", "must be a number, got string"}}, false},
		{"bad env name", head + agent + "[env]\nlog_level = \"x\"\n", []wantErr{{"env.log_level", "env var names must match ^[A-Z_][A-Z0-9_]*$"}}, false},
		{"bad agent env name", head + agent + "[agents.env]\n\"1BAD\" = \"x\"\n", []wantErr{{"agents[0].env.1BAD", "env var names must match"}}, false},
		{"env value not a string", head + agent + "[env]\nN = 1\n", []wantErr{{"env.N", "must be a string, got integer"}}, false},
		{"too many env entries", head + agent + "[env]\n" + envLines.String(), []wantErr{{"env", "must have at most 64 entries, got 65"}}, false},
		{"too many secrets", head + agent + "[secrets]\nrequired = [" + many(17, func(i int) string { return fmt.Sprintf("\"S%d\"", i) }) + "]\n", []wantErr{{"secrets.required", "must list at most 16 names, got 17"}}, false},
		{"too many verifier secrets", head + agent + "[verifier]\nrequired = [" + many(17, func(i int) string { return fmt.Sprintf("\"S%d\"", i) }) + "]\n", []wantErr{{"verifier.required", "must list at most 16 names, got 17"}}, false},
		{"bad secret name", head + agent + "[secrets]\nrequired = [\"OK\", \"not-ok\"]\n", []wantErr{{"secrets.required[1]", "must be a secret record NAME"}}, false},
		{"repeated secret", head + agent + "[secrets]\nrequired = [\"A\", \"A\"]\n", []wantErr{{"secrets.required[1]", "repeats secrets.required[0]"}}, false},
		{"empty list", head + agent + "[tasks]\ntask_names = []\n", []wantErr{{"tasks.task_names", "must not be empty; omit the key instead"}}, false},
		{"task name with a path", head + agent + "[tasks]\ntask_names = [\"../../x\"]\n", []wantErr{{"tasks.task_names[0]", `"../../x" is not a task name`}}, false},
		{"category with a path", head + agent + "[tasks]\ncategories = [\"a/b\"]\n", []wantErr{{"tasks.categories[0]", `"a/b" is not a category`}}, false},
		{"bad task set name", head + agent + "[tasks]\ntask_set = \"Parity Set\"\n", []wantErr{{"tasks.task_set", "is not a task set name"}}, false},
		{"secret collides with global env", head + agent + "[env]\nOPENAI_API_KEY = \"x\"\n[agents.model]\ntype = \"provider\"\nmodel = \"m\"\napi_key_secret = \"OPENAI_API_KEY\"\n",
			[]wantErr{{"env.OPENAI_API_KEY", "is also a secret name given to agents[0] (agents[0].model.api_key_secret)"}}, false},
		{"secret collides with agent env", head + agent + "secrets = [\"TOKEN\"]\n[agents.env]\nTOKEN = \"x\"\n",
			[]wantErr{{"agents[0].env.TOKEN", "is also a secret name given to this agent (agents[0].secrets[0])"}}, false},
		{"judge secret collides with env", head + agent + "[execution]\njudge_api_key_secret = \"J\"\n[env]\nJ = \"x\"\n",
			[]wantErr{{"env.J", "(execution.judge_api_key_secret)"}}, false},
		{"verifier secret collides with verifier env", head + agent + "[verifier]\nrequired = [\"V\"]\nenv = { V = \"x\" }\n",
			[]wantErr{{"verifier.env.V", "V is also listed in verifier.required[0]"}}, false},
		{"string too long", "[experiment]\nbenchmark = \"" + strings.Repeat("b", 1025) + "\"\n" + agent, []wantErr{{"experiment.benchmark", "must be at most 1024 bytes, got 1025"}}, false},
		{"config too large", head + agent + "# " + strings.Repeat("x", MaxConfigBytes) + "\n", []wantErr{{"", "at most 65536 are allowed"}}, true},
		{"syntax error", "[experiment\nbenchmark = \"b\"\n", []wantErr{{"", "invalid TOML at line"}}, true},
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range errorCases() {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.toml))
			checkErrors(t, err, tt.want)
		})
	}
}

func TestParseManyErrorsAtOnce(t *testing.T) {
	const bad = `
[experiment]
benchmark = ""
colour = "blue"

[tasks]
task_names = ["a", "a"]

[execution]
attempts_per_task = 0
max_concurrent_attempts = -2
timeout_multiplier = 0
max_retries = -1
max_tokens_per_attempt = 0
max_cost_usd_per_attempt = -1
pass_threshold = 0

[env]
lower = "x"

[[agents]]
harness = "codex"
[agents.model]
type = "endpoint"
model = "m"
api_key_secret = "KEY"
base_url = "not a url"
extra_headers = { Authorization = "Bearer secret-value" }

[[agents]]
harness = "codex"
[agents.model]
type = "warp"
`
	_, err := Parse([]byte(bad))
	checkErrors(t, err, []wantErr{
		{"experiment.colour", "unknown key"},
		{"experiment.benchmark", "must not be empty"},
		{"tasks.task_names[1]", "repeats tasks.task_names[0]"},
		{"execution.attempts_per_task", "got 0"},
		{"execution.max_concurrent_attempts", "got -2"},
		{"execution.timeout_multiplier", "got 0"},
		{"execution.max_retries", "got -1"},
		{"execution.max_tokens_per_attempt", "got 0"},
		{"execution.max_cost_usd_per_attempt", "got -1"},
		{"execution.pass_threshold", "got 0"},
		{"env.lower", "env var names must match"},
		{"agents[0].model.base_url", "must be an absolute http or https URL"},
		{"agents[0].model.extra_headers.Authorization", "Authorization is not allowed"},
		{"agents[1].model.type", `"warp" must be one of provider, endpoint, hosted`},
	})
	if strings.Contains(err.Error(), "secret-value") || strings.Contains(err.Error(), "not a url") {
		t.Errorf("error echoes a header value or URL: %v", err)
	}
}

func TestParseErrorNeverEchoesSecretValues(t *testing.T) {
	const value = "sk-live-ABCDEF123456"
	inputs := []string{
		head + agent + "[agents.model]\ntype = \"provider\"\nmodel = \"m\"\napi_key_secret = \"" + value + "\"\n",
		head + agent + "[agents.model]\ntype = \"provider\"\nmodel = \"m\"\napi_key_secret = " + value + "\n",
		head + agent + "[execution]\njudge_api_key_secret = \"" + value + "\"\n",
		head + agent + "[secrets]\nrequired = [\"" + value + "\"]\n",
		head + agent + "[agents.model]\ntype = \"endpoint\"\nmodel = \"m\"\napi_key_secret = \"K\"\nbase_url = \"https://x?key=" + value + "&\"\nextra_headers = { \"X-Key\" = 5, Authorization = \"" + value + "\" }\n",
	}
	for _, in := range inputs {
		_, err := Parse([]byte(in))
		if err == nil {
			t.Errorf("Parse(%q) succeeded", in)
			continue
		}
		if strings.Contains(err.Error(), "ABCDEF123456") {
			t.Errorf("Parse error echoes the secret value: %v", err)
		}
	}
}
