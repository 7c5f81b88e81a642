package v1

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// RunView is a run as lists and the run page show it.
type RunView struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Status        string `json:"status"`
	Reason        string `json:"reason,omitempty"`
	Benchmark     string `json:"benchmark"`
	BenchmarkName string `json:"benchmark_name,omitempty"`
	// ManifestVersion and ManifestDigest are the pinned manifest version.
	ManifestVersion string `json:"manifest_version"`
	ManifestDigest  string `json:"manifest_digest"`
	TaskSet         string `json:"task_set,omitempty"`
	// Coverage is full, parity or subset.
	Coverage  string `json:"coverage"`
	TaskCount int    `json:"task_count"`
	// UnavailableTasks are selected tasks the run does not attempt: their
	// image could not be had at sync.
	UnavailableTasks []UnavailableTask `json:"unavailable_tasks"`
	Agents           int               `json:"agent_count"`
	Progress         Progress          `json:"progress"`
	Outcomes         Outcomes          `json:"outcomes"`
	// DurationSec runs from the first sandbox start to the end, live while
	// the run is going; 0 before anything started.
	DurationSec float64 `json:"duration_sec"`
	Tokens      Tokens  `json:"tokens"`
	CostUSD     float64 `json:"cost_usd"`
	// CostEstimated is true when some of CostUSD was computed from the
	// platform's dated price table rather than reported by a provider.
	CostEstimated bool `json:"cost_estimated"`
	// UsageSelfReported is true when some of the tokens and cost are an
	// agent's own report (a command agent's usage.json), not metered by
	// the model gateway.
	UsageSelfReported bool `json:"usage_self_reported"`
	// Judge is the LLM judge's model use over the run's graded attempts,
	// apart from the agents' Tokens and CostUSD above; null when the run
	// grades without a judge.
	Judge      *JudgeUsage `json:"judge"`
	Submission Submission  `json:"submission"`
	CreatedAt  time.Time   `json:"created_at"`
	QueuedAt   *time.Time  `json:"queued_at"`
	StartedAt  *time.Time  `json:"started_at"`
	EndedAt    *time.Time  `json:"ended_at"`
}

// Progress counts a run's (or agent's) slots with a final result.
type Progress struct {
	Completed int `json:"completed"`
	Total     int `json:"total"`
}

// Outcomes counts final attempt outcomes.
type Outcomes struct {
	Passed       int64 `json:"passed"`
	Failed       int64 `json:"failed"`
	Errored      int64 `json:"errored"`
	InfraErrored int64 `json:"infra_errored"`
	// JudgeFailed counts attempts whose LLM judge failed after retries
	// (never scored).
	JudgeFailed int64 `json:"judge_failed"`
	Cancelled   int64 `json:"cancelled"`
	Retries     int64 `json:"retries"`
}

// JudgeUsage is what an LLM judge used grading (the verifier's model
// gateway metered it), never counted in an agent's tokens or cost.
type JudgeUsage struct {
	// Model is the judge model ("<provider>/<name>").
	Model string `json:"model"`
	// Calls counts the judge's model calls.
	Calls  int64  `json:"calls"`
	Tokens Tokens `json:"tokens"`
	// CostUSD is 0 for a judge model the price table lacks (tokens only).
	CostUSD float64 `json:"cost_usd"`
	// CostEstimated is true when some of CostUSD came from the price table.
	CostEstimated bool `json:"cost_estimated"`
}

// Tokens counts model tokens; Cache is the cached part of Input.
type Tokens struct {
	Input  int64 `json:"input"`
	Cache  int64 `json:"cache"`
	Output int64 `json:"output"`
}

// Submission says who submitted a run and with which settings.
type Submission struct {
	SubmittedBy string `json:"submitted_by,omitempty"`
	// SubmittedByName is the submitter's display name, when the user record
	// has one.
	SubmittedByName string   `json:"submitted_by_name,omitempty"`
	IdempotencyKey  string   `json:"idempotency_key,omitempty"`
	Settings        Settings `json:"settings"`
}

// RunDetail is the answer of GET /v1/runs/{id}.
type RunDetail struct {
	RunView
	AgentsDetail []AgentView `json:"agents"`
	// MetricsResults counts the final results the agents' metrics cover;
	// MetricsCurrent is true once they cover every completed slot (metrics
	// are recomputed shortly after each result).
	MetricsResults int  `json:"metrics_results"`
	MetricsCurrent bool `json:"metrics_current"`
	// Power is the power analysis for the two best agents by pass@1: how
	// many tasks × attempts a paired test needs to separate their rates.
	// Null with fewer than two scored agents or equal pass@1.
	Power *PowerPlan `json:"power"`
}

// PowerPlan is a paired-test sample size for two agents' pass rates.
type PowerPlan struct {
	AgentA      int      `json:"agent_a"`
	AgentB      int      `json:"agent_b"`
	PassA       float64  `json:"pass_a"`
	PassB       float64  `json:"pass_b"`
	Alpha       float64  `json:"alpha"`
	Power       float64  `json:"power"`
	Attempts    int      `json:"attempts"`
	Pairs       int      `json:"pairs"`
	Tasks       int      `json:"tasks"`
	Assumptions []string `json:"assumptions"`
}

// AgentView is one run agent with its progress and metrics.
type AgentView struct {
	Index    int      `json:"index"`
	Name     string   `json:"name,omitempty"`
	Label    string   `json:"label"`
	Harness  string   `json:"harness"`
	Model    string   `json:"model,omitempty"`
	Status   string   `json:"status"`
	Progress Progress `json:"progress"`
	Outcomes Outcomes `json:"outcomes"`
	// StartedAt is when the agent's first slot started running (null while
	// none has); EndedAt is when the agent ended. DurationSec runs from
	// StartedAt to EndedAt, live until the agent ends; 0 before it started.
	StartedAt   *time.Time `json:"started_at"`
	EndedAt     *time.Time `json:"ended_at"`
	DurationSec float64    `json:"duration_sec"`
	Tokens      Tokens     `json:"tokens"`
	CostUSD     float64    `json:"cost_usd"`
	// CostEstimated is true when some of CostUSD came from the price table.
	CostEstimated bool `json:"cost_estimated"`
	// UsageSelfReported is true when some of the tokens and cost are an
	// agent's own report (a command agent's usage.json), not metered by
	// the model gateway.
	UsageSelfReported bool `json:"usage_self_reported"`
	// Judge is the LLM judge's model use grading this agent's attempts,
	// apart from Tokens and CostUSD; null when the run grades without one.
	Judge *JudgeUsage `json:"judge"`
	// Metrics are the agent's scores so far, with the leaderboard's metrics.
	Metrics Metrics `json:"metrics"`
}

// Estimate is a score over tasks with its 95% interval (null bounds when
// fewer than two tasks) and the number of tasks.
type Estimate struct {
	Value  float64  `json:"value"`
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
	// CIMethod names the interval: "wilson" (pass rates), "bootstrap"
	// (cost, time, tokens over up to 100 tasks) or "t"; "" without one.
	CIMethod string `json:"ci_method"`
	N        int    `json:"n"`
}

// ErrorCounts says how many attempts each error rule touched: agent errors
// were scored as failures; platform errors and failed judges were left
// out; UnscoredTasks had attempts but none scored and are left out.
type ErrorCounts struct {
	AgentErrors    int `json:"agent_errors"`
	PlatformErrors int `json:"platform_errors"`
	JudgeFailures  int `json:"judge_failures"`
	UnscoredTasks  int `json:"unscored_tasks"`
}

// Variance splits pass@1's variance into the part due to which tasks were
// drawn (Between) and attempt-to-attempt luck on a task (Within).
type Variance struct {
	Between float64 `json:"between"`
	Within  float64 `json:"within"`
}

// PassAtKPoint is one point of a pass@k curve.
type PassAtKPoint struct {
	K int `json:"k"`
	Estimate
}

// CategoryPass1 is the pass@1 of one category's tasks.
type CategoryPass1 struct {
	Category string   `json:"category"`
	Pass1    Estimate `json:"pass1"`
}

// Metrics are an entrant's scores. A null score is not defined yet (pass@k
// needs every task attempted at least k times; cost, time and tokens need
// attempts that report them).
type Metrics struct {
	Pass1 *Estimate `json:"pass1"`
	// PassAtK is the deepest pass@k every task reached; PassAtKCurve holds
	// k = 1..attempts as far as defined.
	PassAtK      *PassAtKPoint  `json:"pass_at_k"`
	PassAtKCurve []PassAtKPoint `json:"pass_at_k_curve"`
	// PassHatK and PassHatKCurve are pass^k (every one of k attempts
	// passes) at the same depths.
	PassHatK      *PassAtKPoint  `json:"pass_hat_k"`
	PassHatKCurve []PassAtKPoint `json:"pass_hat_k_curve"`
	// Pass1ErrorsAsFailures is pass@1 with every error scored as a failure.
	Pass1ErrorsAsFailures *Estimate       `json:"pass1_errors_as_failures"`
	Errors                ErrorCounts     `json:"errors"`
	Variance              *Variance       `json:"variance"`
	CostPerTask           *Estimate       `json:"cost_per_task"`
	TimePerTask           *Estimate       `json:"time_per_task"`
	TokensPerTask         *Estimate       `json:"tokens_per_task"`
	Categories            []CategoryPass1 `json:"categories"`
	Tasks                 int             `json:"tasks"`
	Scored                int             `json:"scored_attempts"`
	Passes                int             `json:"passes"`
}

// CreatedRun is the answer of POST /v1/runs.
type CreatedRun struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Status    string   `json:"status"`
	TaskCount int      `json:"task_count"`
	SlotCount int      `json:"slot_count"`
	Replayed  bool     `json:"replayed"`
	Warnings  []string `json:"warnings"`
}

// ValidationReport is the answer of POST /v1/runs/validate: what the
// submission would create and every problem that would reject it.
type ValidationReport struct {
	Valid           bool      `json:"valid"`
	Benchmark       string    `json:"benchmark,omitempty"`
	ManifestVersion string    `json:"manifest_version,omitempty"`
	TaskCount       int       `json:"task_count"`
	SlotCount       int       `json:"slot_count"`
	MissingSecrets  []string  `json:"missing_secrets"`
	BillingProblem  string    `json:"billing_problem,omitempty"`
	Problems        []Problem `json:"problems"`
	Warnings        []string  `json:"warnings"`
}

// RunList is one page of runs.
type RunList struct {
	Runs       []RunView `json:"runs"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// LogList is one page of run log lines.
type LogList struct {
	Logs       []LogLine `json:"logs"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// ResultView is one row of a run's results: the final attempt result of one
// agent × task × attempt.
type ResultView struct {
	// ID is "<agent>-<attempt>-<task>".
	ID         string             `json:"id"`
	Agent      int                `json:"agent"`
	AgentLabel string             `json:"agent_label"`
	Task       string             `json:"task"`
	Attempt    int                `json:"attempt"`
	Generation int                `json:"generation"`
	Outcome    string             `json:"outcome"`
	ErrorClass string             `json:"error_class,omitempty"`
	Message    string             `json:"message,omitempty"`
	Reward     *float64           `json:"reward"`
	Rewards    map[string]float64 `json:"rewards,omitempty"`
	Tokens     Tokens             `json:"tokens"`
	CostUSD    float64            `json:"cost_usd"`
	// CostEstimated is true when CostUSD was computed from the platform's
	// dated price table (list prices for the metered tokens).
	CostEstimated bool `json:"cost_estimated"`
	// UsageSelfReported is true when Tokens and CostUSD are the agent's
	// own report (usage.json), not metered by the model gateway.
	UsageSelfReported bool `json:"usage_self_reported"`
	// Judge is what the LLM judge used grading this attempt, apart from
	// Tokens and CostUSD (the agent's); null when no judge graded it.
	Judge *JudgeUsage `json:"judge"`
	// DurationSec is the attempt's wall time.
	DurationSec float64    `json:"duration_sec"`
	StartedAt   *time.Time `json:"started_at"`
	EndedAt     *time.Time `json:"ended_at"`
	// TaskCheck flags a task the environment check of the run's manifest
	// version found broken (the oracle fails there, so a failure says
	// nothing of the agent) or trivial (nop passes); omitted otherwise.
	TaskCheck string `json:"task_check,omitempty"`
	// Steps are a multi-step task's steps that ran, in order; omitted for
	// a single-step task.
	Steps []StepView `json:"steps,omitempty"`
}

// StepView is one step of a multi-step attempt.
type StepView struct {
	Name    string             `json:"name"`
	Reward  *float64           `json:"reward"`
	Rewards map[string]float64 `json:"rewards,omitempty"`
	// Exception is the step's exception ("Type: message"), if any.
	Exception   string  `json:"exception,omitempty"`
	Tokens      Tokens  `json:"tokens"`
	CostUSD     float64 `json:"cost_usd"`
	AgentSec    float64 `json:"agent_sec"`
	VerifierSec float64 `json:"verifier_sec"`
	// Output is the step's verifier output and AgentOutput its agent's
	// (result details only).
	Output      *PhaseOutput `json:"output,omitempty"`
	AgentOutput *PhaseOutput `json:"agent_output,omitempty"`
	// Trajectory is the step's agent/trajectory.json when one was kept
	// (result details only).
	Trajectory json.RawMessage `json:"trajectory,omitempty"`
}

// ResultList is one page of results.
type ResultList struct {
	Results    []ResultView `json:"results"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

// ResultDetail is the answer of GET /v1/runs/{id}/results/{result}.
type ResultDetail struct {
	ResultView
	// Output is the verifier's graded output (stdout and stderr of tests).
	Output PhaseOutput `json:"output"`
	// Agent is the agent's transcript: its stdout and stderr.
	AgentOutput PhaseOutput `json:"agent_output"`
	// Trajectory is the agent's trajectory file (agent/trajectory.json)
	// when the harness wrote one; null otherwise.
	Trajectory json.RawMessage `json:"trajectory"`
	// Artifacts lists every stored file of the attempt with a download URL
	// served by this API.
	Artifacts []ArtifactView `json:"artifacts"`
	// EarlierAttempts are the generations retried after infrastructure
	// errors, oldest first.
	EarlierAttempts []ResultView `json:"earlier_attempts"`
}

// PhaseOutput is the captured output of one phase; Truncated is set when a
// stream was longer than the inline limit (the artifact has it all).
type PhaseOutput struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated"`
}

// ArtifactView is one stored file of an attempt.
type ArtifactView struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	URL  string `json:"url"`
}

// Settings are a run's execution settings as submitted and resolved.
type Settings struct {
	AttemptsPerTask       int     `json:"attempts_per_task"`
	MaxConcurrentAttempts int     `json:"max_concurrent_attempts"`
	TimeoutMultiplier     float64 `json:"timeout_multiplier"`
	MaxRetries            int     `json:"max_retries"`
	// MaxTokensPerAttempt is each attempt's token budget (input plus
	// output tokens through the agent's model gateway, cached input
	// included); absent when the run set none.
	MaxTokensPerAttempt int64 `json:"max_tokens_per_attempt,omitempty"`
	// MaxCostUSDPerAttempt is each attempt's cost budget in USD; absent
	// when the run set none.
	MaxCostUSDPerAttempt float64 `json:"max_cost_usd_per_attempt,omitempty"`
	PassThreshold        float64 `json:"pass_threshold"`
	JudgeModel           string  `json:"judge_model,omitempty"`
	// JudgeAPIKeySecret names the secret record holding the judge's key
	// (its value reaches only the verifier's model gateway).
	JudgeAPIKeySecret string `json:"judge_api_key_secret,omitempty"`
	// Env holds literal variables given to every agent.
	Env map[string]string `json:"env,omitempty"`
	// SecretNames are secret records every agent receives ([secrets].required).
	SecretNames []string `json:"secret_names,omitempty"`
	// VerifierSecretNames are secret records the verifier receives.
	VerifierSecretNames []string `json:"verifier_secret_names,omitempty"`
	// VerifierEnv holds literal variables for the verifier only.
	VerifierEnv map[string]string `json:"verifier_env,omitempty"`
	// Artifacts are the run's trial-level artifacts (absolute paths
	// collected after every attempt's agent).
	Artifacts []string `json:"artifacts,omitempty"`
}

// LogLine is one line of a run's log.
type LogLine struct {
	RunID   string    `json:"run_id"`
	At      time.Time `json:"at"`
	Level   string    `json:"level"` // info, warn or error
	Step    string    `json:"step"`  // submitted, planned, launched, result, retry, stop, finished, …
	Message string    `json:"message"`
	Slot    string    `json:"slot,omitempty"`
}

// FormatLogLine renders a run log line as logs.txt and `gauntlet runs logs`
// show it.
func FormatLogLine(at time.Time, level, step, slot, msg string) string {
	s := at.UTC().Format(time.RFC3339Nano) + " " + strings.ToUpper(level) + " " + step
	if slot != "" {
		s += " [" + slot + "]"
	}
	return s + " " + msg
}

// ResultID names the final result of agent × attempt × task.
func ResultID(agent, attempt int, task string) string {
	return strconv.Itoa(agent) + "-" + strconv.Itoa(attempt) + "-" + task
}
