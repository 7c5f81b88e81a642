package run

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Run is one execution of N agents × T tasks × A attempts against a pinned
// manifest version of a benchmark.
type Run struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
	// Reason says why the run failed or was stopped.
	Reason    string `json:"reason,omitempty"`
	Workspace string `json:"workspace"`
	Name      string `json:"name"`
	// SubmittedBy is the user id of the submitter (personal secrets resolve
	// against it).
	SubmittedBy    string `json:"submitted_by,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`

	Benchmark string `json:"benchmark"` // benchmark key
	// ManifestWorkspace is the workspace whose records hold the pinned
	// manifest (the run's own, or the platform's for managed benchmarks).
	ManifestWorkspace string `json:"manifest_workspace"`
	BenchmarkName     string `json:"benchmark_name,omitempty"`
	ManifestVersion   string `json:"manifest_version"`
	ManifestDigest    string `json:"manifest_digest"`
	// TaskSet is the task set the run selected ("" when it did not name one).
	TaskSet string `json:"task_set,omitempty"`
	// FullTaskList is true when Tasks is the benchmark's whole task list.
	FullTaskList bool `json:"full_task_list"`
	// ParitySet is true when Tasks is a published parity task set.
	ParitySet bool     `json:"parity_set,omitempty"`
	Tasks     []string `json:"tasks"`
	// UnavailableTasks are selected tasks whose environment could not be
	// had at sync (with the reason); they are not in Tasks and get no slots.
	UnavailableTasks []UnavailableTask `json:"unavailable_tasks,omitempty"`

	Settings Settings `json:"settings"`
	// Config is the resolved run config rendered as TOML.
	Config string `json:"config,omitempty"`

	// Planned is set once every slot exists.
	Planned bool `json:"planned,omitempty"`
	// SentBatches counts the planner's slot-message batches already sent,
	// so a redelivered plan message re-sends only what is missing.
	SentBatches int `json:"sent_batches,omitempty"`
	// Agents is the number of run agents.
	Agents int `json:"agents"`
	// PlanAttempts counts planning attempts that failed for a transient
	// reason or did not complete in time; after MaxPlanAttempts the run
	// fails. PlanRetriedAt is when the watchdog last retried planning.
	PlanAttempts  int       `json:"plan_attempts,omitempty"`
	PlanRetriedAt time.Time `json:"plan_retried_at,omitzero"`

	CreatedAt  time.Time `json:"created_at"`
	QueuedAt   time.Time `json:"queued_at,omitzero"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	EndedAt    time.Time `json:"ended_at,omitzero"`
	StoppingAt time.Time `json:"stopping_at,omitzero"`

	// Version is the stored item's version (optimistic concurrency); not
	// part of the entity's JSON.
	Version int64 `json:"-"`
}

// UnavailableTask is a selected task a run does not attempt, and why.
type UnavailableTask struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Settings are the run's execution settings, resolved from its config.
type Settings struct {
	AttemptsPerTask       int     `json:"attempts_per_task"`
	MaxConcurrentAttempts int     `json:"max_concurrent_attempts"`
	TimeoutMultiplier     float64 `json:"timeout_multiplier"`
	MaxRetries            int     `json:"max_retries"`
	// MaxTokensPerAttempt and MaxCostUSDPerAttempt are each attempt's
	// budgets for the agent's model use (input plus output tokens; USD),
	// enforced by the agent's model gateway; 0 is no budget. They never
	// bound the LLM judge.
	MaxTokensPerAttempt  int64   `json:"max_tokens_per_attempt,omitempty"`
	MaxCostUSDPerAttempt float64 `json:"max_cost_usd_per_attempt,omitempty"`
	PassThreshold        float64 `json:"pass_threshold"`
	// JudgeModel is the model of the run's LLM judge ("<provider>/<name>");
	// "" when the benchmark grades without one.
	JudgeModel string `json:"judge_model,omitempty"`
	// JudgeAPIKeySecret names the secret record holding the judge's key. Its
	// value reaches only the model gateway the verifier phase talks to,
	// never the sandbox.
	JudgeAPIKeySecret string `json:"judge_api_key_secret,omitempty"`
	// Env holds literal variables given to every agent.
	Env map[string]string `json:"env,omitempty"`
	// SecretNames are secret records every agent receives ([secrets].required).
	SecretNames []string `json:"secret_names,omitempty"`
	// VerifierSecretNames are secret records the verifier receives.
	VerifierSecretNames []string `json:"verifier_secret_names,omitempty"`
	// VerifierEnv holds literal variables for the verifier only.
	VerifierEnv map[string]string `json:"verifier_env,omitempty"`
	// Artifacts are the run config's trial-level artifacts (absolute
	// paths collected after every attempt's agent).
	Artifacts []string `json:"artifacts,omitempty"`
}

// MaxPlanAttempts bounds the planning attempts of a run (see PlanAttempts).
const MaxPlanAttempts = 5

// TotalSlots returns agents × tasks × attempts.
func (r Run) TotalSlots() int { return r.Agents * len(r.Tasks) * r.Settings.AttemptsPerTask }

// SetStatus moves the run to status to at time at, or returns an error
// wrapping ErrIllegalTransition.
func (r *Run) SetStatus(to Status, at time.Time) error {
	if err := CheckTransition(r.Status, to); err != nil {
		return fmt.Errorf("run %s: %w", r.ID, err)
	}
	r.Status = to
	switch to {
	case Queued:
		r.QueuedAt = at
	case Running:
		r.StartedAt = at
	case Stopping:
		r.StoppingAt = at
	case Finished, Failed, Stopped:
		r.EndedAt = at
	}
	return nil
}

// Agent is one entrant of a run: a harness plus a model, with its own
// environment and secret record names.
type Agent struct {
	RunID   string `json:"run_id"`
	Index   int    `json:"index"`
	Harness string `json:"harness"`
	// ModelType is provider, endpoint or hosted.
	ModelType    string            `json:"model_type,omitempty"`
	Model        string            `json:"model,omitempty"`
	BaseURL      string            `json:"base_url,omitempty"`
	ExtraHeaders map[string]string `json:"extra_headers,omitempty"`
	// BaseModel and LoraModelName name a hosted model (Model is then
	// their label, "base:lora").
	BaseModel     string `json:"base_model,omitempty"`
	LoraModelName string `json:"lora_model_name,omitempty"`
	// Command is the agent command of the `command` harness.
	Command string            `json:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Name tells apart agents with the same harness and model.
	Name string `json:"name,omitempty"`
	// APIKeySecret is the secret record holding the model API key; the
	// sandbox also receives it under the harness's key variable.
	APIKeySecret string `json:"api_key_secret,omitempty"`
	// SecretNames are the secret records this agent's sandbox receives, as
	// environment variables of the same name.
	SecretNames []string `json:"secret_names,omitempty"`

	Status    Status    `json:"status"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`

	Version int64 `json:"-"`
}

// Label names the agent in a run's views: "model (harness)", with
// RankedModel as the model, preceded by the agent's name when it has both
// a name and a model ("escapegw — mock/gpt-5 (command)"): the name is how
// the run's author told its agents apart, and two agents may share a model.
func (a Agent) Label() string {
	m := a.RankedModel()
	switch {
	case m == "":
		return a.Harness
	case a.Name != "" && a.Model != "":
		return a.Name + " — " + m + " (" + a.Harness + ")"
	}
	return m + " (" + a.Harness + ")"
}

// RankedModel is the model the leaderboard ranks the agent under (its
// entrant is harness + RankedModel): its model, or, for an agent without one
// (a model-free harness: oracle, nop, command), its name, so that a named
// baseline or command agent is an entrant of its own rather than every
// command agent being one; "" for an unnamed one, which ranks as its
// harness alone.
func (a Agent) RankedModel() string {
	if a.Model != "" {
		return a.Model
	}
	return a.Name
}

// SetStatus moves the agent to status to, or returns an error wrapping
// ErrIllegalTransition.
func (a *Agent) SetStatus(to Status, at time.Time) error {
	if err := CheckTransition(a.Status, to); err != nil {
		return fmt.Errorf("run %s agent %d: %w", a.RunID, a.Index, err)
	}
	a.Status = to
	switch to {
	case Running:
		a.StartedAt = at
	case Finished, Failed, Stopped:
		a.EndedAt = at
	}
	return nil
}

// Slot is one (agent, task, attempt) cell of a run: the unit that is queued,
// dispatched and retried. Generation counts launches: a retry after an
// infrastructure error moves the slot to the next generation, and every
// message, launch and result names the generation it belongs to.
type Slot struct {
	RunID      string     `json:"run_id"`
	ID         string     `json:"id"`
	Agent      int        `json:"agent"`
	Task       string     `json:"task"`
	Attempt    int        `json:"attempt"`
	Generation int        `json:"generation"`
	Status     SlotStatus `json:"status"`

	// LaunchID identifies the launch of the current generation once its
	// intent is recorded; SandboxID is the driver's id once it started.
	LaunchID   string    `json:"launch_id,omitempty"`
	SandboxID  string    `json:"sandbox_id,omitempty"`
	LaunchedAt time.Time `json:"launched_at,omitzero"`
	// Deadline is when the watchdog stops the sandbox of the current launch.
	Deadline time.Time `json:"deadline,omitzero"`
	// StopReason is recorded before the platform stops the current launch's
	// sandbox, so the grader knows why it ended.
	StopReason StopReason `json:"stop_reason,omitempty"`
	// Deferrals counts how often the dispatcher put this generation off
	// because a concurrency cap was full; a slot message carrying a smaller
	// count is a superseded duplicate.
	Deferrals int `json:"deferrals,omitempty"`
	// MissingSince is when the watchdog first found the slot running while
	// the driver no longer listed its sandbox.
	MissingSince time.Time `json:"missing_since,omitzero"`
	// Outcome is the final outcome once the slot is done.
	Outcome Outcome `json:"outcome,omitempty"`
	// PlatformRetries counts the generations re-run because the platform
	// lost them (its sandbox vanished, or it could not be launched); they do
	// not count against the run's max_retries.
	PlatformRetries int `json:"platform_retries,omitempty"`
	// SpaceRetries counts the generations re-run because the platform's
	// storage was full under them; they count against neither max_retries
	// nor the platform's retry limit.
	SpaceRetries int `json:"space_retries,omitempty"`

	Version int64 `json:"-"`
}

// InfraRetries is how many of the slot's earlier generations were retried
// for infrastructure errors the run's max_retries budget pays for.
func (s Slot) InfraRetries() int { return s.Generation - s.PlatformRetries - s.SpaceRetries }

// SetStatus moves the slot to status to, or returns an error wrapping
// ErrIllegalTransition.
func (s *Slot) SetStatus(to SlotStatus) error {
	if err := CheckSlotTransition(s.Status, to); err != nil {
		return fmt.Errorf("run %s slot %s: %w", s.RunID, s.ID, err)
	}
	s.Status = to
	return nil
}

// StopReason says why the platform stopped a sandbox.
type StopReason string

// Stop reasons recorded on a slot before its sandbox is stopped.
const (
	StopCancel   StopReason = "cancel"   // the run is stopping
	StopDeadline StopReason = "deadline" // the watchdog found it past its deadline
)

// SlotID returns the deterministic id of the slot of agent index agent, task
// task and attempt attempt (1-based): "<agent>/<task>/<attempt>".
func SlotID(agent int, task string, attempt int) string {
	return strconv.Itoa(agent) + "/" + task + "/" + strconv.Itoa(attempt)
}

// ParseSlotID splits a slot id into its agent index, task and attempt.
func ParseSlotID(id string) (agent int, task string, attempt int, err error) {
	first := strings.IndexByte(id, '/')
	last := strings.LastIndexByte(id, '/')
	if first <= 0 || last <= first+1 || last == len(id)-1 {
		return 0, "", 0, fmt.Errorf("slot id %q: want <agent>/<task>/<attempt>", id)
	}
	agent, err = strconv.Atoi(id[:first])
	if err != nil || agent < 0 {
		return 0, "", 0, fmt.Errorf("slot id %q: agent index is not a number ≥ 0", id)
	}
	attempt, err = strconv.Atoi(id[last+1:])
	if err != nil || attempt < 1 {
		return 0, "", 0, fmt.Errorf("slot id %q: attempt is not a number ≥ 1", id)
	}
	return agent, id[first+1 : last], attempt, nil
}

// LaunchID returns the deterministic launch id of generation gen of a slot:
// a hash of run, slot and generation, so every retry of the same launch
// names the same sandbox.
func LaunchID(runID, slotID string, gen int) string {
	sum := sha256.Sum256([]byte(runID + "\x00" + slotID + "\x00" + strconv.Itoa(gen)))
	return "l-" + hex.EncodeToString(sum[:12])
}
