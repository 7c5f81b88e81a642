package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// hostedConfig runs a hosted model (Osmosis's form: base_model +
// lora_model_name) on a harness that reaches it through the model gateway.
const hostedConfig = `
[experiment]
benchmark = "demo-bench"
[[agents]]
harness = "terminus-2"
[agents.model]
type = "hosted"
base_model = "Qwen/Qwen3-8B"
lora_model_name = "my-finetune-step-400"
`

// TestHostedModelWithoutOperatorEndpoint checks that a platform whose
// operator configured no hosted-model endpoint (the test server has no model
// gateway config) refuses a hosted model at submit with a 422 naming
// agents[0].model.type, and writes no run.
func TestHostedModelWithoutOperatorEndpoint(t *testing.T) {
	c, err := env.Server.CreateWorkspace(context.Background(), "nohost", "erin")
	if err != nil {
		t.Fatal(err)
	}
	erin := caller{token: c.Token}
	readyBenchmark(t, erin, "demo-bench")

	e := wantError(t, erin, toml("/v1/runs", hostedConfig), http.StatusUnprocessableEntity, v1.CodeValidation)
	var details struct {
		Problems []v1.Problem `json:"problems"`
	}
	raw, _ := json.Marshal(e.Details)
	if err := json.Unmarshal(raw, &details); err != nil {
		t.Fatalf("details %s: %v", raw, err)
	}
	if len(details.Problems) != 1 || details.Problems[0].Field != "agents[0].model.type" ||
		!strings.Contains(details.Problems[0].Message, "this platform hosts no models") ||
		!strings.Contains(details.Problems[0].Message, "use provider or endpoint") {
		t.Errorf("problems = %+v, want one at agents[0].model.type saying the platform hosts no models", details.Problems)
	}
	var report v1.ValidationReport
	erin.call(t, toml("/v1/runs/validate", hostedConfig), http.StatusOK, &report)
	if report.Valid || len(report.Problems) != 1 || report.Problems[0].Field != "agents[0].model.type" {
		t.Errorf("validate = %+v, want the same problem", report)
	}
	var list v1.RunList
	erin.get(t, "/v1/runs", http.StatusOK, &list)
	if len(list.Runs) != 0 {
		t.Errorf("runs after a refused submit = %+v, want none", list.Runs)
	}

	// The harness list, which the New Run form offers from, says the same:
	// no hosted models, and which harnesses cannot run here and why.
	var harnesses v1.HarnessList
	erin.get(t, "/v1/harnesses", http.StatusOK, &harnesses)
	if harnesses.HostedModels {
		t.Error("hosted_models = true on a platform that hosts none")
	}
	availability := map[string]v1.HarnessInfo{}
	for _, h := range harnesses.Harnesses {
		availability[h.Name] = h
	}
	if h := availability["codex"]; !h.Available || h.Reason != "" {
		t.Errorf("codex = %+v, want available", h)
	}
	if h := availability["openhands"]; h.Available || !strings.Contains(h.Reason, "needs a network install") {
		t.Errorf("openhands = %+v, want unavailable naming the network install", h)
	}
}
