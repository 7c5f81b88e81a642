// Package boardview turns the scoring package's boards into the API's wire
// shape and renders that shape as the one text table the CLI prints, both
// for `gauntlet leaderboard` (a stored board through the API) and `gauntlet
// score` (a board computed offline from attempt files).
package boardview

import (
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// Estimate is the wire form of an estimate; nil stays nil.
func Estimate(e *leaderboard.Estimate) *v1.Estimate {
	if e == nil {
		return nil
	}
	out := v1.Estimate{Value: e.Mean, N: e.Tasks, CIMethod: e.Method}
	if e.CI != nil {
		lo, hi := e.CI.Lo, e.CI.Hi
		out.CILow, out.CIHigh = &lo, &hi
	}
	return &out
}

// PassAtK is the wire form of a pass@k point; nil stays nil.
func PassAtK(p *leaderboard.PassAtK) *v1.PassAtKPoint {
	if p == nil {
		return nil
	}
	return &v1.PassAtKPoint{K: p.K, Estimate: *Estimate(&p.Estimate)}
}

// Comparison is the wire form of a comparison with the best; nil stays nil.
func Comparison(c *leaderboard.Comparison) *v1.Comparison {
	if c == nil {
		return nil
	}
	out := &v1.Comparison{Tasks: c.Tasks, Tested: c.Tested, Diff: c.Diff, PValue: c.P, AdjustedP: c.AdjustedP}
	if c.CI != nil {
		lo, hi := c.CI.Lo, c.CI.Hi
		out.CILow, out.CIHigh = &lo, &hi
	}
	return out
}

// Errors is the wire form of error counts.
func Errors(c leaderboard.ErrorCounts) v1.ErrorCounts {
	return v1.ErrorCounts{AgentErrors: c.AgentErrors, PlatformErrors: c.PlatformErrors, JudgeFailures: c.JudgeFailures,
		UnscoredTasks: c.UnscoredTasks}
}

// Variance is the wire form of a variance split; nil stays nil.
func Variance(v *leaderboard.Variance) *v1.Variance {
	if v == nil {
		return nil
	}
	return &v1.Variance{Between: v.Between, Within: v.Within}
}

// FromBoard is the wire form of a board computed by the scoring package.
func FromBoard(benchmark string, b leaderboard.Board) v1.LeaderboardView {
	out := v1.LeaderboardView{Benchmark: benchmark, Metric: string(b.Metric), K: b.K, Rows: make([]v1.BoardRow, len(b.Rows)),
		MinDetectableDiff: b.MinDetectableDiff}
	for i, r := range b.Rows {
		s := r.Summary
		row := v1.BoardRow{
			Rank: r.Rank, Tied: r.TiedWithBest, Best: r.Best, Label: s.Entrant.String(), Harness: s.Entrant.Harness,
			Model: s.Entrant.Model, TaskSet: s.Run.TaskSet, ManifestVersion: s.Run.ManifestVersion,
			ManifestDigest: s.Run.ManifestDigest, Value: r.Value, Pass1: Estimate(s.Pass1),
			CostPerTask: Estimate(s.CostPerTask), TimePerTask: Estimate(s.TimePerTask), TokensPerTask: Estimate(s.TokensPerTask),
			RunID: s.Run.ID, FinishedAt: s.Run.FinishedAt, VsBest: Comparison(r.VsBest),
			Pass1ErrorsAsFailures: Estimate(s.Pass1ErrorsAsFailures), Errors: Errors(s.Errors), Variance: Variance(s.Variance),
		}
		if b.K >= 1 && b.K <= len(s.PassAtK) {
			row.PassAtK = PassAtK(&s.PassAtK[b.K-1])
		}
		if b.K >= 1 && b.K <= len(s.PassHatK) {
			row.PassHatK = PassAtK(&s.PassHatK[b.K-1])
		}
		out.Rows[i] = row
	}
	return out
}
