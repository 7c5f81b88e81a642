package leaderboard

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchInputs builds entrants × tasks × attempts with realistic variety:
// each entrant has its own skill, each task its own difficulty, and every
// attempt reports cost, tokens and duration.
func benchInputs(entrants, taskCount, attempts int) []EntrantInput {
	rng := rand.New(rand.NewPCG(1, 2))
	names := make([]string, taskCount)
	difficulty := make([]float64, taskCount)
	for t := range names {
		names[t] = fmt.Sprintf("task-%05d", t)
		difficulty[t] = rng.Float64()
	}
	inputs := make([]EntrantInput, entrants)
	for e := range inputs {
		skill := rng.Float64()
		as := make([]Attempt, 0, taskCount*attempts)
		for t := range names {
			for range attempts {
				o := Failed
				switch r := rng.Float64(); {
				case r < 0.02:
					o = Errored
				case r < skill*(1-difficulty[t])+0.1:
					o = Passed
				}
				as = append(as, Attempt{Task: names[t], Outcome: o,
					CostUSD: rng.Float64(), HasCost: true,
					InputTokens: rng.Int64N(100_000), OutputTokens: rng.Int64N(10_000), HasTokens: true,
					DurationSec: 60 + 600*rng.Float64(), HasDuration: true})
			}
		}
		inputs[e] = input(fmt.Sprintf("harness-%d", e%5), fmt.Sprintf("model-%d", e), eligibleRun(fmt.Sprintf("run-%d", e), t0), as)
	}
	return inputs
}

// BenchmarkRecompute is a full leaderboard recompute: 50 entrants × 2,500
// tasks × 10 attempts summarized (pass@1, pass@k for k = 1..10, cost, time,
// tokens, every CI), the latest eligible run per entrant chosen, and every
// metric ranked with its paired tests.
func BenchmarkRecompute(b *testing.B) {
	inputs := benchInputs(50, 2500, 10)
	b.ReportAllocs()
	for b.Loop() {
		boards := Boards(LatestEligible(SummarizeAll(inputs, Options{})))
		if len(boards[0].Rows) != 50 || len(boards[0].Rows[0].Summary.PassAtK) != 10 {
			b.Fatalf("recompute produced an unexpected board")
		}
	}
}

// BenchmarkRank is the ranking part of BenchmarkRecompute alone: every
// metric's board, paired tests and ranks over 50 precomputed summaries.
func BenchmarkRank(b *testing.B) {
	summaries := LatestEligible(SummarizeAll(benchInputs(50, 2500, 10), Options{}))
	b.ReportAllocs()
	for b.Loop() {
		Boards(summaries)
	}
}

// BenchmarkRecomputeBootstrapped is a recompute of a Terminal-Bench-sized
// board, where cost, time and tokens get bootstrap intervals: 50 entrants
// × 89 tasks × 5 attempts.
func BenchmarkRecomputeBootstrapped(b *testing.B) {
	inputs := benchInputs(50, 89, 5)
	b.ReportAllocs()
	for b.Loop() {
		boards := Boards(LatestEligible(SummarizeAll(inputs, Options{})))
		if len(boards[0].Rows) != 50 || boards[0].Rows[0].Summary.CostPerTask.Method != CIBootstrap {
			b.Fatalf("recompute produced an unexpected board")
		}
	}
}
