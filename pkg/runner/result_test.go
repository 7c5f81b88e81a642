package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor/harbortest"
	runpkg "github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// result.json must be a valid Harbor TrialResult: its config (required by
// Harbor) describes what ran, secrets appear by name only, and the trial
// name is one path segment, the trial's directory in a Harbor job dir.
func TestResultConfigDescribesTheTrial(t *testing.T) {
	const agentSecret, verifierSecret, literalToken = "sk-agent-0123456789", "vs-verifier-0123456789", "literal-token-0123456789"
	spec := baseSpec(t, "command")
	spec.RunID, spec.SlotID, spec.Generation = "run-7", "0/task/2", 1
	spec.LaunchID = "run-7/0/task/2/g1"
	spec.Command = "true"
	spec.Env = map[string]string{"LOG_LEVEL": "debug", "MY_API_TOKEN": literalToken}
	spec.Secrets = map[string]secret.Value{"OPENAI_API_KEY": agentSecret}
	spec.VerifierEnv = map[string]string{"STRICT": "1"}
	spec.VerifierSecrets = map[string]secret.Value{"GRADER_PASSWORD": verifierSecret}
	spec.Trial = sandbox.Trial{Source: "terminal-bench", TaskGitURL: "https://example.com/tb.git",
		TaskGitCommitID: "69671fbaac6d67a7ef0dfec016cc38a64ef7a77c", TaskPath: "tasks/task", TimeoutMultiplier: 2}
	r := runTrial(t, spec, Options{})

	data, err := os.ReadFile(filepath.Join(r.out, harbor.TrialResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := harbortest.Check(harbortest.TrialResult, data); err != nil {
		t.Errorf("result.json: %v", err)
	}
	for _, v := range []string{agentSecret, verifierSecret, literalToken} {
		if strings.Contains(string(data), v) {
			t.Errorf("result.json holds a secret value %q", v)
		}
	}
	var doc struct {
		TrialName string          `json:"trial_name"`
		Source    *string         `json:"source"`
		TaskID    map[string]any  `json:"task_id"`
		Config    json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.TrialName != "task__0-2-g1" {
		t.Errorf("trial_name = %q, want task__0-2-g1", doc.TrialName)
	}
	if doc.Source == nil || *doc.Source != "terminal-bench" {
		t.Errorf("source = %v, want terminal-bench", doc.Source)
	}
	wantID := map[string]any{"git_url": "https://example.com/tb.git", "git_commit_id": "69671fbaac6d67a7ef0dfec016cc38a64ef7a77c", "path": "tasks/task"}
	if diff := cmp.Diff(wantID, doc.TaskID); diff != "" {
		t.Errorf("task_id (-want +got):\n%s", diff)
	}
	var config map[string]any
	if err := json.Unmarshal(doc.Config, &config); err != nil {
		t.Fatalf("config is not an object: %v\n%s", err, doc.Config)
	}
	want := map[string]any{
		"task": map[string]any{"path": "tasks/task", "git_url": "https://example.com/tb.git",
			"git_commit_id": "69671fbaac6d67a7ef0dfec016cc38a64ef7a77c", "source": "terminal-bench"},
		"trial_name":         "task__0-2-g1",
		"timeout_multiplier": 2.0,
		"agent": map[string]any{"name": "command", "model_name": "acme/model-1", "kwargs": map[string]any{"command": "true"},
			"env": map[string]any{"LOG_LEVEL": "debug", "MY_API_TOKEN": "${MY_API_TOKEN}", "OPENAI_API_KEY": "${OPENAI_API_KEY}"}},
		"environment": map[string]any{"import_path": runpkg.HarborSandboxImportPath, "kwargs": map[string]any{"isolation": IsolationHostBwrap}},
		"verifier":    map[string]any{"env": map[string]any{"STRICT": "1", "GRADER_PASSWORD": "${GRADER_PASSWORD}"}},
		"job_id":      runpkg.HarborJobID("run-7"),
	}
	if diff := cmp.Diff(want, config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

// A task read from a local directory is a local task: its path is where
// the runner read it, and the multiplier defaults to 1.
func TestResultConfigLocalTask(t *testing.T) {
	spec := baseSpec(t, "nop")
	r := runTrial(t, spec, Options{})
	var config harbor.TrialConfig
	if err := json.Unmarshal(r.result.Config, &config); err != nil {
		t.Fatal(err)
	}
	want := harbor.TrialTask{Path: fixtureDir(t)}
	if config.Task != want || config.TimeoutMultiplier != 1 || config.JobID != runpkg.HarborJobID("run-1") {
		t.Errorf("config = %+v, want task %+v, multiplier 1, job id of run-1", config, want)
	}
	if r.result.TaskID == nil || *r.result.TaskID != (harbor.TaskID{Path: fixtureDir(t)}) {
		t.Errorf("task_id = %+v, want the local path", r.result.TaskID)
	}
}

// A task from a Harbor package registry is Harbor's package task: named
// org/name, pinned by its content hash, in the config and the task id; its
// trial name is one path segment.
func TestResultConfigPackageTask(t *testing.T) {
	const hash = "sha256:834e3f5b4bb03a0ce720d66d6401fcf2f58d4fefc71f891d9bf2896ab9601942"
	spec := baseSpec(t, "nop")
	spec.Task.Name, spec.SlotID, spec.LaunchID = "acme/task", "0/acme/task/1", "run-1/0/acme/task/1/g0"
	spec.Trial = sandbox.Trial{Source: "acme/bench", TaskContentHash: hash}
	r := runTrial(t, spec, Options{})
	data, err := os.ReadFile(filepath.Join(r.out, harbor.TrialResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := harbortest.Check(harbortest.TrialResult, data); err != nil {
		t.Errorf("result.json: %v", err)
	}
	var doc struct {
		TrialName string         `json:"trial_name"`
		TaskID    map[string]any `json:"task_id"`
		Config    struct {
			Task map[string]any `json:"task"`
		} `json:"config"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.TrialName != "acme~task__0-1-g0" {
		t.Errorf("trial_name = %q, want acme~task__0-1-g0", doc.TrialName)
	}
	if diff := cmp.Diff(map[string]any{"org": "acme", "name": "task", "ref": hash}, doc.TaskID); diff != "" {
		t.Errorf("task_id (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"name": "acme/task", "ref": hash, "source": "acme/bench"}, doc.Config.Task); diff != "" {
		t.Errorf("config.task (-want +got):\n%s", diff)
	}
}
