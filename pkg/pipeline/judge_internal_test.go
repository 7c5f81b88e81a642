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

// TestScoreTrialFailedJudgeIsJudgeFailed: a failed LLM judge is its own
// outcome, never a zero — whether the runner recorded a judge exception
// (no reward) or the judge's latest model call failed and the verifier
// wrote a fallback reward — and it is retryable like an infra error.
func TestScoreTrialFailedJudgeIsJudgeFailed(t *testing.T) {
	failedCall, _ := json.Marshal(map[string]any{"judge": run.JudgeUsage{Model: "openai/gpt-5", Calls: 3,
		Failure: "unavailable: upstream answered 503"}})
	zero := &harbor.VerifierResult{Rewards: map[string]float64{"reward": 0}}
	tests := []struct {
		name       string
		tr         harbor.TrialResult
		wantReward bool
	}{
		{"judge exception, no reward", harbor.TrialResult{ExceptionInfo: &harbor.ExceptionInfo{
			ExceptionType: harbor.ExceptionJudgeFailed, ExceptionMessage: "the LLM judge's model calls failed"}}, false},
		{"judge key refused", harbor.TrialResult{ExceptionInfo: &harbor.ExceptionInfo{
			ExceptionType: harbor.ExceptionJudgeAuth, ExceptionMessage: "refused"}}, false},
		{"fallback zero after a failed judge call", harbor.TrialResult{VerifierResult: zero,
			Extra: map[string]json.RawMessage{run.ResultExtraKey: failedCall}}, true},
		{"agent failed too: still the judge's", harbor.TrialResult{VerifierResult: zero,
			ExceptionInfo: &harbor.ExceptionInfo{ExceptionType: harbor.ExceptionAgentTimeout},
			Extra:         map[string]json.RawMessage{run.ResultExtraKey: failedCall}}, true},
	}
	for _, tt := range tests {
		res := scoreTrial(run.Result{}, tt.tr, 1)
		if res.Outcome != run.JudgeFailed || res.ErrorClass != "" || res.Message == "" {
			t.Errorf("%s: outcome %q class %q message %q, want judge_failed, no class, a message", tt.name, res.Outcome, res.ErrorClass, res.Message)
		}
		if (res.Reward != nil) != tt.wantReward {
			t.Errorf("%s: reward %v, want one kept: %v", tt.name, res.Reward, tt.wantReward)
		}
		if !res.Retryable() {
			t.Errorf("%s: a judge_failed result is not retryable", tt.name)
		}
		if d := res.Deltas(); d.JudgeFailed != 1 || d.Failed != 0 || d.Errored != 0 {
			t.Errorf("%s: tally deltas %+v, want one judge_failed and no failure or error", tt.name, d)
		}
	}
	// A judge whose calls all succeeded leaves the verdict alone.
	ok, _ := json.Marshal(map[string]any{"judge": run.JudgeUsage{Model: "openai/gpt-5", Calls: 1}})
	res := scoreTrial(run.Result{}, harbor.TrialResult{VerifierResult: zero, Extra: map[string]json.RawMessage{run.ResultExtraKey: ok}}, 1)
	if res.Outcome != run.FailedOut {
		t.Errorf("healthy judge, reward 0: outcome %q, want failed", res.Outcome)
	}
}
