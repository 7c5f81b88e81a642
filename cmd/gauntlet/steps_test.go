package main

import (
	"archive/zip"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor/harbortest"
	"github.com/gauntlet-bench/gauntlet/pkg/server/servertest"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestCLIMultiStepRun adds demo-steps, runs the oracle and nop on its
// multi-step task, and reads the steps back: `runs info` prints each step
// of each attempt, and the Harbor job download holds Harbor's step_results
// and its steps/<name>/ directories.
func TestCLIMultiStepRun(t *testing.T) {
	srv, err := servertest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	c := cliRun{t: t, env: []string{"GAUNTLET_URL=" + srv.URL, "GAUNTLET_TOKEN=" + srv.Tenant.Token, "XDG_CONFIG_HOME=" + t.TempDir()}}
	c.ok("", "benchmark", "add", "demo-steps@1.0", "--wait")
	cfg, err := filepath.Abs("../../examples/runs/steps/oracle-nop.toml")
	if err != nil {
		t.Fatal(err)
	}
	c.ok("", "submit", cfg, "--yes", "--watch")
	var runs v1.RunList
	if err := json.Unmarshal([]byte(c.ok("", "runs", "list", "--json")), &runs); err != nil || len(runs.Runs) != 1 {
		t.Fatalf("runs list --json = %+v (%v), want one run", runs, err)
	}
	id := runs.Runs[0].ID
	out := c.ok("", "runs", "info", id)
	for _, want := range []string{
		"multi-step attempts:",
		"greeter · attempt 1 · oracle: passed, reward 1",
		"step scaffold ", "step implement ", "step document ",
		"greeter · attempt 1 · nop: failed, reward 0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("runs info lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "    step "); n != 4 {
		t.Errorf("runs info lists %d steps, want 4 (the oracle's three, nop's one):\n%s", n, out)
	}

	dir := t.TempDir()
	c.ok("", "runs", "download", id, "--format", "harbor", "-o", dir)
	zr, err := zip.OpenReader(filepath.Join(dir, id+"-harbor.zip"))
	if err != nil {
		t.Fatalf("downloaded zip: %v", err)
	}
	defer zr.Close()
	var stepFiles, multiTrials int
	for _, f := range zr.File {
		parts := strings.Split(f.Name, "/")
		if len(parts) >= 4 && parts[2] == harbor.TrialStepsDir && strings.HasSuffix(f.Name, "/verifier/reward.txt") {
			stepFiles++
		}
		if len(parts) != 3 || parts[2] != harbor.TrialResultFile {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := harbortest.Check(harbortest.TrialResult, data); err != nil {
			t.Errorf("%s is not Harbor's TrialResult: %v", f.Name, err)
		}
		var tr harbor.TrialResult
		if err := json.Unmarshal(data, &tr); err != nil {
			t.Fatal(err)
		}
		if len(tr.StepResults) > 0 {
			multiTrials++
		}
	}
	if multiTrials != 2 || stepFiles != 4 {
		t.Errorf("harbor download: %d trials with step_results, %d steps/<name>/verifier/reward.txt; want 2 and 4", multiTrials, stepFiles)
	}
}
