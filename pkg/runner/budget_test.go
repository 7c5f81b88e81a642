package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// TestAgentOverItsBudgetEndsWithModelBudgetExceeded runs real codex with
// the run's max_tokens_per_attempt (spec.MaxTokens) or
// max_cost_usd_per_attempt (spec.MaxCostUSD) below what its first model
// call uses: that call is answered, the next is refused by the agent's
// gateway before it reaches the model, and the attempt ends as the
// agent's ModelBudgetExceededError; the verifier still runs.
func TestAgentOverItsBudgetEndsWithModelBudgetExceeded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget func(*sandbox.Spec)
		spent  string
	}{
		// One call's input + output (cached input included) spends it.
		{"tokens", func(s *sandbox.Spec) { s.MaxTokens = int64(mockUsage.Input+mockUsage.Output) - 1 }, "token budget is spent"},
		// The mock is priced at OpenAI's list prices: any call costs more.
		{"cost", func(s *sandbox.Spec) { s.MaxCostUSD = 1e-9 }, "cost budget is spent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mock := modelmock.NewServer(modelmock.Script{APIKey: modelKey, Usage: mockUsage, NoToolsText: "Mock title",
				Turns: []modelmock.Turn{{Shell: &modelmock.ShellCall{Command: probe, Description: "solve"}}, {Text: "Done."}}})
			defer mock.Close()
			spec := agentSpec(t, "codex")
			tc.budget(&spec)
			r, _ := runAgentTrial(t, spec, mock, onHost)
			e := r.result.ExceptionInfo
			if e == nil || e.ExceptionType != harbor.ExceptionModelBudget || !strings.HasPrefix(e.ExceptionMessage, gateway.FaultBudget+":") ||
				!strings.Contains(e.ExceptionMessage, tc.spent) {
				t.Fatalf("exception = %+v, want %s (%s: … %s …)\nrunner log:\n%s", e, harbor.ExceptionModelBudget, gateway.FaultBudget, tc.spent,
					r.artifact(t, RunnerLogFile))
			}
			if r.result.VerifierResult == nil {
				t.Error("the verifier did not run after the agent's budget ran out")
			}
			answered := 0
			for _, req := range mock.Handler.Requests() {
				if req.Status == 200 {
					answered++
				}
			}
			if answered != 1 {
				t.Errorf("the model answered %d calls, want 1: every call after the budget is spent is refused by the gateway", answered)
			}
			refused := 0
			for _, line := range strings.Split(strings.TrimSpace(r.artifact(t, gatewayRecord)), "\n") {
				var c struct {
					Call gateway.Call `json:"call"`
				}
				if err := json.Unmarshal([]byte(line), &c); err == nil && c.Call.Fault == gateway.FaultBudget {
					refused++
				}
			}
			if refused == 0 {
				t.Errorf("the gateway's record holds no call refused with %s:\n%s", gateway.FaultBudget, r.artifact(t, gatewayRecord))
			}
		})
	}
}

// TestSpecCarriesTheBudgetToTheRunner round-trips a spec's budgets
// through the JSON the drivers hand the runner ($GAUNTLET_SLOT_SPEC or
// --spec), which the runner decodes strictly.
func TestSpecCarriesTheBudgetToTheRunner(t *testing.T) {
	spec := baseSpec(t, "codex")
	spec.MaxTokens, spec.MaxCostUSD = 2_000_000, 2.5
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := loadSpec("", string(data))
	if err != nil {
		t.Fatalf("loadSpec: %v", err)
	}
	if got.MaxTokens != spec.MaxTokens || got.MaxCostUSD != spec.MaxCostUSD {
		t.Errorf("budget after the round trip = %d tokens, $%g; want %d, $%g", got.MaxTokens, got.MaxCostUSD, spec.MaxTokens, spec.MaxCostUSD)
	}
	// No budget, no keys: a spec without one reads as it did before.
	data, err = json.Marshal(baseSpec(t, "codex"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "max_tokens") || strings.Contains(string(data), "max_cost_usd") {
		t.Errorf("a spec without budgets carries budget keys: %s", data)
	}
}
