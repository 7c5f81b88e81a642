// Package leaderboard owns how gauntlet turns attempt results into a ranked
// leaderboard: per-entrant summaries (pass@1, the pass@k and pass^k curves,
// pass@1 with errors as failures, cost, time and tokens per task, each with
// a 95% confidence interval; the error counts and the variance split), run
// eligibility, the latest eligible run per entrant, ranks with statistical
// ties (Holm-adjusted), and the contrast of two entrants task by task.
//
// It implements the "Scoring" rules of DESIGN.md as docs/SCORING.md refines
// them and imports nothing but pkg/stats: callers map their own records into
// EntrantInput.
package leaderboard

import "time"

// Entrant is one row of a leaderboard: a harness driving a model.
type Entrant struct {
	Harness string `json:"harness"`
	Model   string `json:"model"`
}

// String renders the entrant as "model (harness)", or just the harness when
// the entrant has no model (an oracle or a do-nothing baseline).
func (e Entrant) String() string {
	if e.Model == "" {
		return e.Harness
	}
	return e.Model + " (" + e.Harness + ")"
}

// Outcome is the graded outcome of one attempt.
type Outcome string

// The attempt outcomes of DESIGN.md.
const (
	Passed    Outcome = "passed"
	Failed    Outcome = "failed"
	Errored   Outcome = "errored"
	Cancelled Outcome = "cancelled"
	// JudgeFailed is an attempt whose LLM judge failed (its model calls
	// failed or its key was refused) after the platform's retries: the
	// agent's work was never judged, so it is not scored (never a zero).
	JudgeFailed Outcome = "judge_failed"
)

// ErrorClass says whose error an Errored attempt was.
type ErrorClass string

// The error classes scoring tells apart.
const (
	// AgentError is the agent's own error (its crash, timeout, running out
	// of memory or model budget): scored as a failure. An errored attempt
	// without a class counts as the agent's.
	AgentError ErrorClass = "agent"
	// PlatformError is the platform's (a lost sandbox, a verifier the
	// platform could not run, a missing reward after a clean agent phase)
	// that its retries did not clear: not scored.
	PlatformError ErrorClass = "platform"
)

// Rule says how scoring treats an attempt of this outcome and error class.
type Rule int

// The scoring rules, one per kind of attempt.
const (
	// RuleScored: passed, failed and agent errors count towards the task's
	// n (an agent error as a failure).
	RuleScored Rule = iota
	// RuleExcluded: platform errors and failed judges are left out of the
	// estimate; the task's n shrinks.
	RuleExcluded
	// RuleIgnored: cancelled attempts never ran and count nowhere.
	RuleIgnored
)

// RuleOf is how an attempt of outcome o and (for Errored) error class
// class is scored. Unknown outcomes are ignored.
func RuleOf(o Outcome, class ErrorClass) Rule {
	switch o {
	case Passed, Failed:
		return RuleScored
	case Errored:
		if class == PlatformError {
			return RuleExcluded
		}
		return RuleScored
	case JudgeFailed:
		return RuleExcluded
	}
	return RuleIgnored
}

// Attempt is the graded result of one slot: one (task, attempt) of an entrant.
// The pass threshold has already been applied: Outcome alone decides the score.
type Attempt struct {
	Task    string
	Outcome Outcome
	// ErrorClass is whose error an Errored attempt was.
	ErrorClass ErrorClass
	// CostUSD is the model cost of the attempt; meaningful only when HasCost.
	CostUSD float64
	// InputTokens, OutputTokens and CacheTokens are the token counts the
	// harness reported; meaningful only when HasTokens. CacheTokens is the
	// cached part of InputTokens (Harbor's convention) and is not added again.
	InputTokens, OutputTokens, CacheTokens int64
	// DurationSec is the wall time of the attempt; meaningful only when
	// HasDuration.
	DurationSec float64
	// HasCost, HasTokens and HasDuration say which optional quantities the
	// attempt reports (kept together to keep the struct small).
	HasCost, HasTokens, HasDuration bool
}

// Coverage says which tasks of the benchmark a run selected.
type Coverage string

// The task selections a run can make. Only CoverageFull and CoverageParity
// runs are eligible for a leaderboard.
const (
	// CoverageFull is the benchmark's whole task list.
	CoverageFull Coverage = "full"
	// CoverageParity is a published task set such as "parity", the sample
	// that published scores were measured on.
	CoverageParity Coverage = "parity"
	// CoverageSubset is any other selection (task names, categories).
	CoverageSubset Coverage = "subset"
)

// Run describes the run an entrant's attempts come from.
type Run struct {
	ID         string    `json:"id"`
	FinishedAt time.Time `json:"finished_at"`
	// TaskSet names the task set the run covered; empty for the full task
	// list. Together with the manifest version and digest it decides which
	// entrants are ever compared.
	TaskSet         string `json:"task_set"`
	ManifestVersion string `json:"manifest_version"`
	ManifestDigest  string `json:"manifest_digest"`
	// Finished is true when the run reached the finished status.
	Finished bool `json:"finished"`
	// AgentFinished is true when this entrant's agent within the run did.
	AgentFinished bool     `json:"agent_finished"`
	Coverage      Coverage `json:"coverage"`
	// AllSlotsReported is true when every slot of the agent produced an
	// attempt result.
	AllSlotsReported bool `json:"all_slots_reported"`
}

// EntrantInput is everything one run agent contributes: who it is, the run,
// and one Attempt per attempted slot. Summarize is fastest when Attempts are
// ordered by task (as the store returns them); any order is accepted.
type EntrantInput struct {
	Entrant  Entrant
	Run      Run
	Attempts []Attempt
}

// Options carries the benchmark-wide inputs of a summary.
type Options struct {
	// Categories maps a task name to its category for the per-category pass@1
	// breakdown; nil skips the breakdown, and tasks absent from it are left
	// out of every category.
	Categories map[string]string
}
