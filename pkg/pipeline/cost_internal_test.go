package pipeline

import (
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// TestScoreTrialMarksEstimatedCost: a cost the runner's gateway computed
// from the price table (metadata cost_estimated) is marked estimated on the
// result and counted in the tally; a provider-reported one is not.
func TestScoreTrialMarksEstimatedCost(t *testing.T) {
	reward := 1.0
	trial := func(meta map[string]any) harbor.TrialResult {
		cost, in := 0.0123, 1000
		return harbor.TrialResult{
			AgentResult:    &harbor.AgentResult{CostUSD: &cost, NInputTokens: &in, Metadata: meta},
			VerifierResult: &harbor.VerifierResult{Rewards: map[string]float64{"reward": reward}},
		}
	}
	for _, tc := range []struct {
		name string
		meta map[string]any
		want bool
	}{
		{"gateway list price", map[string]any{"cost_estimated": true}, true},
		{"provider reported", map[string]any{"cost_estimated": false}, false},
		{"no metadata", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := scoreTrial(run.Result{}, trial(tc.meta), 1)
			if !res.CostReported || res.CostUSD != 0.0123 {
				t.Fatalf("cost = %v reported %v, want 0.0123 reported", res.CostUSD, res.CostReported)
			}
			if res.CostEstimated != tc.want {
				t.Errorf("CostEstimated = %v, want %v", res.CostEstimated, tc.want)
			}
			wantCount := int64(0)
			if tc.want {
				wantCount = 1
			}
			d := res.Deltas()
			if d.CostEstimated != wantCount {
				t.Errorf("tally delta cost_estimated = %d, want %d", d.CostEstimated, wantCount)
			}
			if back := run.TallyFromCounters(d.Counters()); back.CostEstimated != wantCount {
				t.Errorf("counters round trip cost_estimated = %d, want %d", back.CostEstimated, wantCount)
			}
		})
	}
}

// TestScoreTrialMarksSelfReportedUsage: usage the model gateway metered
// (result.json's agent_result.metadata.model_gateway) is metered; usage
// without it — a command agent's own /logs/agent/usage.json — is marked
// self-reported, and the mark survives the tally's counters.
func TestScoreTrialMarksSelfReportedUsage(t *testing.T) {
	cost, in := 0.248, 1000
	for _, tc := range []struct {
		name  string
		agent *harbor.AgentResult
		want  bool
	}{
		{"metered by the gateway", &harbor.AgentResult{CostUSD: &cost, NInputTokens: &in,
			Metadata: map[string]any{"model_gateway": map[string]any{"calls": 3}, "cost_estimated": true}}, false},
		{"the agent's usage.json", &harbor.AgentResult{CostUSD: &cost, NInputTokens: &in}, true},
		{"tokens alone, self-reported", &harbor.AgentResult{NInputTokens: &in}, true},
		{"no usage at all", &harbor.AgentResult{}, false},
		{"no agent result", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := scoreTrial(run.Result{}, harbor.TrialResult{AgentResult: tc.agent,
				VerifierResult: &harbor.VerifierResult{Rewards: map[string]float64{"reward": 1}}}, 1)
			if res.UsageSelfReported != tc.want {
				t.Errorf("UsageSelfReported = %v, want %v", res.UsageSelfReported, tc.want)
			}
			d := run.TallyFromCounters(res.Deltas().Counters())
			if (d.UsageSelfReported == 1) != tc.want {
				t.Errorf("tally usage_self_reported = %d, want %v", d.UsageSelfReported, tc.want)
			}
		})
	}
}
