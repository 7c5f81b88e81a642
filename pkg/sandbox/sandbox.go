// Package sandbox defines the sandbox port.
//
// It defines the sandbox port: launching the sandbox-runner for
// one slot in an isolated environment, stopping it, listing a run's sandboxes,
// and the completion event emitted when one ends. The local driver runs the
// runner as a child process (bubblewrap isolation); the cloud driver runs an
// ECS Fargate task and learns of completions from EventBridge.
package sandbox

import (
	"context"
	"errors"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// ErrNotFound reports an unknown sandbox id.
var ErrNotFound = errors.New("sandbox: not found")

// ErrUnavailable reports that the driver cannot start sandboxes at all on this
// machine (for example bubblewrap is missing); its message says how to fix it.
var ErrUnavailable = errors.New("sandbox: driver unavailable")

// TaskRef says where the task's files are (task.toml, instruction.md,
// tests/, solution/, environment/).
//
// The pipeline fills the stored references: BundleKey, the blob key of the
// task's .tar.gz bundle, and Dir, a local directory recorded at sync time
// (managed benchmarks kept on disk). Each driver resolves them through its
// blob port into the one location the runner reads — Dir, BundleFile (a
// local .tar.gz) or BundleURL (a presigned GET) — so core code never asks
// which blob adapter is wired (ResolveLocal is the local drivers' rule).
type TaskRef struct {
	Name      string `json:"name"`
	BundleKey string `json:"bundle_key,omitempty"`
	Dir       string `json:"dir,omitempty"`
	// BundleFile and BundleURL are set by the driver.
	BundleFile string `json:"bundle_file,omitempty"`
	BundleURL  string `json:"bundle_url,omitempty"`
}

// Output says where the runner puts what it produced: result.json (Harbor
// TrialResult shape) and the collected /logs tree as artifacts. Locally the
// driver copies Dir into the blob store under Prefix; in the cloud the runner
// uploads to the presigned URLs, so it needs no credentials.
type Output struct {
	Prefix string `json:"prefix"` // blob key prefix, e.g. runs/<run>/slots/<slot>/g<gen>/
	// Expires is when upload URLs a driver hands out must expire: the
	// sandbox's deadline (the watchdog stops it then), so a leaked URL
	// cannot rewrite a result after the slot is over.
	Expires      time.Time `json:"expires,omitzero"`
	ResultURL    string    `json:"result_url,omitempty"`    // presigned PUT for result.json
	ArtifactsURL string    `json:"artifacts_url,omitempty"` // presigned PUT for artifacts.tar.gz
}

// GatewayConfigEnv carries the model gateway's operator TOML itself where
// no file can: to the cloud's functions (submit's model checks) and to
// sandbox tasks (the runner starts each attempt's gateway from it).
const GatewayConfigEnv = "GAUNTLET_MODEL_GATEWAY_CONFIG"

// GatewayKeyEnvPrefix starts the name of every variable a model gateway's
// hosted.api_key_env may name. The runner treats every variable with it as
// a carrier: it takes them out of its environment and scrubs them before
// any phase starts.
const GatewayKeyEnvPrefix = "GAUNTLET_GATEWAY_KEY_"

// SpecEnv is the environment variable that carries a slot spec (JSON) to
// the runner when no spec file is given (the ECS driver's task override).
const SpecEnv = "GAUNTLET_SLOT_SPEC"

// Spec is everything a sandbox needs to run one slot. It is serialized to
// JSON for the runner (a file, or SpecEnv); Secrets never are.
type Spec struct {
	// LaunchID identifies this launch (run, slot, generation); launching the
	// same LaunchID twice adopts the first sandbox instead of starting another.
	LaunchID   string `json:"launch_id"`
	Workspace  string `json:"workspace"`
	RunID      string `json:"run_id"`
	SlotID     string `json:"slot_id"`
	Generation int    `json:"generation"`

	Task    TaskRef `json:"task"`
	Harness string  `json:"harness"`
	// Command is the agent command for harnesses that take one (`command`).
	Command string `json:"command,omitempty"`
	// Model is the agent's model label; ModelType (provider when empty) and
	// the fields after it say where the runner's model gateway forwards
	// its calls, as the run config's [agents.model] does. None is secret:
	// keys travel in Secrets, a hosted model's in the operator's config.
	Model         string            `json:"model,omitempty"`
	ModelType     string            `json:"model_type,omitempty"`
	BaseURL       string            `json:"base_url,omitempty"`
	ExtraHeaders  map[string]string `json:"extra_headers,omitempty"`
	BaseModel     string            `json:"base_model,omitempty"`
	LoraModelName string            `json:"lora_model_name,omitempty"`
	// Env holds the agent's literal environment variables.
	Env map[string]string `json:"env,omitempty"`
	// VerifierEnv holds literal variables for the verifier only.
	VerifierEnv map[string]string `json:"verifier_env,omitempty"`
	// JudgeModel is the LLM judge the verifier reaches through the model
	// gateway ("<provider>/<name>"); "" when the task grades without one.
	JudgeModel string `json:"judge_model,omitempty"`
	// MaxTokens and MaxCostUSD are the attempt's budget for the agent's
	// model use (the run's max_tokens_per_attempt and
	// max_cost_usd_per_attempt): input plus output tokens, and USD, that
	// the agent's model gateway lets through before it refuses further
	// calls; 0 is no budget. The judge's gateway has none.
	MaxTokens  int64   `json:"max_tokens,omitempty"`
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// NetworkInstalls lets a harness with a network install recipe (PyPI,
	// a vendor script) run it as its install step, with public network
	// whatever the task's mode (the operator allowed it: harness.Platform).
	NetworkInstalls bool `json:"network_installs,omitempty"`

	// AgentTimeout and VerifierTimeout already include the run's timeout
	// multiplier; 0 means no limit.
	AgentTimeout    time.Duration `json:"agent_timeout,omitempty"`
	VerifierTimeout time.Duration `json:"verifier_timeout,omitempty"`

	// Image is the task environment's container image (cloud driver).
	Image string `json:"image,omitempty"`
	// VerifierImage is the pinned image of the task's separate verifier
	// ([verifier] environment_mode = "separate"); "" runs the verifier in
	// the task's own environment (shared mode).
	VerifierImage string `json:"verifier_image,omitempty"`
	// Artifacts are the run's trial-level artifacts: absolute paths in
	// the environment collected after the agent, beside the task's.
	Artifacts []string `json:"artifacts,omitempty"`
	// Services are the pinned images of the task's sidecar services
	// (environment/docker-compose.yaml), by service name.
	Services map[string]string `json:"services,omitempty"`
	// Sidecars say how each service of Services runs, in start order, and
	// MainDependsOn what the task's own container waits for: what a driver
	// that declares the containers up front (ECS) needs. The runner reads
	// the task's compose file itself, so neither travels in the spec's
	// JSON (an ECS override holds at most 8 KiB).
	Sidecars      []Sidecar    `json:"-"`
	MainDependsOn []Dependency `json:"-"`
	// Network is the task's network_mode; "none" (or empty) denies network.
	Network  string  `json:"network,omitempty"`
	CPUs     float64 `json:"cpus,omitempty"`
	MemoryMB int     `json:"memory_mb,omitempty"`
	// StorageMB is the task's storage_mb (0: it sets none); the cloud
	// driver sizes the sandbox's ephemeral storage to hold it.
	StorageMB int `json:"storage_mb,omitempty"`

	Output Output `json:"output"`

	// Trial describes the slot in Harbor's terms for result.json's trial
	// config; the runner records it and runs nothing by it.
	Trial Trial `json:"trial,omitzero"`

	// Secrets are the values of the secret records the agent names, keyed by
	// environment variable name; they reach only the agent's environment.
	Secrets map[string]secret.Value `json:"-"`
	// VerifierSecrets reach only the verifier's environment.
	VerifierSecrets map[string]secret.Value `json:"-"`
	// JudgeKey is the judge model's API key. It reaches only the model
	// gateway of the verifier phase, which swaps it in for the per-attempt
	// token the verifier gets; never a sandbox.
	JudgeKey secret.Value `json:"-"`
}

// Trial is what a trial's Harbor config records beyond what the runner
// runs by: the dataset, where the task came from, the run's multiplier.
type Trial struct {
	// Source is the benchmark's dataset name (Harbor's TrialResult.source).
	Source string `json:"source,omitempty"`
	// TaskGitURL, TaskGitCommitID and TaskPath say where the task's files
	// were fetched from (Harbor's registry fields); empty for a task read
	// from a local directory.
	TaskGitURL      string `json:"task_git_url,omitempty"`
	TaskGitCommitID string `json:"task_git_commit_id,omitempty"`
	TaskPath        string `json:"task_path,omitempty"`
	// TaskContentHash is the content hash ("sha256:<hex>") of a task from
	// a Harbor package registry, whose name is then its package (org/name).
	TaskContentHash string `json:"task_content_hash,omitempty"`
	// TimeoutMultiplier is the run's timeout multiplier, already applied to
	// AgentTimeout and VerifierTimeout; 0 means 1.
	TimeoutMultiplier float64 `json:"timeout_multiplier,omitempty"`
}

// Handle describes a live (or recently launched) sandbox.
type Handle struct {
	ID        string    `json:"id"`
	LaunchID  string    `json:"launch_id"`
	RunID     string    `json:"run_id"`
	SlotID    string    `json:"slot_id"`
	StartedAt time.Time `json:"started_at"`
}

// StopReason says why a sandbox ended, in the driver-neutral words the grader
// classifies.
type StopReason string

// Stop reasons.
const (
	Exited        StopReason = "exited"          // the runner exited by itself (see ExitCode)
	FailedToStart StopReason = "failed_to_start" // infrastructure could not start it
	UserStopped   StopReason = "user_stopped"    // stopped through Stop (run stop, watchdog)
	Lost          StopReason = "lost"            // the platform lost track of it (host died)
	// OutOfSpace: the platform's own storage (its data dir: the sandbox's
	// work dir, the blob store, the queue) was full while the sandbox ran
	// or started, and the attempt failed or its outputs could not be
	// stored. A sandbox's own storage limit filling up is not this: that
	// is the agent's, and the sandbox exits as usual.
	OutOfSpace StopReason = "out_of_space"
)

// Completion is emitted once when a sandbox ends. Handlers must tolerate
// duplicates and completions for launches they no longer expect.
type Completion struct {
	SandboxID  string     `json:"sandbox_id"`
	LaunchID   string     `json:"launch_id"`
	Workspace  string     `json:"workspace"`
	RunID      string     `json:"run_id"`
	SlotID     string     `json:"slot_id"`
	Generation int        `json:"generation"`
	Reason     StopReason `json:"reason"`
	ExitCode   int        `json:"exit_code"`
	Message    string     `json:"message,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	StoppedAt  time.Time  `json:"stopped_at"`
}

// Driver is the sandbox port.
type Driver interface {
	// Launch starts a sandbox for spec, or returns the existing one for the
	// same LaunchID. Its completion is delivered later, exactly as for any
	// other sandbox.
	Launch(ctx context.Context, spec Spec) (Handle, error)
	// Stop ends the sandbox; its completion reports UserStopped. Stopping an
	// ended sandbox is not an error.
	Stop(ctx context.Context, id string) error
	// List returns the run's live sandboxes.
	List(ctx context.Context, runID string) ([]Handle, error)
	// Ended returns the completions of the run's sandboxes that have ended
	// and that the driver can still describe (ECS keeps a stopped task's
	// description for about an hour); a driver that keeps no record of
	// ended sandboxes returns none. The watchdog sends them for running
	// slots whose sandbox is no longer listed, so a completion the platform
	// dropped is graded as what happened rather than as lost.
	Ended(ctx context.Context, runID string) ([]Completion, error)
}

// Runner exit codes: the runner's own contract with the drivers and the grader.
const (
	// ExitOK means the trial ran to the end and result.json was written,
	// whatever the reward; the grader reads the outcome from result.json.
	ExitOK = 0
	// ExitInfra means the runner could not do its job (bad spec, setup failure);
	// the grader classifies it as an infrastructure error.
	ExitInfra = 70
)
