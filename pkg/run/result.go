package run

import (
	"fmt"
	"time"
)

// Outcome is the graded outcome of an attempt.
type Outcome string

// Attempt outcomes.
const (
	Passed    Outcome = "passed"
	FailedOut Outcome = "failed"
	Errored   Outcome = "errored"
	Cancelled Outcome = "cancelled"
	// JudgeFailed is an attempt whose LLM judge failed (its latest model
	// call failed, or its key was refused): the agent's work was never
	// judged. Retried like an infrastructure error; never scored.
	JudgeFailed Outcome = "judge_failed"
)

// Valid reports whether o is a defined outcome.
func (o Outcome) Valid() bool {
	return o == Passed || o == FailedOut || o == Errored || o == Cancelled || o == JudgeFailed
}

// Retryable reports whether a result may be retried as the slot's next
// generation: an infrastructure error or a failed judge.
func (r Result) Retryable() bool {
	return (r.Outcome == Errored && r.ErrorClass == Infra) || r.Outcome == JudgeFailed
}

// ErrorClass says who an errored attempt is blamed on.
type ErrorClass string

// Error classes.
const (
	// Infra errors are the platform's fault (launch failure, runner crash,
	// platform timeout, missing result); they are retried up to max_retries.
	Infra ErrorClass = "infra"
	// AgentError errors are the agent's own (agent timeout, non-zero exit,
	// auth failure); they are final.
	AgentError ErrorClass = "agent"
)

// Result is the graded outcome of one generation of a slot. Exactly one
// result per slot is final; earlier generations that errored for
// infrastructure reasons and were retried keep Retried set and are not scored.
type Result struct {
	RunID      string     `json:"run_id"`
	SlotID     string     `json:"slot_id"`
	Generation int        `json:"generation"`
	Agent      int        `json:"agent"`
	Task       string     `json:"task"`
	Attempt    int        `json:"attempt"`
	LaunchID   string     `json:"launch_id,omitempty"`
	Outcome    Outcome    `json:"outcome"`
	ErrorClass ErrorClass `json:"error_class,omitempty"`
	Message    string     `json:"message,omitempty"`
	// Retried is set on an infrastructure error that was retried as the next
	// generation; such a result is history, not a score.
	Retried bool `json:"retried,omitempty"`
	// PlatformRetry marks a Retried result whose attempt the platform lost
	// (a vanished sandbox, a launch it could not make): its retry does not
	// count against the run's max_retries.
	PlatformRetry bool `json:"platform_retry,omitempty"`
	// OutOfSpace marks a PlatformRetry whose attempt failed because the
	// platform's own storage was full (not the sandbox's storage limit):
	// its retry counts against neither max_retries nor the platform's
	// retry limit, and waits for space before it launches.
	OutOfSpace bool `json:"out_of_space,omitempty"`

	// Reward is the verifier's reward; nil when none was produced.
	Reward  *float64           `json:"reward,omitempty"`
	Rewards map[string]float64 `json:"rewards,omitempty"`

	// UsageReported and CostReported say whether the harness reported token
	// counts and cost (a zero is then a real zero).
	UsageReported bool `json:"usage_reported,omitempty"`
	CostReported  bool `json:"cost_reported,omitempty"`
	// CostEstimated says the cost was computed from the platform's dated
	// price table (list prices for the metered tokens), not reported by the
	// provider.
	CostEstimated bool `json:"cost_estimated,omitempty"`
	// UsageSelfReported says the tokens and cost are the agent's own
	// report (a command agent's /logs/agent/usage.json), not metered by the
	// model gateway from the wire: shown as reported wherever a metered
	// figure is shown, never ranked as if metered.
	UsageSelfReported bool    `json:"usage_self_reported,omitempty"`
	InputTokens       int64   `json:"input_tokens,omitempty"`
	CacheTokens       int64   `json:"cache_tokens,omitempty"`
	OutputTokens      int64   `json:"output_tokens,omitempty"`
	CostUSD           float64 `json:"cost_usd,omitempty"`
	DurationMS        int64   `json:"duration_ms,omitempty"`
	// Judge is what the attempt's LLM judge used, metered by the verifier
	// phase's model gateway; nil when no judge graded it. It is never part
	// of the agent's tokens and cost above.
	Judge *JudgeUsage `json:"judge,omitempty"`
	// Limits are what the attempt's sandbox enforced and what it did not
	// (memory, cpu, pids, storage, network), as the runner reported them.
	Limits []string `json:"limits,omitempty"`
	// Steps are a multi-step task's steps that ran, in order (their
	// rewards, usage and times; Reward above is derived from theirs by the
	// task's strategy); empty for a single-step task.
	Steps []StepResult `json:"steps,omitempty"`

	// ArtifactsPrefix is the blob key prefix of result.json and artifacts/.
	ArtifactsPrefix string    `json:"artifacts_prefix,omitempty"`
	StartedAt       time.Time `json:"started_at,omitzero"`
	EndedAt         time.Time `json:"ended_at,omitzero"`
	RecordedAt      time.Time `json:"recorded_at"`
}

// StepResult is one step of a multi-step attempt.
type StepResult struct {
	Name string `json:"name"`
	// Reward is the step's main reward (harbor.MainReward), nil when its
	// verifier produced none; Rewards all its keys.
	Reward  *float64           `json:"reward,omitempty"`
	Rewards map[string]float64 `json:"rewards,omitempty"`
	// Exception is the step's exception ("Type: message"), if any.
	Exception    string  `json:"exception,omitempty"`
	InputTokens  int64   `json:"input_tokens,omitempty"`
	CacheTokens  int64   `json:"cache_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
	// AgentMS and VerifierMS are the step's agent and verifier phase times.
	AgentMS    int64 `json:"agent_ms,omitempty"`
	VerifierMS int64 `json:"verifier_ms,omitempty"`
}

// ResultExtraKey is the result.json key under which the runner records what
// Harbor's shape has no field for (slot identity, isolation, exit codes,
// the judge's usage).
const ResultExtraKey = "gauntlet"

// JudgeUsage is the model use of an attempt's LLM judge, as the verifier
// phase's model gateway metered it: kept in result.json (under
// ResultExtraKey, "judge"), in the result and in the tallies apart from the
// agent's usage.
type JudgeUsage struct {
	// Model is the judge model ("<provider>/<name>").
	Model string `json:"model"`
	// Calls counts the judge's model calls.
	Calls        int64   `json:"calls"`
	InputTokens  int64   `json:"input_tokens"` // includes cached tokens
	CacheTokens  int64   `json:"cache_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	// CostKnown says every metered call had a price (false for models the
	// price table lacks: tokens, no cost); CostEstimated that the cost was
	// computed from the dated price table rather than reported.
	CostKnown     bool `json:"cost_known"`
	CostEstimated bool `json:"cost_estimated"`
	// Failure is the failure of the judge's latest model call ("kind:
	// message") when no call succeeded after it: the verifier's verdict
	// came without a working judge, and the attempt is judge_failed.
	Failure string `json:"failure,omitempty"`
}

// Final reports whether the result ends its slot (it was not retried).
func (r Result) Final() bool { return !r.Retried }

// Validate checks the result's invariants.
func (r Result) Validate() error {
	switch {
	case r.RunID == "" || r.SlotID == "":
		return fmt.Errorf("result: run id and slot id are required")
	case !r.Outcome.Valid():
		return fmt.Errorf("result %s/%s: outcome %q must be passed, failed, errored, judge_failed or cancelled", r.RunID, r.SlotID, r.Outcome)
	case r.Outcome == Errored && r.ErrorClass != Infra && r.ErrorClass != AgentError:
		return fmt.Errorf("result %s/%s: errored needs error class infra or agent, got %q", r.RunID, r.SlotID, r.ErrorClass)
	case r.Retried && !r.Retryable():
		return fmt.Errorf("result %s/%s: only infrastructure errors and failed judges are retried", r.RunID, r.SlotID)
	case r.PlatformRetry && !r.Retried:
		return fmt.Errorf("result %s/%s: platform_retry is set but the result was not retried", r.RunID, r.SlotID)
	case r.OutOfSpace && !r.PlatformRetry:
		return fmt.Errorf("result %s/%s: out_of_space is set but the result was not a platform retry", r.RunID, r.SlotID)
	}
	return nil
}

// Tally is the set of counters a run and each of its agents keep, updated in
// the same transaction as the result that changes them.
type Tally struct {
	Done         int64 `json:"done"` // slots with a final result (any outcome)
	Passed       int64 `json:"passed"`
	Failed       int64 `json:"failed"`
	Errored      int64 `json:"errored"`
	InfraErrored int64 `json:"infra_errored"`
	// JudgeFailed counts final results whose LLM judge failed.
	JudgeFailed  int64 `json:"judge_failed"`
	Cancelled    int64 `json:"cancelled"`
	Retries      int64 `json:"retries"`
	InputTokens  int64 `json:"input_tokens"`
	CacheTokens  int64 `json:"cache_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CostMicroUSD int64 `json:"cost_micro_usd"`
	// CostEstimated counts the final results whose cost came from the
	// price table (Result.CostEstimated).
	CostEstimated int64 `json:"cost_estimated"`
	// UsageSelfReported counts the final results whose tokens and cost
	// the agent reported itself (Result.UsageSelfReported).
	UsageSelfReported int64 `json:"usage_self_reported"`
	DurationMS        int64 `json:"duration_ms"`
	// Judge* count the LLM judge's model use (Result.Judge), apart from the
	// agent's tokens and cost above.
	JudgeCalls         int64 `json:"judge_calls"`
	JudgeInputTokens   int64 `json:"judge_input_tokens"`
	JudgeCacheTokens   int64 `json:"judge_cache_tokens"`
	JudgeOutputTokens  int64 `json:"judge_output_tokens"`
	JudgeCostMicroUSD  int64 `json:"judge_cost_micro_usd"`
	JudgeCostEstimated int64 `json:"judge_cost_estimated"`
}

// Deltas returns the counter increments a result contributes.
func (r Result) Deltas() Tally {
	if r.Retried {
		return Tally{Retries: 1}
	}
	t := Tally{
		Done:         1,
		InputTokens:  r.InputTokens,
		CacheTokens:  r.CacheTokens,
		OutputTokens: r.OutputTokens,
		CostMicroUSD: int64(r.CostUSD*1e6 + 0.5),
		DurationMS:   r.DurationMS,
	}
	if r.CostEstimated {
		t.CostEstimated = 1
	}
	if r.UsageSelfReported {
		t.UsageSelfReported = 1
	}
	if j := r.Judge; j != nil {
		t.JudgeCalls, t.JudgeInputTokens, t.JudgeCacheTokens, t.JudgeOutputTokens = j.Calls, j.InputTokens, j.CacheTokens, j.OutputTokens
		t.JudgeCostMicroUSD = int64(j.CostUSD*1e6 + 0.5)
		if j.CostEstimated {
			t.JudgeCostEstimated = 1
		}
	}
	switch r.Outcome {
	case Passed:
		t.Passed = 1
	case FailedOut:
		t.Failed = 1
	case Errored:
		t.Errored = 1
		if r.ErrorClass == Infra {
			t.InfraErrored = 1
		}
	case JudgeFailed:
		t.JudgeFailed = 1
	case Cancelled:
		t.Cancelled = 1
	}
	return t
}

// Counters returns the tally as named counters for the table.
func (t Tally) Counters() map[string]int64 {
	all := map[string]int64{
		"done": t.Done, "passed": t.Passed, "failed": t.Failed, "errored": t.Errored,
		"infra_errored": t.InfraErrored, "judge_failed": t.JudgeFailed, "cancelled": t.Cancelled, "retries": t.Retries,
		"input_tokens": t.InputTokens, "cache_tokens": t.CacheTokens, "output_tokens": t.OutputTokens,
		"cost_micro_usd": t.CostMicroUSD, "cost_estimated": t.CostEstimated, "usage_self_reported": t.UsageSelfReported, "duration_ms": t.DurationMS,
		"judge_calls": t.JudgeCalls, "judge_input_tokens": t.JudgeInputTokens, "judge_cache_tokens": t.JudgeCacheTokens,
		"judge_output_tokens": t.JudgeOutputTokens, "judge_cost_micro_usd": t.JudgeCostMicroUSD, "judge_cost_estimated": t.JudgeCostEstimated,
	}
	for k, v := range all {
		if v == 0 {
			delete(all, k)
		}
	}
	return all
}

// TallyFromCounters reads a tally back from named counters.
func TallyFromCounters(c map[string]int64) Tally {
	return Tally{
		Done: c["done"], Passed: c["passed"], Failed: c["failed"], Errored: c["errored"],
		InfraErrored: c["infra_errored"], JudgeFailed: c["judge_failed"], Cancelled: c["cancelled"], Retries: c["retries"],
		InputTokens: c["input_tokens"], CacheTokens: c["cache_tokens"], OutputTokens: c["output_tokens"],
		CostMicroUSD: c["cost_micro_usd"], CostEstimated: c["cost_estimated"], UsageSelfReported: c["usage_self_reported"], DurationMS: c["duration_ms"],
		JudgeCalls: c["judge_calls"], JudgeInputTokens: c["judge_input_tokens"], JudgeCacheTokens: c["judge_cache_tokens"],
		JudgeOutputTokens: c["judge_output_tokens"], JudgeCostMicroUSD: c["judge_cost_micro_usd"], JudgeCostEstimated: c["judge_cost_estimated"],
	}
}

// EndStatus returns the status a run or agent ends in once every one of its
// total slots has a final result: failed when every attempt that ran
// errored for infrastructure reasons or lost its judge, finished otherwise.
// Cancelled attempts (a stop) are decided by the stop path, not here.
func (t Tally) EndStatus() Status {
	ran := t.Passed + t.Failed + t.Errored + t.JudgeFailed
	if ran > 0 && t.InfraErrored+t.JudgeFailed == ran {
		return Failed
	}
	return Finished
}
