package api

import (
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
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
	Coverage  string   `json:"coverage"`
	TaskCount int      `json:"task_count"`
	Agents    int      `json:"agent_count"`
	Progress  Progress `json:"progress"`
	Outcomes  Outcomes `json:"outcomes"`
	// DurationSec runs from the first sandbox start to the end, live while
	// the run is going; 0 before anything started.
	DurationSec float64    `json:"duration_sec"`
	Tokens      Tokens     `json:"tokens"`
	CostUSD     float64    `json:"cost_usd"`
	Submission  Submission `json:"submission"`
	CreatedAt   time.Time  `json:"created_at"`
	QueuedAt    *time.Time `json:"queued_at"`
	StartedAt   *time.Time `json:"started_at"`
	EndedAt     *time.Time `json:"ended_at"`
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
	Cancelled    int64 `json:"cancelled"`
	Retries      int64 `json:"retries"`
}

// Tokens counts model tokens; Cache is the cached part of Input.
type Tokens struct {
	Input  int64 `json:"input"`
	Cache  int64 `json:"cache"`
	Output int64 `json:"output"`
}

// Submission says who submitted a run and with which settings.
type Submission struct {
	SubmittedBy    string       `json:"submitted_by,omitempty"`
	IdempotencyKey string       `json:"idempotency_key,omitempty"`
	Settings       run.Settings `json:"settings"`
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
	Tokens   Tokens   `json:"tokens"`
	CostUSD  float64  `json:"cost_usd"`
	// Metrics are the agent's scores so far, with the leaderboard's metrics.
	Metrics Metrics `json:"metrics"`
}

// Estimate is a score over tasks with its 95% interval (null bounds when
// fewer than two tasks) and the number of tasks.
type Estimate struct {
	Value  float64  `json:"value"`
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
	N      int      `json:"n"`
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
	PassAtK       *PassAtKPoint   `json:"pass_at_k"`
	PassAtKCurve  []PassAtKPoint  `json:"pass_at_k_curve"`
	CostPerTask   *Estimate       `json:"cost_per_task"`
	TimePerTask   *Estimate       `json:"time_per_task"`
	TokensPerTask *Estimate       `json:"tokens_per_task"`
	Categories    []CategoryPass1 `json:"categories"`
	Tasks         int             `json:"tasks"`
	Scored        int             `json:"scored_attempts"`
	Passes        int             `json:"passes"`
}

func estimate(e leaderboard.Estimate) Estimate {
	out := Estimate{Value: e.Mean, N: e.Tasks}
	if e.CI != nil {
		lo, hi := e.CI.Lo, e.CI.Hi
		out.CILow, out.CIHigh = &lo, &hi
	}
	return out
}

func estimatePtr(e *leaderboard.Estimate) *Estimate {
	if e == nil {
		return nil
	}
	v := estimate(*e)
	return &v
}

func metricsOf(s leaderboard.Summary) Metrics {
	m := Metrics{
		Pass1: estimatePtr(s.Pass1), CostPerTask: estimatePtr(s.CostPerTask), TimePerTask: estimatePtr(s.TimePerTask),
		TokensPerTask: estimatePtr(s.TokensPerTask), PassAtKCurve: []PassAtKPoint{}, Categories: []CategoryPass1{},
		Tasks: s.Tasks, Scored: s.ScoredAttempts, Passes: s.Passes,
	}
	for _, p := range s.PassAtK {
		m.PassAtKCurve = append(m.PassAtKCurve, PassAtKPoint{K: p.K, Estimate: estimate(p.Estimate)})
	}
	if n := len(m.PassAtKCurve); n > 0 {
		last := m.PassAtKCurve[n-1]
		m.PassAtK = &last
	}
	for _, c := range s.Categories {
		m.Categories = append(m.Categories, CategoryPass1{Category: c.Category, Pass1: estimate(c.Pass1)})
	}
	return m
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func outcomes(t run.Tally) Outcomes {
	return Outcomes{Passed: t.Passed, Failed: t.Failed, Errored: t.Errored, InfraErrored: t.InfraErrored,
		Cancelled: t.Cancelled, Retries: t.Retries}
}

func tokens(t run.Tally) Tokens {
	return Tokens{Input: t.InputTokens, Cache: t.CacheTokens, Output: t.OutputTokens}
}

func coverage(r run.Run) leaderboard.Coverage {
	switch {
	case r.FullTaskList:
		return leaderboard.CoverageFull
	case r.ParitySet:
		return leaderboard.CoverageParity
	}
	return leaderboard.CoverageSubset
}

// runView renders a run with its run tally at time now.
func runView(r run.Run, t run.Tally, now time.Time) RunView {
	v := RunView{
		ID: r.ID, Name: r.Name, Status: string(r.Status), Reason: r.Reason, Benchmark: r.Benchmark,
		BenchmarkName: r.BenchmarkName, ManifestVersion: r.ManifestVersion, ManifestDigest: r.ManifestDigest,
		TaskSet: r.TaskSet, Coverage: string(coverage(r)), TaskCount: len(r.Tasks), Agents: r.Agents,
		Progress: Progress{Completed: int(t.Done), Total: r.TotalSlots()}, Outcomes: outcomes(t), Tokens: tokens(t),
		CostUSD:    float64(t.CostMicroUSD) / 1e6,
		Submission: Submission{SubmittedBy: r.SubmittedBy, IdempotencyKey: r.IdempotencyKey, Settings: r.Settings},
		CreatedAt:  r.CreatedAt, QueuedAt: timePtr(r.QueuedAt), StartedAt: timePtr(r.StartedAt), EndedAt: timePtr(r.EndedAt),
	}
	v.DurationSec = duration(r.StartedAt, r.EndedAt, now)
	return v
}

// duration is end − start, or now − start while not ended; 0 before start.
func duration(start, end, now time.Time) float64 {
	switch {
	case start.IsZero():
		return 0
	case end.IsZero():
		return now.Sub(start).Seconds()
	}
	return end.Sub(start).Seconds()
}
