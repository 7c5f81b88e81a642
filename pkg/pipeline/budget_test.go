package pipeline_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// TestBudgetsReachEverySlotsSpec follows [execution]'s per-attempt
// budgets from the config through the stored run's settings into every
// slot's sandbox spec, and the spec's JSON (what the runner reads).
func TestBudgetsReachEverySlotsSpec(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	launched := e.recordSpecs()
	r := e.submit(`
[experiment]
benchmark = "demo-bench"
[tasks]
task_set = "smoke"
[execution]
max_tokens_per_attempt = 150000
max_cost_usd_per_attempt = 1.25
[[agents]]
harness = "oracle"
`)
	want := run.Settings{AttemptsPerTask: 1, MaxConcurrentAttempts: 4, TimeoutMultiplier: 1, PassThreshold: 1,
		MaxTokensPerAttempt: 150000, MaxCostUSDPerAttempt: 1.25}
	stored, err := e.recs.Runs.Run(e.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, stored.Settings); diff != "" {
		t.Errorf("stored settings (-want +got):\n%s", diff)
	}
	if !strings.Contains(stored.Config, "max_tokens_per_attempt = 150000\nmax_cost_usd_per_attempt = 1.25\n") {
		t.Errorf("stored config lacks the budgets:\n%s", stored.Config)
	}
	if done := e.pumpUntil(r.ID, 20*time.Second); done.Status != run.Finished {
		t.Fatalf("run %s, want finished", done.Status)
	}
	specs := launched()
	if len(specs) != 3 {
		t.Fatalf("%d specs launched, want 3", len(specs))
	}
	for _, s := range specs {
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back sandbox.Spec
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if s.MaxTokens != 150000 || s.MaxCostUSD != 1.25 || back.MaxTokens != s.MaxTokens || back.MaxCostUSD != s.MaxCostUSD {
			t.Errorf("slot %s: spec budget %d tokens $%g, after JSON %d tokens $%g; want 150000 and $1.25", s.SlotID, s.MaxTokens, s.MaxCostUSD, back.MaxTokens, back.MaxCostUSD)
		}
		if !strings.Contains(string(data), `"max_tokens":150000,"max_cost_usd":1.25`) {
			t.Errorf("spec JSON lacks the budget: %s", data)
		}
	}
}

func TestSubmitRefusesACostBudgetForAnUnpricedModel(t *testing.T) {
	models := gateway.NewResolver()
	e := newEnv(t, envOptions{instant: true, opts: pipeline.Options{CheckModel: models.CheckModel, CheckPriced: models.CheckPriced}})
	const agents = `
[[agents]]
harness = "oracle"
[[agents]]
harness = "terminus-2"
[agents.model]
type = "endpoint"
model = "qwen3-8b"
base_url = "https://llm.example.com/v1"
api_key_secret = "ENDPOINT_KEY"
`
	problems := e.rejected(e.svc, "[experiment]\nbenchmark = \"demo-bench\"\n[execution]\nmax_cost_usd_per_attempt = 2.0\n"+agents)
	p, ok := findProblem(problems, pipeline.CodeInvalidConfig, "execution.max_cost_usd_per_attempt")
	if !ok || !strings.Contains(p.Message, `agents[1] (harness terminus-2): model "qwen3-8b" (type endpoint) has no price`) ||
		!strings.Contains(p.Message, "max_tokens_per_attempt") {
		t.Errorf("problems = %+v, want one at execution.max_cost_usd_per_attempt naming agents[1]'s unpriced model", problems)
	}
	// A token budget needs no price: the only problem left is the missing key.
	problems = e.rejected(e.svc, "[experiment]\nbenchmark = \"demo-bench\"\n[execution]\nmax_tokens_per_attempt = 100000\n"+agents)
	if len(problems) != 1 || problems[0].Code != pipeline.CodeMissingSecret {
		t.Errorf("token budget: problems = %+v, want only the missing ENDPOINT_KEY", problems)
	}
}
