package run

import "testing"

// TestAgentLabel: an agent's name stays in its label once it has a model
// (it once showed `name = "escapegw"` with mock/gpt-5 as "mock/gpt-5
// (command)"); a model-free agent's name stands for the model.
func TestAgentLabel(t *testing.T) {
	for _, tt := range []struct {
		agent Agent
		want  string
	}{
		{Agent{Harness: "oracle"}, "oracle"},
		{Agent{Harness: "command", Name: "heuristic"}, "heuristic (command)"},
		{Agent{Harness: "codex", Model: "mock/gpt-5"}, "mock/gpt-5 (codex)"},
		{Agent{Harness: "command", Name: "escapegw", Model: "mock/gpt-5"}, "escapegw — mock/gpt-5 (command)"},
	} {
		if got := tt.agent.Label(); got != tt.want {
			t.Errorf("%+v: Label() = %q, want %q", tt.agent, got, tt.want)
		}
	}
}
