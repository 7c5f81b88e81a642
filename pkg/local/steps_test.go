package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// stepsCatalog writes a catalog of one benchmark, demo-steps from
// examples/registry.json (its multi-step task greeter), under the key
// examples/runs/steps/oracle-nop.toml names, and returns its path.
func stepsCatalog(t *testing.T) string {
	t.Helper()
	registry, err := filepath.Abs("../../examples/registry.json")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "catalog.toml")
	catalog := fmt.Sprintf(`[[benchmarks]]
key = "demo-steps-1-0"
name = "demo-steps"
description = "The example multi-step task."
source = "demo-steps@1.0"
registry = %q
harness_requirement = "optional"
default_harness = "oracle"
judge_required = false
pass_threshold = 1.0
`, registry)
	if err := os.WriteFile(path, []byte(catalog), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMultiStepTaskEndToEnd runs examples/runs/steps/oracle-nop.toml through
// gauntlet local: sync keeps greeter's steps in the manifest, the oracle
// runs each step's solution and passes every step, nop fails the first
// step and its min_reward stops the trial; each attempt keeps its steps
// (rewards, times) with its result and its per-step logs as artifacts.
func TestMultiStepTaskEndToEnd(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir, runnerBin)
	opts.Catalog = stepsCatalog(t)
	cfg, err := os.ReadFile("../../examples/runs/steps/oracle-nop.toml")
	if err != nil {
		t.Fatal(err)
	}
	r := submitWith(t, opts, string(cfg))
	ctx := context.Background()
	p, err := local.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	recs := p.Records()
	waitFor(t, 4*time.Minute, "the run to finish", func() bool {
		got, err := recs.Runs.Run(ctx, r.ID)
		return err == nil && (got.Status == run.Finished || got.Status == run.Failed)
	})
	got, err := recs.Runs.Run(ctx, r.ID)
	if err != nil || got.Status != run.Finished {
		t.Fatalf("run = %s, %v; want finished", got.Status, err)
	}
	task, err := recs.Benchmarks.Task(ctx, got.ManifestWorkspace, got.Benchmark, got.ManifestVersion, "greeter")
	if err != nil {
		t.Fatalf("manifest task greeter: %v", err)
	}
	var names []string
	for _, s := range task.Steps {
		names = append(names, s.Name)
	}
	if fmt.Sprint(names) != "[scaffold implement document]" || task.RewardStrategy != harbor.StrategyMean || task.Steps[0].MinReward["reward"] != 1 {
		t.Errorf("manifest steps = %+v, strategy %q; want scaffold, implement, document (mean, scaffold min_reward 1)", task.Steps, task.RewardStrategy)
	}
	if task.Environment != nil && task.Environment.Unavailable != "" {
		t.Fatalf("greeter unavailable: %s", task.Environment.Unavailable)
	}
	results, err := recs.Runs.AllResults(ctx, r.ID)
	if err != nil || len(results) != 2 {
		t.Fatalf("results = %+v, %v; want two", results, err)
	}
	agents, err := recs.Runs.Agents(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		h := agents[res.Agent].Harness
		var steps []string
		for _, s := range res.Steps {
			reward := -1.0
			if s.Reward != nil {
				reward = *s.Reward
			}
			steps = append(steps, fmt.Sprintf("%s=%g", s.Name, reward))
			if s.AgentMS <= 0 && h == "oracle" {
				t.Errorf("%s step %s: agent time %d ms, want > 0", h, s.Name, s.AgentMS)
			}
		}
		want := map[string]struct {
			outcome run.Outcome
			steps   string
		}{
			"oracle": {run.Passed, "[scaffold=1 implement=1 document=1]"},
			"nop":    {run.FailedOut, "[scaffold=0]"},
		}[h]
		if res.Outcome != want.outcome || fmt.Sprint(steps) != want.steps {
			t.Errorf("%s: outcome %s, steps %v (%s); want %s, %s", h, res.Outcome, steps, res.Message, want.outcome, want.steps)
		}
		if h == "oracle" {
			for _, step := range []string{"scaffold", "implement", "document"} {
				key := res.ArtifactsPrefix + "artifacts/steps/" + step + "/verifier/reward.txt"
				if _, err := p.Blobs().Get(ctx, key); err != nil {
					t.Errorf("artifact %s: %v", key, err)
				}
			}
		}
	}
}
