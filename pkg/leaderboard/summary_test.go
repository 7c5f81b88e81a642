package leaderboard

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSummarizePassRates(t *testing.T) {
	tests := []struct {
		name      string
		attempts  []Attempt
		wantPass1 *Estimate
		wantCurve []PassAtK
		wantMin   int
		wantMax   int
	}{
		{
			// Per task pass@1: 2/3, 0/3 (errored scores 0), 3/3 → mean 5/9.
			// sd = √(((2/3−5/9)² + (5/9)² + (4/9)²)/2) = √(7/27) = 0.5091751,
			// half = t(0.975,2)·sd/√3 = 4.3026527·0.2939724 = 1.2648613.
			name:      "errored scores zero",
			attempts:  tasks("PPF", "FEE", "PPP"),
			wantPass1: &Estimate{Mean: 5.0 / 9, Tasks: 3, CI: iv(0, 1)},
			// pass@2: 1, 0, 1; pass@3: 1, 0, 1.
			wantCurve: []PassAtK{
				{K: 1, Estimate: Estimate{Mean: 5.0 / 9, Tasks: 3, CI: iv(0, 1)}},
				{K: 2, Estimate: Estimate{Mean: 2.0 / 3, Tasks: 3, CI: iv(0, 1)}},
				{K: 3, Estimate: Estimate{Mean: 2.0 / 3, Tasks: 3, CI: iv(0, 1)}},
			},
			wantMin: 3, wantMax: 3,
		},
		{
			// Unequal counts: pass@1 uses each task's own n (1/2 and 1/4);
			// pass@k stops at k = 2, the smallest n. Cancelled is not scored.
			// pass@2: task 0 = 1, task 1 = 1 − C(3,2)/C(4,2) = 1/2.
			name:      "unequal attempt counts and cancelled",
			attempts:  tasks("PFC", "FFPF"),
			wantPass1: &Estimate{Mean: 0.375, Tasks: 2, CI: iv(0, 1)},
			wantCurve: []PassAtK{
				{K: 1, Estimate: Estimate{Mean: 0.375, Tasks: 2, CI: iv(0, 1)}},
				{K: 2, Estimate: Estimate{Mean: 0.75, Tasks: 2, CI: iv(0, 1)}},
			},
			wantMin: 2, wantMax: 4,
		},
		{
			// sd = 0 ⇒ zero-width interval.
			name:      "constant",
			attempts:  tasks("P", "P"),
			wantPass1: &Estimate{Mean: 1, Tasks: 2, CI: iv(1, 1)},
			wantCurve: []PassAtK{{K: 1, Estimate: Estimate{Mean: 1, Tasks: 2, CI: iv(1, 1)}}},
			wantMin:   1, wantMax: 1,
		},
		{
			// Ten tasks, half passed: sd = √(2.5/9), half width
			// 2.262157·0.5270463/√10 = 0.3770262 → (0.1229738, 0.8770262).
			name:      "unclipped interval",
			attempts:  tasks("P", "P", "P", "P", "P", "F", "F", "F", "F", "F"),
			wantPass1: &Estimate{Mean: 0.5, Tasks: 10, CI: iv(0.1229738, 0.8770262)},
			wantCurve: []PassAtK{{K: 1, Estimate: Estimate{Mean: 0.5, Tasks: 10, CI: iv(0.1229738, 0.8770262)}}},
			wantMin:   1, wantMax: 1,
		},
		{
			name:      "one task has no interval",
			attempts:  tasks("PF"),
			wantPass1: &Estimate{Mean: 0.5, Tasks: 1},
			wantCurve: []PassAtK{{K: 1, Estimate: Estimate{Mean: 0.5, Tasks: 1}}, {K: 2, Estimate: Estimate{Mean: 1, Tasks: 1}}},
			wantMin:   2, wantMax: 2,
		},
		{
			name:     "a task with only cancelled attempts means no pass@1",
			attempts: tasks("PP", "CC"),
			wantMin:  0, wantMax: 2,
		},
		{name: "no attempts", wantMin: 0, wantMax: 0},
	}
	ciTolerance := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-6 })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(input("h", "m", eligibleRun("r", t0), tt.attempts), Options{})
			if diff := cmp.Diff(tt.wantPass1, s.Pass1, ciTolerance); diff != "" {
				t.Errorf("Summarize().Pass1 mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCurve, s.PassAtK, ciTolerance); diff != "" {
				t.Errorf("Summarize().PassAtK mismatch (-want +got):\n%s", diff)
			}
			if s.MinAttempts != tt.wantMin || s.MaxAttempts != tt.wantMax {
				t.Errorf("Summarize() attempts min/max = %d/%d, want %d/%d", s.MinAttempts, s.MaxAttempts, tt.wantMin, tt.wantMax)
			}
		})
	}
}

func TestSummarizeCounts(t *testing.T) {
	s := Summarize(input("h", "m", eligibleRun("r", t0), tasks("PFC", "EEP", "C")), Options{})
	got := [4]int{s.Tasks, s.ScoredAttempts, s.CancelledAttempts, s.Passes}
	if want := [4]int{3, 5, 2, 2}; got != want {
		t.Errorf("Summarize() tasks/scored/cancelled/passes = %v, want %v", got, want)
	}
}

func TestSummarizeUsage(t *testing.T) {
	// Task a: attempts cost 1 and 3 (mean 2), 10 s and 30 s, tokens
	// (100+20) and (300+60) (mean 240); a cancelled attempt's usage is
	// ignored. Task b: cost 4 on one attempt (the other reports none),
	// no duration, tokens 50+10. Task c reports nothing.
	attempts := []Attempt{
		{Task: "b", Outcome: Failed, CostUSD: 4, HasCost: true, InputTokens: 50, OutputTokens: 10, CacheTokens: 40, HasTokens: true},
		{Task: "a", Outcome: Passed, CostUSD: 1, HasCost: true, DurationSec: 10, HasDuration: true, InputTokens: 100, OutputTokens: 20, HasTokens: true},
		{Task: "c", Outcome: Errored},
		{Task: "a", Outcome: Errored, CostUSD: 3, HasCost: true, DurationSec: 30, HasDuration: true, InputTokens: 300, OutputTokens: 60, HasTokens: true},
		{Task: "a", Outcome: Cancelled, CostUSD: 100, HasCost: true, DurationSec: 100, HasDuration: true},
		{Task: "b", Outcome: Passed},
	}
	s := Summarize(input("h", "m", eligibleRun("r", t0), attempts), Options{})
	// Cost over tasks a, b: mean 3, sd √2, half = 12.7062047·√2/√2.
	want := struct{ Cost, Time, Tokens *Estimate }{
		Cost:   &Estimate{Mean: 3, Tasks: 2, CI: iv(0, 3+12.7062047)},
		Time:   &Estimate{Mean: 20, Tasks: 1},
		Tokens: &Estimate{Mean: 150, Tasks: 2, CI: iv(0, 150+12.7062047*90)},
	}
	got := struct{ Cost, Time, Tokens *Estimate }{s.CostPerTask, s.TimePerTask, s.TokensPerTask}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-5 })); diff != "" {
		t.Errorf("Summarize() usage mismatch (-want +got):\n%s", diff)
	}
	if s.Pass1 == nil || s.Pass1.Mean != (0.5+0.5+0)/3 {
		t.Errorf("Summarize().Pass1 = %+v, want mean 1/3", s.Pass1)
	}
}

func TestSummarizeNoUsage(t *testing.T) {
	s := Summarize(input("h", "m", eligibleRun("r", t0), tasks("P", "F")), Options{})
	if s.CostPerTask != nil || s.TimePerTask != nil || s.TokensPerTask != nil {
		t.Errorf("Summarize() usage = %+v %+v %+v, want all nil", s.CostPerTask, s.TimePerTask, s.TokensPerTask)
	}
}

func TestSummarizeOrderDoesNotMatter(t *testing.T) {
	sorted := tasks("PFP", "FFE", "PPP", "EPF")
	shuffled := slices.Clone(sorted)
	slices.Reverse(shuffled)
	shuffled[0], shuffled[5] = shuffled[5], shuffled[0]
	a := Summarize(input("h", "m", eligibleRun("r", t0), sorted), Options{})
	b := Summarize(input("h", "m", eligibleRun("r", t0), shuffled), Options{})
	if diff := cmp.Diff(a, b, approx); diff != "" {
		t.Errorf("Summarize(shuffled) differs from Summarize(sorted) (-sorted +shuffled):\n%s", diff)
	}
}

func TestSummarizeCategories(t *testing.T) {
	cats := map[string]string{"t00": "web", "t01": "web", "t02": "data", "unknown-task": "data"}
	s := Summarize(input("h", "m", eligibleRun("r", t0), tasks("PP", "PF", "FF", "PP")), Options{Categories: cats})
	// web: pass@1 1 and 1/2 → 0.75, sd = √(1/8), half = 12.706205·0.25.
	want := []CategoryScore{
		{Category: "data", Pass1: Estimate{Mean: 0, Tasks: 1}},
		{Category: "web", Pass1: Estimate{Mean: 0.75, Tasks: 2, CI: iv(0, 1)}},
	}
	if diff := cmp.Diff(want, s.Categories, approx); diff != "" {
		t.Errorf("Summarize().Categories mismatch (-want +got):\n%s", diff)
	}
}
