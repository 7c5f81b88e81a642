// Package runconfig owns the run configuration: the TOML document (or the same
// document as JSON) a user submits to start a run, compatible with the Osmosis
// benchmark config. It parses strictly, reporting every problem at once with
// its key path; resolves the task selection, harness and judge requirements
// and pass threshold against a benchmark manifest; and renders a config back
// to TOML so that rendering and parsing round-trip.
//
// A config looks like this:
//
//	# artifacts = ["/app/out.json"]    # trial-level artifacts: ≤ 64 absolute paths collected after every agent
//
//	[experiment]
//	benchmark = "terminal-bench-2-0"   # key, exact name, id or registry spec "terminal-bench@2.0"
//	# manifest_version = "2.0"         # pins set by the platform on resolution
//	# manifest_digest = "sha256:…"
//
//	[tasks]                            # omit = every task; task_set wins over the others
//	task_set = "parity"
//	# task_names = ["git-multibranch"] # task_names and categories select their union
//	# categories = ["software-engineering"]
//
//	[execution]
//	attempts_per_task = 1              # 1..100, default 1
//	max_concurrent_attempts = 4        # 1..1024, default 4
//	timeout_multiplier = 1.0           # (0, 100], default 1.0
//	max_retries = 0                    # 0..10, retries of infrastructure errors only
//	# max_tokens_per_attempt = 2000000 # > 0; input + output tokens (cached input included) per attempt
//	# max_cost_usd_per_attempt = 5.0   # > 0; USD per attempt; every agent's model must be priced
//	# pass_threshold = 1.0             # (0, 1]; default: the benchmark's
//	# judge_model = "openai/gpt-5.2"
//	# judge_api_key_secret = "OPENAI_API_KEY"
//
//	[env]                              # literal env vars for every agent; ≤ 64
//	LOG_LEVEL = "info"
//
//	[secrets]
//	required = ["GITHUB_TOKEN"]        # ≤ 16 secret record names given to every agent
//
//	[verifier]                         # registry datasets only: refused on managed benchmarks
//	required = ["JUDGE_TOKEN"]         # ≤ 16 secret record names the verifier reads
//	env = { STRICT = "1" }             # literal env vars for the verifier
//
//	[[agents]]                         # 1..8
//	harness = "codex"                  # optional when the benchmark has a default harness
//	# name = "codex-high"              # tells apart agents with the same harness and model
//	# command = "python3 solve.py"     # only, and required, for harness = "command"
//	# harness_api_key_secret = "CURSOR_API_KEY"
//	# secrets = ["NPM_TOKEN"]          # ≤ 16 more secret record names for this agent
//	[agents.model]                     # required, except for oracle, nop and command
//	type = "provider"                  # provider | endpoint | hosted
//	model = "openai/gpt-5.2"
//	api_key_secret = "OPENAI_API_KEY"  # a secret record NAME, never a value
//	# base_url = "https://llm.example.com/v1"     # endpoint only, required there
//	# extra_headers = { "X-Org" = "research" }    # endpoint only, never Authorization
//	# type = "hosted" takes exactly:
//	# base_model = "Qwen/Qwen3-8B"
//	# lora_model_name = "my-finetune-step-400"
//	[agents.env]
//	REASONING_EFFORT = "high"
//
// Osmosis's rules apply both ways. Secret record names match
// ^[A-Z][A-Z0-9_]*$ (no leading '_'). Names the platform's runner reserves
// are refused as secret names and as env var names ([env], [agents.env],
// [verifier].env): GAUNTLET_* (what gauntlet's runner injects) and
// Osmosis's _OSMOSIS_*, DAYTONA_*, SKYPILOT_*. The judge keys follow the
// benchmark's three cases: a judge with a model choice requires
// judge_api_key_secret (judge_model optional when the benchmark has a
// default); a grader that pins its model (benchmark.Judge.ModelPinned)
// requires the key and refuses judge_model; no judge refuses both.
//
// Every agent has an [agents.model], as in Osmosis, except agents of
// gauntlet's own model-free harnesses (harness.Harness.ModelFree: oracle,
// nop, command), which may omit it. A hosted model is exactly base_model +
// lora_model_name, both required, as in Osmosis's config model: no model,
// api_key_secret, base_url or extra_headers. The platform's operator serves
// it at an endpoint of their own with their own key, which the user never
// sees; a platform whose operator configured none refuses hosted models at
// submit.
package runconfig

import (
	"slices"
	"sort"

	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
)

// Bounds on a config.
const (
	MaxConfigBytes        = 64 << 10 // size of the whole document
	MaxStringBytes        = 1 << 10  // any one string value
	MaxEnvEntries         = 64       // entries of any env or extra_headers table
	MaxAgents             = 8
	MaxSecretNames        = 16 // names in [secrets].required, [verifier].required, an agent's secrets
	MaxAttemptsPerTask    = 100
	MaxConcurrentAttempts = 1024
	MaxRetries            = 10
	MaxTimeoutMultiplier  = 100.0
	// MaxTokensPerAttempt and MaxCostUSDPerAttempt bound the per-attempt
	// budgets; they only keep the values sane (no attempt comes near).
	MaxTokensPerAttempt  = 1_000_000_000_000
	MaxCostUSDPerAttempt = 1_000_000.0
)

// Defaults of [execution].
const (
	DefaultAttemptsPerTask       = 1
	DefaultMaxConcurrentAttempts = 4
	DefaultTimeoutMultiplier     = 1.0
	DefaultMaxRetries            = 0
)

// CommandHarness is the harness that runs the agent's own command; only its
// agents give (and must give) a command.
const CommandHarness = "command"

// Config is a parsed run configuration. Parse fills [execution] defaults; an
// absent table, list or map is nil.
type Config struct {
	Experiment Experiment        `json:"experiment"`
	Tasks      Tasks             `json:"tasks,omitzero"`
	Execution  Execution         `json:"execution"`
	Env        map[string]string `json:"env,omitempty"`
	Secrets    Secrets           `json:"secrets,omitzero"`
	Verifier   Verifier          `json:"verifier,omitzero"`
	Agents     []Agent           `json:"agents"`
	// Artifacts are the trial-level artifacts (Harbor's job-config
	// `artifacts`): absolute paths collected after the agent of every
	// attempt, beside the task's own (artifacts.go).
	Artifacts []string `json:"artifacts,omitempty"`
}

// Experiment names the benchmark and, once resolved, the pinned manifest.
type Experiment struct {
	// Benchmark is the benchmark's key, exact name or id.
	Benchmark string `json:"benchmark"`
	// ManifestVersion and ManifestDigest pin the manifest; a config that
	// carries them only resolves against that manifest.
	ManifestVersion string `json:"manifest_version,omitempty"`
	ManifestDigest  string `json:"manifest_digest,omitempty"`
}

// Tasks selects the tasks to run; all empty means every task. TaskSet wins
// over TaskNames and Categories, which otherwise select their union.
type Tasks struct {
	TaskSet    string   `json:"task_set,omitempty"`
	TaskNames  []string `json:"task_names,omitempty"`
	Categories []string `json:"categories,omitempty"`
}

// Execution holds how the run executes and grades.
type Execution struct {
	AttemptsPerTask       int     `json:"attempts_per_task"`
	MaxConcurrentAttempts int     `json:"max_concurrent_attempts"`
	TimeoutMultiplier     float64 `json:"timeout_multiplier"`
	MaxRetries            int     `json:"max_retries"`
	// MaxTokensPerAttempt is each attempt's token budget: input plus
	// output tokens (cached input and reasoning included) the agent's
	// model gateway lets through; 0 is no budget.
	MaxTokensPerAttempt int64 `json:"max_tokens_per_attempt,omitempty"`
	// MaxCostUSDPerAttempt is each attempt's cost budget in USD, priced
	// from the platform's price table; 0 is no budget.
	MaxCostUSDPerAttempt float64 `json:"max_cost_usd_per_attempt,omitempty"`
	// PassThreshold overrides the benchmark's; nil keeps it.
	PassThreshold     *float64 `json:"pass_threshold,omitempty"`
	JudgeModel        string   `json:"judge_model,omitempty"`
	JudgeAPIKeySecret string   `json:"judge_api_key_secret,omitempty"`
}

// Secrets lists secret record names every agent receives.
type Secrets struct {
	Required []string `json:"required,omitempty"`
}

// Verifier lists what the verifier receives.
type Verifier struct {
	Required []string          `json:"required,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
}

// Agent is one harness + model of a run.
type Agent struct {
	// Name tells apart agents with the same harness and model.
	Name string `json:"name,omitempty"`
	// Harness is "" when the benchmark's default harness should run.
	Harness             string `json:"harness,omitempty"`
	HarnessAPIKeySecret string `json:"harness_api_key_secret,omitempty"`
	// Command is the command line of a CommandHarness agent.
	Command string            `json:"command,omitempty"`
	Model   *modelref.Model   `json:"model,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Secrets []string          `json:"secrets,omitempty"`
}

// ModelLabel is the agent's model Label, or "" when it has no model.
func (a Agent) ModelLabel() string {
	if a.Model == nil {
		return ""
	}
	return a.Model.Label()
}

// AgentSecretNames returns the secret record names agent i's sandbox
// receives as environment variables: its model's api_key_secret, its
// harness_api_key_secret, its secrets and [secrets].required; deduplicated
// and sorted. i must be a valid index into c.Agents.
func (c Config) AgentSecretNames(i int) []string {
	a := c.Agents[i]
	names := slices.Clone(c.Secrets.Required)
	names = append(names, a.Secrets...)
	if a.Model != nil {
		names = append(names, a.Model.APIKeySecret)
	}
	names = append(names, a.HarnessAPIKeySecret)
	return sortedUnique(names)
}

// SecretNames returns every secret record name the run needs: each agent's
// (AgentSecretNames), [verifier].required and judge_api_key_secret;
// deduplicated and sorted.
func (c Config) SecretNames() []string {
	names := slices.Clone(c.Verifier.Required)
	names = append(names, c.Execution.JudgeAPIKeySecret)
	for i := range c.Agents {
		names = append(names, c.AgentSecretNames(i)...)
	}
	return sortedUnique(names)
}

// sortedUnique sorts names and drops duplicates and empty names.
func sortedUnique(names []string) []string {
	names = slices.DeleteFunc(names, func(s string) bool { return s == "" })
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return slices.Compact(names)
}
