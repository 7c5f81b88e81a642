package score

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// trial writes a trial result.json under dir/trialName.
func trial(t *testing.T, dir, id, trialName, task string, model *harbor.ModelInfo, rewards map[string]float64, ar *harbor.AgentResult, seconds int) {
	t.Helper()
	start := time.Date(2026, 1, 28, 14, 0, 0, 0, time.UTC)
	end := start.Add(time.Duration(seconds) * time.Second)
	tr := harbor.TrialResult{ID: id, TaskName: task, TrialName: trialName,
		TaskID: &harbor.TaskID{Path: task}, Config: json.RawMessage(`{"task":{"path":"` + task + `"}}`),
		AgentInfo:   harbor.AgentInfo{Name: "codex", Version: "0.77.0", ModelInfo: model},
		AgentResult: ar, StartedAt: &start, FinishedAt: &end}
	if rewards != nil {
		tr.VerifierResult = &harbor.VerifierResult{Rewards: rewards}
	}
	path := filepath.Join(dir, trialName, harbor.TrialResultFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := harbor.WriteTrialResult(path, tr); err != nil {
		t.Fatal(err)
	}
}

func TestReadJobDir(t *testing.T) {
	job := filepath.Join(t.TempDir(), "2026-01-28__14-00-00")
	gpt := &harbor.ModelInfo{Name: "gpt-5.2", Provider: "openai"}
	in, out, cache, cost := 1000, 200, 800, 0.5
	trial(t, job, "00000000-0000-4000-8000-000000000001", "lru-cache__aaa", "lru-cache", gpt,
		map[string]float64{"reward": 1}, &harbor.AgentResult{NInputTokens: &in, NOutputTokens: &out, NCacheTokens: &cache, CostUSD: &cost}, 90)
	trial(t, job, "00000000-0000-4000-8000-000000000002", "lru-cache__bbb", "lru-cache", gpt,
		map[string]float64{"reward": 0.5}, nil, 30)
	// No verifier result after a clean agent phase: a platform error.
	trial(t, job, "00000000-0000-4000-8000-000000000003", "csv-summary__ccc", "csv-summary", gpt, nil, nil, 10)
	// A model-less agent in a nested job.
	trial(t, filepath.Join(job, "nested"), "00000000-0000-4000-8000-000000000004", "csv-summary__ddd", "csv-summary", nil,
		map[string]float64{"only": 1}, nil, 5)
	// The job-level result.json is not a trial.
	writeFile(t, filepath.Join(job, harbor.TrialResultFile), `{"id":"x","n_total_trials":4,"stats":{}}`)

	got, err := ReadJobDir(job, 1)
	if err != nil {
		t.Fatalf("ReadJobDir() error = %v", err)
	}
	want := []leaderboard.EntrantInput{
		{Entrant: leaderboard.Entrant{Harness: "codex"}, Run: offlineRun("", ""),
			Attempts: []leaderboard.Attempt{{Task: "csv-summary", Outcome: leaderboard.Passed, DurationSec: 5, HasDuration: true}}},
		{Entrant: leaderboard.Entrant{Harness: "codex", Model: "openai/gpt-5.2"}, Run: offlineRun("", ""),
			Attempts: []leaderboard.Attempt{
				{Task: "csv-summary", Outcome: leaderboard.Errored, ErrorClass: leaderboard.PlatformError, DurationSec: 10, HasDuration: true},
				{Task: "lru-cache", Outcome: leaderboard.Passed, CostUSD: 0.5, HasCost: true, InputTokens: 1000, OutputTokens: 200, CacheTokens: 800, HasTokens: true, DurationSec: 90, HasDuration: true},
				{Task: "lru-cache", Outcome: leaderboard.Failed, DurationSec: 30, HasDuration: true},
			}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadJobDir() mismatch (-want +got):\n%s", diff)
	}
	// With threshold 0.5 the half-credit trial passes.
	got, err = ReadJobDir(job, 0.5)
	if err != nil || got[1].Attempts[2].Outcome != leaderboard.Passed {
		t.Errorf("ReadJobDir(threshold 0.5) = %+v, %v, want the 0.5 reward passed", got, err)
	}
}

func TestReadJobDirErrors(t *testing.T) {
	emptyJob := t.TempDir()
	writeFile(t, filepath.Join(emptyJob, harbor.TrialResultFile), `{"id":"x"}`)
	badTrial := t.TempDir()
	writeFile(t, filepath.Join(badTrial, "t1", harbor.TrialResultFile), `{"task_name":"a","trial_name":"t1"}`)
	brokenJSON := t.TempDir()
	writeFile(t, filepath.Join(brokenJSON, "t1", harbor.TrialResultFile), `{"task_name":`)
	tests := []struct {
		name string
		dir  string
		want []string // substrings of the error
	}{
		{"no trials", emptyJob, []string{"no trial result.json found"}},
		{"trial without agent", badTrial, []string{filepath.Join(badTrial, "t1", "result.json"), "agent_info.name is required"}},
		{"broken JSON", brokenJSON, []string{filepath.Join(brokenJSON, "t1", "result.json"), "invalid JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadJobDir(tt.dir, 1)
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("ReadJobDir() error = %v, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestReadJobDirDuplicateTrial(t *testing.T) {
	root := t.TempDir()
	gpt := &harbor.ModelInfo{Name: "gpt-5.2", Provider: "openai"}
	trial(t, filepath.Join(root, "job1"), "00000000-0000-4000-8000-000000000001", "a__x", "a", gpt, map[string]float64{"reward": 1}, nil, 1)
	trial(t, filepath.Join(root, "job2"), "00000000-0000-4000-8000-000000000002", "a__x", "a", gpt, map[string]float64{"reward": 1}, nil, 1)
	_, err := Read([]string{root}, nil, 1)
	if err == nil || !strings.Contains(err.Error(), `trial "a__x" of a is also in`) {
		t.Errorf("Read(duplicate trial) error = %v, want a duplicate-trial error", err)
	}
}

// TestReadJobDirClassifiesErrors: trials without a reward are classified as
// the platform's grader does — the agent's error after an agent-phase
// exception, judge_failed after a judge exception (even with a reward).
func TestReadJobDirClassifiesErrors(t *testing.T) {
	job := t.TempDir()
	write := func(name string, exception string, rewards map[string]float64) {
		tr := harbor.TrialResult{ID: "00000000-0000-4000-8000-00000000000" + name[:1], TaskName: "t" + name, TrialName: name,
			AgentInfo: harbor.AgentInfo{Name: "h"}, ExceptionInfo: &harbor.ExceptionInfo{ExceptionType: exception}}
		if rewards != nil {
			tr.VerifierResult = &harbor.VerifierResult{Rewards: rewards}
		}
		path := filepath.Join(job, name, harbor.TrialResultFile)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		// Written as another tool may have written it: WriteTrialResult
		// insists on the config gauntlet's own trials carry.
		data, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("1agent", harbor.ExceptionAgentTimeout, nil)
	write("2judge", harbor.ExceptionJudgeFailed, map[string]float64{"reward": 0})
	write("3verifier", harbor.ExceptionVerifierTimeout, nil)
	got, err := ReadJobDir(job, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []leaderboard.Attempt{
		{Task: "t1agent", Outcome: leaderboard.Errored, ErrorClass: leaderboard.AgentError},
		{Task: "t2judge", Outcome: leaderboard.JudgeFailed},
		{Task: "t3verifier", Outcome: leaderboard.Errored, ErrorClass: leaderboard.PlatformError},
	}
	if len(got) != 1 {
		t.Fatalf("ReadJobDir() = %d entrants, want 1", len(got))
	}
	if diff := cmp.Diff(want, got[0].Attempts); diff != "" {
		t.Errorf("ReadJobDir() attempts (-want +got):\n%s", diff)
	}
}

// TestReadJobDirMultiStep reads a Harbor job of a multi-step task as Harbor
// writes it (checked against Harbor's TrialResult model): agent_result is
// null and each step has its own, so tokens and cost are the steps' sums;
// the reward is the trial's verifier_result (Harbor's mean over the steps);
// a trial without one is errored by its last step's exception.
func TestReadJobDirMultiStep(t *testing.T) {
	got, err := ReadJobDir("testdata/multistep-job", 1)
	if err != nil {
		t.Fatalf("ReadJobDir() error = %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("entrants = %+v, want one", got)
	}
	if e := got[0].Entrant; e.Harness != "claude-code" || e.Model != "anthropic/claude-sonnet-4-5" {
		t.Errorf("entrant = %+v", e)
	}
	task := "harbor/hello-multi-step-full"
	want := []leaderboard.Attempt{
		// Step 1 failed (agent exit) and its verifier crashed: no reward.
		{Task: task, Outcome: leaderboard.Errored, ErrorClass: leaderboard.AgentError, InputTokens: 5000, OutputTokens: 400, HasTokens: true, DurationSec: 55, HasDuration: true},
		// Three steps, each rewarded 1: tokens and cost summed.
		{Task: task, Outcome: leaderboard.Passed, CostUSD: 0.021 + 0.034 + 0.018, HasCost: true, InputTokens: 41000, OutputTokens: 3500, CacheTokens: 30000, HasTokens: true, DurationSec: 160, HasDuration: true},
		// Stopped after step 1 by its min_reward: reward 0.
		{Task: task, Outcome: leaderboard.Failed, CostUSD: 0.061, HasCost: true, InputTokens: 30000, OutputTokens: 2500, HasTokens: true, DurationSec: 110, HasDuration: true},
	}
	if diff := cmp.Diff(want, got[0].Attempts, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}
