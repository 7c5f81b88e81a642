package main

import (
	"strings"
	"testing"

	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestRunSummaryShowsTheJudgeApart: runs info names the judge's calls,
// tokens and cost on a line of their own, and the agents' totals stay
// theirs.
func TestRunSummaryShowsTheJudgeApart(t *testing.T) {
	d := v1.RunDetail{RunView: v1.RunView{ID: "r-1", Name: "judged-1", Status: "finished", Benchmark: "judged",
		Tokens: v1.Tokens{Input: 1234, Output: 56}, CostUSD: 0.01,
		Judge: &v1.JudgeUsage{Model: "openai/gpt-5", Calls: 3, Tokens: v1.Tokens{Input: 963, Output: 27}, CostUSD: 0.0012, CostEstimated: true}}}
	var b strings.Builder
	if err := printRunSummary(&b, d); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "judge openai/gpt-5: 3 calls, tokens 963 in / 27 out, cost $0.0012 (estimated) (not counted in the agents')") {
		t.Errorf("runs info lacks the judge line:\n%s", out)
	}
	if !strings.Contains(out, "cost $0.0100, tokens 1234 in / 56 out") {
		t.Errorf("the agents' totals changed:\n%s", out)
	}
	d.Judge = nil
	b.Reset()
	_ = printRunSummary(&b, d)
	if strings.Contains(b.String(), "judge ") {
		t.Errorf("a run without a judge shows one:\n%s", b.String())
	}
}
