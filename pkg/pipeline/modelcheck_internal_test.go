package pipeline

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

func TestModelProblemsRejectWireAPIsTheModelDoesNotServe(t *testing.T) {
	r := gateway.NewResolver()
	check := func(m modelref.Model, api string) error {
		route, err := r.Resolve(m)
		if err != nil {
			return err
		}
		return route.CheckHarness(wireapi.API(api))
	}
	openai := &modelref.Model{Type: modelref.Provider, Model: "openai/gpt-5.2", APIKeySecret: "K"}
	anthropic := &modelref.Model{Type: modelref.Provider, Model: "anthropic/claude-sonnet-4-5", APIKeySecret: "K"}
	agents := []runconfig.Agent{
		{Harness: "codex", Model: openai},       // Responses: served
		{Harness: "claude-code", Model: openai}, // Messages: not served by openai
		{Harness: "opencode", Model: anthropic}, // Chat Completions: not served by anthropic
		{Harness: "claude-code", Model: anthropic},
		{Harness: "nop", Model: openai}, // calls no model
	}
	harnesses := []string{"codex", "claude-code", "opencode", "claude-code", "nop"}
	got := modelProblems(agents, harnesses, check)
	if len(got) != 2 || got[0].Field != "agents[1].model" || got[1].Field != "agents[2].model" {
		t.Fatalf("problems = %+v, want agents[1].model and agents[2].model", got)
	}
	if !strings.Contains(got[0].Message, "harness claude-code: the harness speaks Anthropic Messages") {
		t.Errorf("message = %q", got[0].Message)
	}
	if modelProblems(agents, harnesses, nil) != nil {
		t.Error("no check configured, yet problems")
	}

	// A platform whose operator hosts no models names the model type.
	hosted := []runconfig.Agent{{Harness: "terminus-2", Model: &modelref.Model{Type: modelref.Hosted, BaseModel: "Qwen/Qwen3-8B", LoraModelName: "step-400"}}}
	got = modelProblems(hosted, []string{"terminus-2"}, check)
	if len(got) != 1 || got[0].Field != "agents[0].model.type" || got[0].Code != CodeInvalidConfig ||
		!strings.Contains(got[0].Message, "this platform hosts no models") || !strings.Contains(got[0].Message, "use provider or endpoint") {
		t.Errorf("hosted without an operator endpoint: problems = %+v, want one at agents[0].model.type", got)
	}
}

func TestCostBudgetNeedsEveryGatewayAgentsModelPriced(t *testing.T) {
	r, err := gateway.ParseOperatorConfig([]byte("[hosted]\nbase_url = \"http://vllm.internal:8000/v1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := runconfig.Config{Execution: runconfig.Execution{MaxCostUSDPerAttempt: 2}, Agents: []runconfig.Agent{
		{Harness: "codex", Model: &modelref.Model{Type: modelref.Provider, Model: "openai/gpt-5.2", APIKeySecret: "K"}}, // priced
		{Harness: "terminus-2", Model: &modelref.Model{Type: modelref.Endpoint, Model: "qwen", BaseURL: "https://llm.example.com/v1", APIKeySecret: "K"}},
		{Harness: "terminus-2", Name: "lora", Model: &modelref.Model{Type: modelref.Hosted, BaseModel: "Qwen/Qwen3-8B", LoraModelName: "step-400"}},
		{Harness: "codex", Name: "unlisted", Model: &modelref.Model{Type: modelref.Provider, Model: "openai/no-such-model-9", APIKeySecret: "K"}},
		{Harness: "claude-code", Model: &modelref.Model{Type: modelref.Provider, Model: "openai/gpt-5.2", APIKeySecret: "K"}}, // refused by CheckModel
		{Harness: "oracle"}, // calls no model
	}}
	harnesses := []string{"codex", "terminus-2", "terminus-2", "codex", "claude-code", "oracle"}
	got := budgetProblems(cfg, harnesses, r.CheckModel, r.CheckPriced)
	want := []string{
		`agents[1] (harness terminus-2): model "qwen" (type endpoint) has no price`,
		`agents[2] (harness terminus-2): model "Qwen/Qwen3-8B:step-400" (type hosted) has no price`,
		`agents[3] (harness codex): the platform's price table`,
	}
	if len(got) != len(want) {
		t.Fatalf("problems = %+v, want %d", got, len(want))
	}
	for i, p := range got {
		if p.Field != "execution.max_cost_usd_per_attempt" || p.Code != CodeInvalidConfig || !strings.Contains(p.Message, want[i]) ||
			!strings.Contains(p.Message, "remove max_cost_usd_per_attempt") {
			t.Errorf("problem %d = %+v, want at execution.max_cost_usd_per_attempt: …%s…", i, p, want[i])
		}
	}
	if !strings.Contains(got[2].Message, `no price for model "no-such-model-9" of provider openai`) {
		t.Errorf("unlisted model: %q", got[2].Message)
	}

	// Without a cost budget, or without a check configured, nothing is refused.
	tokensOnly := cfg
	tokensOnly.Execution = runconfig.Execution{MaxTokensPerAttempt: 1000}
	if p := budgetProblems(tokensOnly, harnesses, r.CheckModel, r.CheckPriced); p != nil {
		t.Errorf("token budget only: problems %+v", p)
	}
	if p := budgetProblems(cfg, harnesses, r.CheckModel, nil); p != nil {
		t.Errorf("no price check: problems %+v", p)
	}
}

func TestBudgetWarnsOfAgentsThatBypassTheGateway(t *testing.T) {
	cfg := runconfig.Config{Execution: runconfig.Execution{MaxTokensPerAttempt: 1000}, Agents: []runconfig.Agent{
		{Harness: "codex", Model: &modelref.Model{Type: modelref.Provider, Model: "openai/gpt-5.2", APIKeySecret: "K"}},
		{Harness: "cursor-cli", Model: &modelref.Model{Type: modelref.Provider, Model: "openai/gpt-5.2", APIKeySecret: "K"}},
		{Harness: "oracle"},
	}}
	harnesses := []string{"codex", "cursor-cli", "oracle"}
	got := budgetWarnings(cfg, harnesses)
	if len(got) != 1 || !strings.Contains(got[0], "agents[1]: harness cursor-cli calls its model itself") {
		t.Errorf("warnings = %q, want one for agents[1] (cursor-cli)", got)
	}
	cfg.Execution = runconfig.Execution{}
	if got := budgetWarnings(cfg, harnesses); got != nil {
		t.Errorf("no budget: warnings %q", got)
	}
}

func TestMemoryWarnsOfTasksBelowAHarnesssNeed(t *testing.T) {
	m := benchmark.Manifest{Tasks: []benchmark.Task{
		{Name: "small", MemoryMB: 512}, {Name: "tiny", MemoryMB: 256}, {Name: "big", MemoryMB: 4096}, {Name: "unlimited"},
	}}
	tasks := []string{"small", "tiny", "big", "unlimited"}
	opencode, _ := harness.Lookup("opencode")
	got := memoryWarnings([]string{"codex", "opencode", "oracle"}, tasks, m)
	// codex (256 MB) fits every task; oracle runs nothing of its own.
	if len(got) != 1 || !strings.Contains(got[0], fmt.Sprintf("agents[1]: harness opencode needs about %d MB", opencode.MemoryMB)) ||
		!strings.Contains(got[0], "2 of the 4 tasks") || !strings.Contains(got[0], "as little as 256 MB: small, tiny") {
		t.Errorf("warnings = %q, want one for agents[1] (opencode) naming small and tiny", got)
	}
	if got := memoryWarnings([]string{"opencode"}, []string{"big", "unlimited"}, m); got != nil {
		t.Errorf("tasks with room: warnings %q", got)
	}
}
