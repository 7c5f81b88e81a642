package pipeline_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

const stopConfig = `
[experiment]
benchmark = "demo-bench"
[tasks]
task_set = "smoke"
[execution]
attempts_per_task = 2
max_concurrent_attempts = 2
[[agents]]
harness = "command"
command = 'case "$GAUNTLET_TASK" in csv-summary) exit 0;; *) sleep 120;; esac'
`

func TestStopInTheMiddle(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.submit(stopConfig)
	deadline := time.Now().Add(2 * time.Minute)
	idle := time.NewTicker(20 * time.Millisecond)
	defer idle.Stop()
	for {
		if time.Now().After(deadline) {
			t.Fatal("the run never had a result and two running sandboxes")
		}
		if !e.pumpOnce() {
			<-idle.C
		}
		running, _, err := e.recs.Runs.Slots(e.ctx, r.ID, records.ActiveSlots, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if e.tally(r.ID).Done >= 1 && len(running) == 2 && running[0].Status == run.SlotRunning && running[1].Status == run.SlotRunning {
			break
		}
	}
	launchedBefore := e.logSteps(r.ID)["launched"]
	before := e.results(r.ID)

	stopped, err := e.svc.Stop(e.ctx, r.ID, testUser)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if stopped.Status != run.Stopping && stopped.Status != run.Stopped {
		t.Errorf("status after Stop = %s, want stopping or stopped", stopped.Status)
	}
	r = e.pumpUntil(r.ID, time.Minute)
	if r.Status != run.Stopped {
		t.Fatalf("run ended %s, want stopped", r.Status)
	}
	// Drain every message still queued (until three pumps in a row find
	// nothing), then check none of them launched a sandbox.
	for quiet := 0; quiet < 3; {
		if e.pumpOnce() {
			quiet = 0
		} else {
			quiet++
		}
	}
	if got := e.logSteps(r.ID)["launched"]; got != launchedBefore {
		t.Errorf("%d launches after the stop, want none", got-launchedBefore)
	}
	if live, _ := e.driver.List(e.ctx, r.ID); len(live) != 0 {
		t.Errorf("driver still lists %d sandboxes", len(live))
	}
	if procs := processesMentioning(t, e.dataDir); len(procs) != 0 {
		t.Errorf("sandbox processes left: %v", procs)
	}

	after := e.results(r.ID)
	byID := map[string]run.Result{}
	for _, res := range after {
		byID[res.SlotID] = res
	}
	for _, res := range before {
		if diff := cmp.Diff(res, byID[res.SlotID]); diff != "" {
			t.Errorf("result %s changed by the stop (-before +after):\n%s", res.SlotID, diff)
		}
	}
	if len(after) != 6 {
		t.Fatalf("%d results after the stop, want 6 (one per slot)", len(after))
	}
	tally := e.tally(r.ID)
	if tally.Done != 6 || tally.Cancelled != int64(6-len(before)) {
		t.Errorf("tally = %+v, want 6 done of which %d cancelled", tally, 6-len(before))
	}
	if _, err := e.svc.Stop(e.ctx, r.ID, testUser); err != nil {
		t.Errorf("stopping a stopped run again = %v, want nil", err)
	}
	agents, _ := e.recs.Runs.Agents(e.ctx, r.ID)
	if agents[0].Status != run.Stopped {
		t.Errorf("agent status %s, want stopped", agents[0].Status)
	}
}

func TestStopAfterFinishIsRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.submit(oneOracle)
	r = e.pumpUntil(r.ID, time.Minute)
	if _, err := e.svc.Stop(e.ctx, r.ID, testUser); !errorsIs(err, pipeline.ErrNotStoppable) {
		t.Errorf("Stop of a %s run = %v, want ErrNotStoppable", r.Status, err)
	}
}

// processesMentioning lists processes whose command line contains s.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ent := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if line := strings.ReplaceAll(string(cmdline), "\x00", " "); strings.Contains(line, s) {
			out = append(out, ent.Name()+": "+line)
		}
	}
	return out
}

// writeTask writes a minimal Harbor task whose verifier passes when the
// agent created $GAUNTLET_APP_DIR/done (paths from the environment, so it
// runs under process isolation too).
func writeTask(t *testing.T, dir, name string, agentTimeout float64) {
	t.Helper()
	root := filepath.Join(dir, name)
	files := map[string]string{
		"task.toml": fmt.Sprintf("schema_version = \"1.4\"\n[metadata]\ncategory = \"test\"\ndifficulty = \"easy\"\n"+
			"[agent]\ntimeout_sec = %v\n[verifier]\ntimeout_sec = 30.0\n[environment]\nnetwork_mode = \"no-network\"\n", agentTimeout),
		"instruction.md": "Create the file done in the working directory.\n",
		"tests/test.sh": "#!/usr/bin/env bash\nif [ -f \"$GAUNTLET_APP_DIR/done\" ]; then r=1; else r=0; fi\n" +
			"echo $r > \"$GAUNTLET_VERIFIER_LOGS_DIR/reward.txt\"\n",
	}
	for rel, body := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInfraErrorRetriedAgentTimeoutNot(t *testing.T) {
	e := newEnv(t, envOptions{isolation: sandbox.IsolationProcess})
	tasks := t.TempDir()
	writeTask(t, tasks, "crash-once", 60)
	writeTask(t, tasks, "slow", 1)
	entry := benchmark.CatalogEntry{Key: "retry-bench", Name: "retry-bench", Dir: tasks,
		HarnessRequirement: benchmark.HarnessOptional, PassThreshold: 1}
	if _, err := pipelinetest.ImportCatalogEntry(e.ctx, e.recs, pipeline.PlatformWorkspace, entry, time.Now()); err != nil {
		t.Fatal(err)
	}
	marks := t.TempDir()
	command := fmt.Sprintf(`printf '{"input_tokens": 120, "cache_tokens": 20, "output_tokens": 30, "cost_usd": 0.25}' > "$GAUNTLET_AGENT_LOGS_DIR/usage.json"
case "$GAUNTLET_TASK" in
crash-once)
  if [ ! -e %[1]s/crashed ]; then touch %[1]s/crashed; kill -9 $PPID; sleep 5; fi
  touch "$GAUNTLET_APP_DIR/done";;
slow) touch "$GAUNTLET_APP_DIR/done"; sleep 30;;
esac`, marks)
	cfg := fmt.Sprintf(`
[experiment]
benchmark = "retry-bench"
[execution]
attempts_per_task = 1
max_concurrent_attempts = 2
max_retries = 2
[[agents]]
harness = "command"
command = '''%s'''
`, command)
	r := e.submit(cfg)
	r = e.pumpUntil(r.ID, 2*time.Minute)
	if r.Status != run.Finished {
		t.Fatalf("run ended %s (%s), want finished", r.Status, r.Reason)
	}
	type view struct {
		Slot       string
		Generation int
		Outcome    run.Outcome
		Class      run.ErrorClass
		Retried    bool
		Tokens     int64
	}
	var got []view
	for _, res := range e.results(r.ID) {
		got = append(got, view{res.SlotID, res.Generation, res.Outcome, res.ErrorClass, res.Retried, res.InputTokens})
		if res.SlotID == "0/slow/1" && !strings.Contains(res.Message, harbor.ExceptionAgentTimeout) {
			t.Errorf("slow result message %q does not name the agent timeout", res.Message)
		}
	}
	want := []view{
		{"0/crash-once/1", 0, run.Errored, run.Infra, true, 0},
		{"0/crash-once/1", 1, run.Passed, "", false, 120},
		{"0/slow/1", 0, run.Passed, run.AgentError, false, 120},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	tally := e.tally(r.ID)
	// The command agent's usage.json, no model gateway: self-reported.
	wantTally := run.Tally{Done: 2, Passed: 2, Retries: 1, InputTokens: 240, CacheTokens: 40, OutputTokens: 60, CostMicroUSD: 500000, UsageSelfReported: 2}
	if diff := cmp.Diff(wantTally, tally, cmpNoDuration); diff != "" {
		t.Errorf("tally (-want +got):\n%s", diff)
	}
	if steps := e.logSteps(r.ID); steps["retry"] != 1 {
		t.Errorf("run log has %d retry lines, want 1", steps["retry"])
	}
}
