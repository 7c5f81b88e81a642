package pipeline_test

import (
	"cmp"
	"encoding/json"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

func TestEndToEndOracleAndNop(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.submit(pipelinetest.OracleNopConfig(3, 2))
	if r.Status != run.Pending || r.TotalSlots() != 2*8*3 {
		t.Fatalf("submitted run: status %s, %d slots; want pending, 48", r.Status, r.TotalSlots())
	}
	r = e.pumpUntil(r.ID, 5*time.Minute)
	if r.Status != run.Finished {
		t.Fatalf("run ended %s (%s), want finished", r.Status, r.Reason)
	}

	tally := e.tally(r.ID)
	want := run.Tally{Done: 48, Passed: 24, Failed: 24}
	if diff := gocmp.Diff(want, tally, cmpCounts); diff != "" {
		t.Errorf("run tally (-want +got):\n%s", diff)
	}
	if tally.DurationMS <= 0 {
		t.Errorf("run tally duration = %d ms, want > 0", tally.DurationMS)
	}
	agents, err := e.recs.Runs.Agents(e.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		if a.Status != run.Finished {
			t.Errorf("agent %d (%s) status %s, want finished", a.Index, a.Harness, a.Status)
		}
	}

	results := e.results(r.ID)
	if len(results) != 48 {
		t.Fatalf("%d attempt results, want 48 (one per slot)", len(results))
	}
	for _, res := range results {
		wantOutcome := run.Passed
		if res.Agent == 1 {
			wantOutcome = run.FailedOut
		}
		if res.Outcome != wantOutcome || res.Reward == nil || res.DurationMS <= 0 || res.Retried {
			t.Errorf("result %s: outcome %s reward %v duration %d retried %v; want %s with a reward and a duration",
				res.SlotID, res.Outcome, res.Reward, res.DurationMS, res.Retried, wantOutcome)
		}
		objs, err := e.blobs.List(e.ctx, res.ArtifactsPrefix)
		if err != nil {
			t.Fatal(err)
		}
		if !hasKey(objs, res.ArtifactsPrefix+"result.json") || !hasPrefix(objs, res.ArtifactsPrefix+"artifacts/") {
			t.Errorf("result %s: blobs under %s = %v, want result.json and artifacts/", res.SlotID, res.ArtifactsPrefix, objs)
		}
		checkHarborConfig(t, e, r, res)
	}

	steps := e.logSteps(r.ID)
	for step, min := range map[string]int{"submitted": 1, "planned": 1, "launched": 48, "result": 48, "finished": 1} {
		if steps[step] < min {
			t.Errorf("run log has %d %q lines, want ≥ %d (all: %v)", steps[step], step, min, steps)
		}
	}
	// What each task's sandbox enforced is on the run's log, once per task
	// (8 tasks), from the runner's own report.
	if steps["limits"] != 8 {
		t.Errorf("run log has %d \"limits\" lines, want 8: one per task", steps["limits"])
	}
	lines, _, err := e.recs.Runs.Logs(e.ctx, r.ID, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.Step == "limits" && (!strings.Contains(l.Message, "storage NOT enforced (host-rootfs development mode)") || !strings.Contains(l.Message, "pids limit")) {
			t.Errorf("limits line %q does not say what was and was not enforced", l.Message)
		}
	}
	if g, _ := e.recs.Runs.RunGate(e.ctx, r.ID); g != 0 {
		t.Errorf("run gate after the run = %d, want 0 (every launch released)", g)
	}
	if g, _ := e.recs.Runs.GlobalGate(e.ctx); g != 0 {
		t.Errorf("global gate after the run = %d, want 0", g)
	}

	metrics, err := e.recs.Runs.RunMetrics(e.ctx, r.ID)
	if err != nil {
		t.Fatalf("run metrics: %v", err)
	}
	if metrics.Results != 48 || len(metrics.Agents) != 2 || metrics.Agents[0].Summary.Pass1 == nil || metrics.Agents[0].Summary.Pass1.Mean != 1 {
		t.Errorf("run metrics = %+v, want 48 results and oracle pass@1 = 1", metrics)
	}

	board, err := e.recs.Boards.Leaderboard(e.ctx, testWS, "demo-bench")
	if err != nil {
		t.Fatalf("leaderboard: %v", err)
	}
	b, ok := board.Board(leaderboard.MetricPass1)
	if !ok || len(b.Rows) != 2 {
		t.Fatalf("pass@1 board = %+v, want two rows", b)
	}
	type row struct {
		Harness string
		Rank    int
		Value   float64
	}
	var got []row
	for _, rw := range b.Rows {
		got = append(got, row{rw.Entrant.Harness, rw.Rank, *rw.Value})
	}
	if diff := gocmp.Diff([]row{{"oracle", 1, 1}, {"nop", 2, 0}}, got); diff != "" {
		t.Errorf("pass@1 leaderboard rows (-want +got):\n%s", diff)
	}
	for _, rw := range b.Rows {
		if rw.TaskSet != "parity" || rw.ManifestVersion != r.ManifestVersion {
			t.Errorf("row %s measured %s@%s, want parity@%s", rw.Entrant, rw.TaskSet, rw.ManifestVersion, r.ManifestVersion)
		}
	}
}

// checkHarborConfig asserts that the stored result.json carries a Harbor
// trial config describing the slot: its trial name, the run as its job, the
// benchmark as its dataset, the run's multiplier.
func checkHarborConfig(t *testing.T, e *env, r run.Run, res run.Result) {
	t.Helper()
	rc, err := e.blobs.Get(e.ctx, res.ArtifactsPrefix+harbor.TrialResultFile)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr, err := harbor.DecodeTrialResult(rc)
	if err != nil {
		t.Fatal(err)
	}
	var c harbor.TrialConfig
	if err := json.Unmarshal(tr.Config, &c); err != nil {
		t.Fatalf("result %s: config %s: %v", res.SlotID, tr.Config, err)
	}
	wantName := run.TrialName(res.SlotID, res.Generation)
	source := cmp.Or(r.BenchmarkName, r.Benchmark)
	if tr.TrialName != wantName || c.TrialName != wantName || c.JobID != run.HarborJobID(r.ID) || c.Task.Source != source ||
		tr.Source == nil || *tr.Source != source || c.TimeoutMultiplier != r.Settings.TimeoutMultiplier {
		t.Errorf("result %s: trial %q, config %+v, source %v; want trial %q of job %s, source %q, multiplier %g",
			res.SlotID, tr.TrialName, c, tr.Source, wantName, run.HarborJobID(r.ID), source, r.Settings.TimeoutMultiplier)
	}
}
