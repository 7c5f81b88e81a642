package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// TestHostedModelThroughTheGateway runs real codex on a hosted model (the
// run config's base_model + lora_model_name) served at the operator's
// endpoint: the gateway forwards to the endpoint the operator's config
// names, under the adapter's name, with the operator's key from its
// api_key_file — a key no secret record holds, the user never names, and
// the sandbox never sees.
func TestHostedModelThroughTheGateway(t *testing.T) {
	mock := modelmock.NewServer(modelmock.Script{
		APIKey: modelKey, Usage: mockUsage, NoToolsText: "Mock title", // modelKey plays the operator's key
		Turns: []modelmock.Turn{{Shell: &modelmock.ShellCall{Command: probe, Description: "solve"}}, {Text: "Done."}},
	})
	defer mock.Close()
	keyFile := filepath.Join(t.TempDir(), "hosted-key")
	if err := os.WriteFile(keyFile, []byte(modelKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An OpenAI-compatible server (vLLM) that serves Responses too.
	models, err := gateway.ParseOperatorConfig([]byte(fmt.Sprintf("[hosted]\nbase_url = %q\napis = [\"openai-responses\", \"openai-chat\"]\napi_key_file = %q\n",
		mock.URL+"/v1", keyFile)))
	if err != nil {
		t.Fatal(err)
	}
	m := modelref.Model{Type: modelref.Hosted, BaseModel: "Qwen/Qwen3-8B", LoraModelName: "my-finetune-step-400"}
	spec := agentSpec(t, "codex")
	spec.Model, spec.ModelType, spec.BaseModel, spec.LoraModelName = m.Label(), string(m.Type), m.BaseModel, m.LoraModelName
	// The user's config names no key for a hosted model.
	spec.Secrets = map[string]secret.Value{"OTHER_SECRET": otherSecret}

	r, token := runAgentTrialWith(t, spec, models, onHost)
	tr := r.result
	if tr.ExceptionInfo != nil {
		t.Fatalf("exception %+v\nstdout:\n%s\nrunner log:\n%s", tr.ExceptionInfo, r.artifact(t, "agent/stdout.txt"), r.artifact(t, RunnerLogFile))
	}
	if got := rewardOf(t, tr); got != 1 {
		t.Fatalf("reward = %v, want 1\nstdout:\n%s", got, r.artifact(t, "agent/stdout.txt"))
	}
	answered := 0
	for _, req := range mock.Handler.Requests() {
		if req.Status != 200 {
			continue // the mock refuses (401) any key but the operator's
		}
		answered++
		var body struct {
			Model string `json:"model"`
		}
		if err := json.Unmarshal(req.Body, &body); err != nil || body.Model != "my-finetune-step-400" {
			t.Errorf("%s: upstream model %q (%v), want the adapter my-finetune-step-400", req.Path, body.Model, err)
		}
	}
	if answered < 2 {
		t.Errorf("the operator's endpoint answered %d calls, want the tool call and the final answer", answered)
	}
	// Hosted models have no price: tokens, no cost.
	if ar := tr.AgentResult; ar == nil || ar.NInputTokens == nil || *ar.NInputTokens != answered*1234 || ar.CostUSD != nil {
		t.Errorf("agent_result = %+v, want %d input tokens and no cost", ar, answered*1234)
	}
	h, _ := harness.Lookup("codex")
	checkSandboxSawOnlyTheToken(t, r, h)
	checkStoredTextHoldsNoSecret(t, r.out, token)
}
