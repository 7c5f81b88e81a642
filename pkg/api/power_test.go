package api

import (
	"testing"

	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func TestRunPowerPlansTheTwoBestAgents(t *testing.T) {
	agent := func(i int, pass1 *float64) v1.AgentView {
		a := v1.AgentView{Index: i}
		if pass1 != nil {
			a.Metrics.Pass1 = &v1.Estimate{Value: *pass1}
		}
		return a
	}
	f := func(x float64) *float64 { return &x }
	// 0.6 vs 0.4 needs 100 pairs (Connor's formula, worked by hand in
	// pkg/stats/power_test.go); the 0.1 agent and the unscored one are not
	// among the two best.
	plan := runPower([]v1.AgentView{agent(1, f(0.1)), agent(2, f(0.4)), agent(3, nil), agent(4, f(0.6))}, 4)
	if plan == nil || plan.AgentA != 4 || plan.AgentB != 2 || plan.Pairs != 100 || plan.Tasks != 25 || len(plan.Assumptions) == 0 {
		t.Fatalf("plan %+v", plan)
	}
	if p := runPower([]v1.AgentView{agent(1, f(0.5)), agent(2, f(0.5))}, 1); p != nil {
		t.Fatalf("equal rates planned %+v", p)
	}
	if p := runPower([]v1.AgentView{agent(1, f(0.5)), agent(2, nil)}, 1); p != nil {
		t.Fatalf("one scored agent planned %+v", p)
	}
}
