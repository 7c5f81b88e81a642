package local_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
)

var runnerBin string

// helperEnv, when set in the environment, turns the test binary into the
// crash test's platform process: it runs the platform on that data dir
// until killed.
const helperEnv = "GAUNTLET_LOCAL_HELPER_DATA_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(runHelper(dir, os.Getenv("GAUNTLET_LOCAL_HELPER_RUNNER")))
	}
	tmp, err := os.MkdirTemp("", "gauntlet-local-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runnerBin = filepath.Join(tmp, "sandbox-runner")
	build := exec.Command("go", "build", "-o", runnerBin, "../../cmd/sandbox-runner")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static: image sandboxes run it inside the image, as make build makes it
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build sandbox-runner: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(tmp)
	os.Exit(code)
}

func testOptions(dataDir, runner string) local.Options {
	return local.Options{
		DataDir: dataDir, RunnerPath: runner, Catalog: "../../examples/catalog.toml", Isolation: "bwrap-host", // the example tasks run on the host rootfs (development mode) until they carry images
		WatchInterval: 300 * time.Millisecond, Visibility: 3 * time.Second,
		Pipeline: pipeline.Options{GateDelay: 50 * time.Millisecond, RetryBackoff: 50 * time.Millisecond,
			LaunchTimeout: 3 * time.Second, LostGrace: time.Second},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

// prodTimingEnv, set for the helper, gives it the platform's default
// watchdog timing (30 s period, LostGrace and visibility in minutes), so
// only the restart reconcile can make recovery fast.
const prodTimingEnv = "GAUNTLET_LOCAL_HELPER_PROD_TIMING"

// Image sandboxes for the helper: the catalog and the rootfs of
// withImageSandboxes (both unset = the examples on bwrap-host).
const (
	helperCatalogEnv = "GAUNTLET_LOCAL_HELPER_CATALOG"
	helperRootfsEnv  = "GAUNTLET_LOCAL_HELPER_ROOTFS"
)

func runHelper(dataDir, runner string) int {
	ctx := context.Background()
	opts := testOptions(dataDir, runner)
	if catalog := os.Getenv(helperCatalogEnv); catalog != "" {
		opts = withImageSandboxes(opts, catalog, os.Getenv(helperRootfsEnv))
	}
	if os.Getenv(prodTimingEnv) != "" {
		opts.WatchInterval, opts.Visibility = 0, 0
		opts.Pipeline.LaunchTimeout, opts.Pipeline.LostGrace, opts.Pipeline.RetryBackoff = 0, 0, 0
	}
	p, err := local.Open(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := p.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	select {} // until killed
}

const ws = "ws1"

// submit opens the platform without starting it, sets billing, submits cfg
// and closes it again.
func submit(t *testing.T, dataDir, cfg string) run.Run {
	t.Helper()
	return submitWith(t, testOptions(dataDir, runnerBin), cfg)
}

// submitWith is submit on a platform opened with opts.
func submitWith(t *testing.T, opts local.Options, cfg string) run.Run {
	t.Helper()
	ctx := context.Background()
	p, err := local.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Records().Workspaces.PutBilling(ctx, ws, records.Billing{Status: records.BillingActive, Plan: "local"}); err != nil {
		t.Fatal(err)
	}
	res, err := p.Service().Submit(ctx, pipeline.SubmitRequest{Workspace: ws, User: "u1", Document: []byte(cfg)})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return res.Run
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func TestPlatformRunsToLeaderboard(t *testing.T) {
	dir := t.TempDir()
	r := submit(t, dir, pipelinetest.OracleNopConfig(3, 2))
	ctx := context.Background()
	p, err := local.Open(ctx, testOptions(dir, runnerBin))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	recs := p.Records()
	var board records.Leaderboard
	waitFor(t, 3*time.Minute, "the leaderboard", func() bool {
		var err error
		board, err = recs.Boards.Leaderboard(ctx, ws, "demo-bench")
		return err == nil
	})
	got, err := recs.Runs.Run(ctx, r.ID)
	if err != nil || got.Status != run.Finished {
		t.Fatalf("run = %s, %v; want finished", got.Status, err)
	}
	b, _ := board.Board(leaderboard.MetricPass1)
	if len(b.Rows) != 2 {
		t.Fatalf("pass@1 board = %+v, want two rows", b)
	}
	for _, row := range b.Rows {
		want := map[string]struct {
			rank  int
			value float64
		}{"oracle": {1, 1}, "nop": {2, 0}}[row.Entrant.Harness]
		if row.Rank != want.rank || row.Value == nil || *row.Value != want.value {
			t.Errorf("row %s: rank %d value %v, want rank %d value %v", row.Entrant.Harness, row.Rank, row.Value, want.rank, want.value)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

const crashConfig = `
[experiment]
benchmark = "demo-bench"
[tasks]
task_set = "smoke"
[execution]
attempts_per_task = 3
max_concurrent_attempts = 2
max_retries = 0
[[agents]]
harness = "oracle"
[[agents]]
harness = "command"
command = "sleep 1"
`

func startHelper(t *testing.T, dir string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+dir, "GAUNTLET_LOCAL_HELPER_RUNNER="+runnerBin), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestCrashAndRestartFinishesEverySlotOnce(t *testing.T) {
	dir := t.TempDir()
	r := submit(t, dir, crashConfig)
	db, err := sqlite.Open(filepath.Join(dir, "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recs := records.New(db.Table())
	ctx := context.Background()

	first := startHelper(t, dir)
	waitFor(t, 2*time.Minute, "a few results and a running sandbox", func() bool {
		tally, _ := recs.Runs.RunTally(ctx, r.ID)
		active, _, _ := recs.Runs.Slots(ctx, r.ID, records.ActiveSlots, "", 10)
		return tally.Done >= 3 && len(active) > 0
	})
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	before, _ := recs.Runs.RunTally(ctx, r.ID)
	t.Logf("killed the platform with %d of %d slots done", before.Done, r.TotalSlots())

	second := startHelper(t, dir)
	defer func() {
		_ = second.Process.Signal(syscall.SIGKILL)
		_ = second.Wait()
	}()
	waitFor(t, 3*time.Minute, "the run to end", func() bool {
		got, _ := recs.Runs.Run(ctx, r.ID)
		return got.Status.Terminal()
	})
	got, _ := recs.Runs.Run(ctx, r.ID)
	if got.Status != run.Finished {
		t.Fatalf("run ended %s (%s), want finished", got.Status, got.Reason)
	}
	results, err := recs.Runs.AllResults(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	finals := map[string]int{}
	for _, res := range results {
		if res.Final() {
			finals[res.SlotID]++
		}
	}
	if len(finals) != r.TotalSlots() {
		t.Errorf("%d slots have a final result, want %d", len(finals), r.TotalSlots())
	}
	for slot, n := range finals {
		if n != 1 {
			t.Errorf("slot %s has %d final results, want exactly 1", slot, n)
		}
	}
	// The crash is the platform's fault: attempts it cut short run again
	// without using max_retries (0 here), so none ends errored.
	for _, res := range results {
		if res.Final() && res.Outcome == run.Errored {
			t.Errorf("slot %s generation %d ended errored (%s: %s), want it re-run after the crash", res.SlotID, res.Generation, res.ErrorClass, res.Message)
		}
		if res.Retried && !res.PlatformRetry {
			t.Errorf("slot %s generation %d was retried against max_retries = 0: %s", res.SlotID, res.Generation, res.Message)
		}
	}
	tally, _ := recs.Runs.RunTally(ctx, r.ID)
	if tally.Done != int64(r.TotalSlots()) || tally.Passed+tally.Failed != int64(r.TotalSlots()) || tally.Errored != 0 {
		t.Errorf("tally = %+v, want %d done, none errored", tally, r.TotalSlots())
	}
	if tally.Passed != 9 {
		t.Errorf("oracle passes = %d, want all 9 oracle slots passing", tally.Passed)
	}
	checkNothingLeft(t, filepath.Join(dir, "sandboxes"))
}
