package leaderboard

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/stats"
)

func TestSummarizePassRates(t *testing.T) {
	tests := []struct {
		name      string
		attempts  []Attempt
		wantPass1 *Estimate
		wantCurve []PassAtK
		wantHat   []PassAtK
		wantMin   int
		wantMax   int
	}{
		{
			// Per task pass@1: 2/3, 0/3 (an errored attempt without a
			// class is the agent's: a failure), 3/3 → mean 5/9 over 9
			// attempts. Intervals: Wilson with the effective sample size,
			// from pkg/stats/testdata/reference.py ("lb errored ...").
			name:      "agent errors score zero",
			attempts:  tasks("PPF", "FEE", "PPP"),
			wantPass1: &Estimate{Mean: 5.0 / 9, Tasks: 3, CI: iv(0.18666252831294644, 0.8719298592190716), Method: CIWilson},
			// pass@2: 1, 0, 1; pass@3: 1, 0, 1.
			wantCurve: []PassAtK{
				{K: 1, Estimate: Estimate{Mean: 5.0 / 9, Tasks: 3, CI: iv(0.18666252831294644, 0.8719298592190716), Method: CIWilson}},
				{K: 2, Estimate: Estimate{Mean: 2.0 / 3, Tasks: 3, CI: iv(0.20765960080204782, 0.9385080552796038), Method: CIWilson}},
				{K: 3, Estimate: Estimate{Mean: 2.0 / 3, Tasks: 3, CI: iv(0.20765960080204782, 0.9385080552796038), Method: CIWilson}},
			},
			// pass^2: C(2,2)/C(3,2) = 1/3, 0, 1; pass^3: 0, 0, 1.
			wantHat: []PassAtK{
				{K: 1, Estimate: Estimate{Mean: 5.0 / 9, Tasks: 3, CI: iv(0.18666252831294644, 0.8719298592190716), Method: CIWilson}},
				{K: 2, Estimate: Estimate{Mean: 4.0 / 9, Tasks: 3, CI: iv(0.12807014078092843, 0.8133374716870536), Method: CIWilson}},
				{K: 3, Estimate: Estimate{Mean: 1.0 / 3, Tasks: 3, CI: iv(0.06149194472039632, 0.7923403991979523), Method: CIWilson}},
			},
			wantMin: 3, wantMax: 3,
		},
		{
			// Unequal counts: pass@1 uses each task's own n (1/2 and 1/4);
			// pass@k stops at k = 2, the smallest n. Cancelled is not scored.
			// pass@2: task 0 = 1, task 1 = 1 − C(3,2)/C(4,2) = 1/2;
			// pass^2: 0 (one pass of two) and 0 (one of four).
			name:      "unequal attempt counts and cancelled",
			attempts:  tasks("PFC", "FFPF"),
			wantPass1: &Estimate{Mean: 0.375, Tasks: 2, CI: iv(0.11741744452467362, 0.7301661274508677), Method: CIWilson},
			wantCurve: []PassAtK{
				{K: 1, Estimate: Estimate{Mean: 0.375, Tasks: 2, CI: iv(0.11741744452467362, 0.7301661274508677), Method: CIWilson}},
				{K: 2, Estimate: Estimate{Mean: 0.75, Tasks: 2, CI: iv(0.36482256073733854, 0.9400102953115788), Method: CIWilson}},
			},
			wantHat: []PassAtK{
				{K: 1, Estimate: Estimate{Mean: 0.375, Tasks: 2, CI: iv(0.11741744452467362, 0.7301661274508677), Method: CIWilson}},
				{K: 2, Estimate: Estimate{Mean: 0, Tasks: 2, CI: iv(0, 0.6576197724933468), Method: CIWilson}},
			},
			wantMin: 2, wantMax: 4,
		},
		{
			// Every task passed: the interval keeps its width (Wilson of
			// 2/2), where a t interval had none.
			name:      "all passed",
			attempts:  tasks("P", "P"),
			wantPass1: &Estimate{Mean: 1, Tasks: 2, CI: iv(0.34238022750665315, 1), Method: CIWilson},
			wantCurve: []PassAtK{{K: 1, Estimate: Estimate{Mean: 1, Tasks: 2, CI: iv(0.34238022750665315, 1), Method: CIWilson}}},
			wantHat:   []PassAtK{{K: 1, Estimate: Estimate{Mean: 1, Tasks: 2, CI: iv(0.34238022750665315, 1), Method: CIWilson}}},
			wantMin:   1, wantMax: 1,
		},
		{
			// Ten tasks, half passed: Wilson of 5/10.
			name:      "one attempt per task is Wilson of passes over tasks",
			attempts:  tasks("P", "P", "P", "P", "P", "F", "F", "F", "F", "F"),
			wantPass1: &Estimate{Mean: 0.5, Tasks: 10, CI: iv(0.23659309051256405, 0.763406909487436), Method: CIWilson},
			wantCurve: []PassAtK{{K: 1, Estimate: Estimate{Mean: 0.5, Tasks: 10, CI: iv(0.23659309051256405, 0.763406909487436), Method: CIWilson}}},
			wantHat:   []PassAtK{{K: 1, Estimate: Estimate{Mean: 0.5, Tasks: 10, CI: iv(0.23659309051256405, 0.763406909487436), Method: CIWilson}}},
			wantMin:   1, wantMax: 1,
		},
		{
			name:      "one task has no interval",
			attempts:  tasks("PF"),
			wantPass1: &Estimate{Mean: 0.5, Tasks: 1},
			wantCurve: []PassAtK{{K: 1, Estimate: Estimate{Mean: 0.5, Tasks: 1}}, {K: 2, Estimate: Estimate{Mean: 1, Tasks: 1}}},
			wantHat:   []PassAtK{{K: 1, Estimate: Estimate{Mean: 0.5, Tasks: 1}}, {K: 2, Estimate: Estimate{Mean: 0, Tasks: 1}}},
			wantMin:   2, wantMax: 2,
		},
		{
			name:      "a task with only cancelled attempts is left out",
			attempts:  tasks("PP", "CC"),
			wantPass1: &Estimate{Mean: 1, Tasks: 1},
			wantCurve: []PassAtK{{K: 1, Estimate: Estimate{Mean: 1, Tasks: 1}}, {K: 2, Estimate: Estimate{Mean: 1, Tasks: 1}}},
			wantHat:   []PassAtK{{K: 1, Estimate: Estimate{Mean: 1, Tasks: 1}}, {K: 2, Estimate: Estimate{Mean: 1, Tasks: 1}}},
			wantMin:   2, wantMax: 2,
		},
		{name: "only cancelled attempts: no pass@1", attempts: tasks("CC"), wantMin: 0, wantMax: 0},
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
			if diff := cmp.Diff(tt.wantHat, s.PassHatK, ciTolerance); diff != "" {
				t.Errorf("Summarize().PassHatK mismatch (-want +got):\n%s", diff)
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
	// Cost over tasks a, b: per-task 2 and 4, mean 3; tokens 240 and 60.
	// The bootstrap intervals are from testdata/reference.py in pkg/stats
	// ("lb usage"): with two tasks, the smaller and the larger value.
	want := struct{ Cost, Time, Tokens *Estimate }{
		Cost:   &Estimate{Mean: 3, Tasks: 2, CI: iv(2, 4), Method: CIBootstrap},
		Time:   &Estimate{Mean: 20, Tasks: 1},
		Tokens: &Estimate{Mean: 150, Tasks: 2, CI: iv(60, 240), Method: CIBootstrap},
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
	// web: pass@1 1 and 1/2 → 0.75 over 4 attempts (reference.py, "lb
	// categories web").
	want := []CategoryScore{
		{Category: "data", Pass1: Estimate{Mean: 0, Tasks: 1}},
		{Category: "web", Pass1: Estimate{Mean: 0.75, Tasks: 2, CI: iv(0.300641842582402, 0.9544127391902995), Method: CIWilson}},
	}
	if diff := cmp.Diff(want, s.Categories, approx); diff != "" {
		t.Errorf("Summarize().Categories mismatch (-want +got):\n%s", diff)
	}
}

// TestSummarizeErrorRules checks the three error outcomes apart: agent
// errors score as failures, platform errors and failed judges are left out
// (n shrinks; a task left with none is left out and counted), and the
// errors-as-failures view scores every error as a failure.
func TestSummarizeErrorRules(t *testing.T) {
	attempts := []Attempt{
		{Task: "a", Outcome: Passed},
		{Task: "a", Outcome: Errored, ErrorClass: PlatformError},
		{Task: "a", Outcome: JudgeFailed},
		{Task: "b", Outcome: Errored, ErrorClass: AgentError},
		{Task: "b", Outcome: Failed},
		{Task: "c", Outcome: Passed},
		{Task: "c", Outcome: Errored}, // no class: the agent's
		{Task: "d", Outcome: Errored, ErrorClass: PlatformError},
		{Task: "d", Outcome: JudgeFailed},
		{Task: "e", Outcome: Cancelled},
	}
	s := Summarize(input("h", "m", eligibleRun("r", t0), attempts), Options{})
	wantErrors := ErrorCounts{AgentErrors: 2, PlatformErrors: 2, JudgeFailures: 2, UnscoredTasks: 1}
	if s.Errors != wantErrors {
		t.Errorf("Summarize().Errors = %+v, want %+v", s.Errors, wantErrors)
	}
	got := [5]int{s.Tasks, s.ScoredAttempts, s.CancelledAttempts, s.MinAttempts, s.MaxAttempts}
	if want := [5]int{5, 5, 1, 1, 2}; got != want {
		t.Errorf("Summarize() tasks/scored/cancelled/min/max = %v, want %v", got, want)
	}
	// Scored: a 1/1, b 0/2, c 1/2 (d has none and e only a cancelled one)
	// → 0.5 over 3 tasks and 5 attempts. Errors as failures: a 1/3, b 0/2,
	// c 1/2, d 0/2 → 5/24 over 4 tasks and 9 attempts (reference.py, "lb
	// platform excluded").
	ciTolerance := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })
	want := &Estimate{Mean: 0.5, Tasks: 3, CI: iv(0.16068966318353894, 0.8393103368164611), Method: CIWilson}
	if diff := cmp.Diff(want, s.Pass1, ciTolerance); diff != "" {
		t.Errorf("Summarize().Pass1 mismatch (-want +got):\n%s", diff)
	}
	want = &Estimate{Mean: 5.0 / 24, Tasks: 4, CI: iv(0.056940235779477266, 0.5342277091319233), Method: CIWilson}
	if diff := cmp.Diff(want, s.Pass1ErrorsAsFailures, ciTolerance); diff != "" {
		t.Errorf("Summarize().Pass1ErrorsAsFailures mismatch (-want +got):\n%s", diff)
	}
}

func TestSummarizeVariance(t *testing.T) {
	// Per task 0/3, 1/3, 2/3, 3/3: between 7/54, within 1/6 (exact
	// fractions from pkg/stats/testdata/reference.py).
	s := Summarize(input("h", "m", eligibleRun("r", t0), tasks("FFF", "PFF", "PPF", "PPP")), Options{})
	want := &Variance{Between: 7.0 / 54, Within: 1.0 / 6}
	if diff := cmp.Diff(want, s.Variance, approx); diff != "" {
		t.Errorf("Summarize().Variance mismatch (-want +got):\n%s", diff)
	}
	if s := Summarize(input("h", "m", eligibleRun("r", t0), tasks("P", "F")), Options{}); s.Variance != nil {
		t.Errorf("Summarize(one attempt per task).Variance = %+v, want nil", s.Variance)
	}
}

// TestSummarizeUsageIntervalMethod: up to BootstrapMaxTasks tasks cost gets
// the bootstrap interval, beyond it the t interval clipped at 0.
func TestSummarizeUsageIntervalMethod(t *testing.T) {
	costs := make([]float64, BootstrapMaxTasks+1)
	for i := range costs {
		costs[i] = float64(i % 7)
	}
	large := Summarize(input("h", "m", eligibleRun("r", t0), costAttempts(costs...)), Options{})
	mean, ci, _ := stats.MeanCI(costs)
	if e := large.CostPerTask; e.Method != CIT || e.CI == nil || math.Abs(e.Mean-mean) > 1e-12 || math.Abs(e.CI.Lo-ci.Lo) > 1e-12 || math.Abs(e.CI.Hi-ci.Hi) > 1e-12 {
		t.Errorf("cost over %d tasks = %+v, want the t interval %+v", len(costs), e, ci)
	}
	small := Summarize(input("h", "m", eligibleRun("r", t0), costAttempts(costs[:BootstrapMaxTasks]...)), Options{})
	if e := small.CostPerTask; e.Method != CIBootstrap || e.CI == nil {
		t.Errorf("cost over %d tasks = %+v, want a bootstrap interval", BootstrapMaxTasks, e)
	}
}
