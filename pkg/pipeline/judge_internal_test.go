package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// TestScoreTrialKeepsJudgeUsageApart: the judge's usage the runner recorded
// in result.json reaches the result and its tally deltas under the judge's
// own counters, never the agent's tokens and cost.
func TestScoreTrialKeepsJudgeUsageApart(t *testing.T) {
	cost, in, out := 0.5, 1000, 20
	extra, _ := json.Marshal(map[string]any{"isolation": "bwrap", "judge": run.JudgeUsage{Model: "openai/gpt-5", Calls: 2,
		InputTokens: 321, CacheTokens: 300, OutputTokens: 9, CostUSD: 0.000125, CostKnown: true, CostEstimated: true}})
	tr := harbor.TrialResult{
		AgentResult:    &harbor.AgentResult{CostUSD: &cost, NInputTokens: &in, NOutputTokens: &out},
		VerifierResult: &harbor.VerifierResult{Rewards: map[string]float64{"reward": 1}},
		Extra:          map[string]json.RawMessage{run.ResultExtraKey: extra},
	}
	res := scoreTrial(run.Result{}, tr, 1)
	if res.Judge == nil || res.Judge.Calls != 2 || res.Judge.InputTokens != 321 || res.Judge.OutputTokens != 9 {
		t.Fatalf("judge = %+v, want 2 calls, 321 in, 9 out", res.Judge)
	}
	if res.InputTokens != 1000 || res.OutputTokens != 20 || res.CostUSD != 0.5 {
		t.Errorf("agent usage = %d/%d $%v, want the agent's own 1000/20 $0.5", res.InputTokens, res.OutputTokens, res.CostUSD)
	}
	d := run.TallyFromCounters(res.Deltas().Counters())
	if d.JudgeCalls != 2 || d.JudgeInputTokens != 321 || d.JudgeCacheTokens != 300 || d.JudgeOutputTokens != 9 || d.JudgeCostMicroUSD != 125 || d.JudgeCostEstimated != 1 {
		t.Errorf("judge tally = %+v", d)
	}
	if d.InputTokens != 1000 || d.CostMicroUSD != 500000 {
		t.Errorf("agent tally = %d tokens %d µ$, want 1000 and 500000", d.InputTokens, d.CostMicroUSD)
	}
	if res := scoreTrial(run.Result{}, harbor.TrialResult{VerifierResult: tr.VerifierResult}, 1); res.Judge != nil {
		t.Errorf("a trial without a judge has judge usage %+v", res.Judge)
	}
}
