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
