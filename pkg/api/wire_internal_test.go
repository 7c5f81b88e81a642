package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestSettingsShowTheBudgets checks that GET /v1/runs/{id}'s submission
// settings carry the per-attempt budgets, and leave them out when the run
// set none.
func TestSettingsShowTheBudgets(t *testing.T) {
	s := run.Settings{AttemptsPerTask: 2, MaxConcurrentAttempts: 4, TimeoutMultiplier: 1, MaxRetries: 1, PassThreshold: 1,
		MaxTokensPerAttempt: 2_000_000, MaxCostUSDPerAttempt: 2.5}
	want := v1.Settings{AttemptsPerTask: 2, MaxConcurrentAttempts: 4, TimeoutMultiplier: 1, MaxRetries: 1, PassThreshold: 1,
		MaxTokensPerAttempt: 2_000_000, MaxCostUSDPerAttempt: 2.5}
	if diff := cmp.Diff(want, settings(s)); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	data, err := json.Marshal(settings(s))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"max_tokens_per_attempt":2000000,"max_cost_usd_per_attempt":2.5`) {
		t.Errorf("settings JSON = %s, want both budgets", data)
	}
	s.MaxTokensPerAttempt, s.MaxCostUSDPerAttempt = 0, 0
	if data, _ := json.Marshal(settings(s)); strings.Contains(string(data), "_per_attempt") {
		t.Errorf("settings without budgets = %s, want no budget keys", data)
	}
}
