package api

import "testing"

// The runner stores the sandbox's /logs/{agent,verifier,artifacts} under
// artifacts/; Harbor's job loader looks for them at the trial's top level
// (agent/trajectory.json above all).
func TestHarborTrialPath(t *testing.T) {
	tests := []struct{ stored, want string }{
		{"artifacts/agent/trajectory.json", "agent/trajectory.json"},
		{"artifacts/agent/sessions/rollout.jsonl", "agent/sessions/rollout.jsonl"},
		{"artifacts/verifier/reward.txt", "verifier/reward.txt"},
		{"artifacts/verifier/test-stdout.txt", "verifier/test-stdout.txt"},
		{"artifacts/artifacts/manifest.json", "artifacts/manifest.json"},
		// A multi-step trial's per-step outputs: Harbor's steps/<name>/.
		{"artifacts/steps/scaffold/agent/stdout.txt", "steps/scaffold/agent/stdout.txt"},
		{"artifacts/steps/scaffold/verifier/reward.txt", "steps/scaffold/verifier/reward.txt"},
		{"artifacts/stepsfile.txt", "gauntlet/stepsfile.txt"},
		{"artifacts/declared/tmp/report/summary.txt", "artifacts/tmp/report/summary.txt"},
		{"artifacts/declared/manifest.json", "artifacts/manifest.json"},
		{"artifacts/runner.log", "trial.log"},
		{"artifacts/runner-output.log", "gauntlet/runner-output.log"},
		{"artifacts/agentless.txt", "gauntlet/agentless.txt"},
		{"other.bin", "gauntlet/other.bin"},
	}
	for _, tt := range tests {
		if got := harborTrialPath(tt.stored); got != tt.want {
			t.Errorf("harborTrialPath(%q) = %q, want %q", tt.stored, got, tt.want)
		}
	}
}
