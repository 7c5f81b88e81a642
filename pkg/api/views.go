package api

import (
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/boardview"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func estimate(e leaderboard.Estimate) v1.Estimate { return *boardview.Estimate(&e) }

func estimatePtr(e *leaderboard.Estimate) *v1.Estimate { return boardview.Estimate(e) }

func metricsOf(s leaderboard.Summary) v1.Metrics {
	m := v1.Metrics{
		Pass1: estimatePtr(s.Pass1), CostPerTask: estimatePtr(s.CostPerTask), TimePerTask: estimatePtr(s.TimePerTask),
		TokensPerTask: estimatePtr(s.TokensPerTask), PassAtKCurve: []v1.PassAtKPoint{}, PassHatKCurve: []v1.PassAtKPoint{},
		Categories: []v1.CategoryPass1{}, Tasks: s.Tasks, Scored: s.ScoredAttempts, Passes: s.Passes,
		Pass1ErrorsAsFailures: estimatePtr(s.Pass1ErrorsAsFailures), Errors: boardview.Errors(s.Errors),
		Variance: boardview.Variance(s.Variance),
	}
	for _, p := range s.PassAtK {
		m.PassAtKCurve = append(m.PassAtKCurve, v1.PassAtKPoint{K: p.K, Estimate: estimate(p.Estimate)})
	}
	for _, p := range s.PassHatK {
		m.PassHatKCurve = append(m.PassHatKCurve, v1.PassAtKPoint{K: p.K, Estimate: estimate(p.Estimate)})
	}
	if n := len(m.PassAtKCurve); n > 0 {
		last := m.PassAtKCurve[n-1]
		m.PassAtK = &last
	}
	if n := len(m.PassHatKCurve); n > 0 {
		last := m.PassHatKCurve[n-1]
		m.PassHatK = &last
	}
	for _, c := range s.Categories {
		m.Categories = append(m.Categories, v1.CategoryPass1{Category: c.Category, Pass1: estimate(c.Pass1)})
	}
	return m
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func outcomes(t run.Tally) v1.Outcomes {
	return v1.Outcomes{Passed: t.Passed, Failed: t.Failed, Errored: t.Errored, InfraErrored: t.InfraErrored,
		JudgeFailed: t.JudgeFailed, Cancelled: t.Cancelled, Retries: t.Retries}
}

func tokens(t run.Tally) v1.Tokens {
	return v1.Tokens{Input: t.InputTokens, Cache: t.CacheTokens, Output: t.OutputTokens}
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
func runView(r run.Run, t run.Tally, now time.Time) v1.RunView {
	v := v1.RunView{
		ID: r.ID, Name: r.Name, Status: string(r.Status), Reason: r.Reason, Benchmark: r.Benchmark,
		BenchmarkName: r.BenchmarkName, ManifestVersion: r.ManifestVersion, ManifestDigest: r.ManifestDigest,
		TaskSet: r.TaskSet, Coverage: string(coverage(r)), TaskCount: len(r.Tasks), Agents: r.Agents,
		Progress: v1.Progress{Completed: int(t.Done), Total: r.TotalSlots()}, Outcomes: outcomes(t), Tokens: tokens(t),
		CostUSD: float64(t.CostMicroUSD) / 1e6, CostEstimated: t.CostEstimated > 0, UsageSelfReported: t.UsageSelfReported > 0,
		Submission: v1.Submission{SubmittedBy: r.SubmittedBy, IdempotencyKey: r.IdempotencyKey, Settings: settings(r.Settings)},
		CreatedAt:  r.CreatedAt, QueuedAt: timePtr(r.QueuedAt), StartedAt: timePtr(r.StartedAt), EndedAt: timePtr(r.EndedAt),
	}
	v.DurationSec = duration(r.StartedAt, r.EndedAt, now)
	v.Judge = judgeView(r.Settings.JudgeModel, t)
	v.UnavailableTasks = make([]v1.UnavailableTask, len(r.UnavailableTasks))
	for i, u := range r.UnavailableTasks {
		v.UnavailableTasks[i] = v1.UnavailableTask{Name: u.Name, Reason: u.Reason}
	}
	return v
}

// judgeView is the judge's use in tally t; nil when the run grades
// without a judge (model "").
func judgeView(model string, t run.Tally) *v1.JudgeUsage {
	if model == "" {
		return nil
	}
	return &v1.JudgeUsage{Model: model, Calls: t.JudgeCalls,
		Tokens:  v1.Tokens{Input: t.JudgeInputTokens, Cache: t.JudgeCacheTokens, Output: t.JudgeOutputTokens},
		CostUSD: float64(t.JudgeCostMicroUSD) / 1e6, CostEstimated: t.JudgeCostEstimated > 0}
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
