package pipeline

import (
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
)

func TestModelProblemsRejectWireAPIsTheModelDoesNotServe(t *testing.T) {
	r := gateway.NewResolver()
	check := func(m runconfig.Model, api string) error {
		route, err := r.Resolve(m)
		if err != nil {
			return err
		}
		return route.CheckHarness(gateway.WireAPI(api))
	}
	openai := &runconfig.Model{Type: runconfig.Provider, Model: "openai/gpt-5.2", APIKeySecret: "K"}
	anthropic := &runconfig.Model{Type: runconfig.Provider, Model: "anthropic/claude-sonnet-4-5", APIKeySecret: "K"}
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
	hosted := []runconfig.Agent{{Harness: "terminus-2", Model: &runconfig.Model{Type: runconfig.Hosted, BaseModel: "Qwen/Qwen3-8B", LoraModelName: "step-400"}}}
	got = modelProblems(hosted, []string{"terminus-2"}, check)
	if len(got) != 1 || got[0].Field != "agents[0].model.type" || got[0].Code != CodeInvalidConfig ||
		!strings.Contains(got[0].Message, "this platform hosts no models") || !strings.Contains(got[0].Message, "use provider or endpoint") {
		t.Errorf("hosted without an operator endpoint: problems = %+v, want one at agents[0].model.type", got)
	}
}
