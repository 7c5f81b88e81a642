package pipeline_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/localsandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
)

// useDriver makes e run on a new local sandbox driver whose completions go
// to the queue completions, with a service on it built with opts.
func (e *env) useDriver(runnerPath string, completions *sqlite.Queue, opts pipeline.Options) *localsandbox.Driver {
	e.t.Helper()
	d, err := localsandbox.New(localsandbox.Config{DataDir: e.dataDir, RunnerPath: runnerPath, Isolation: sandbox.IsolationProcess,
		Blobs: e.blobs, Completions: completions, StopGrace: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		e.t.Fatalf("localsandbox.New: %v", err)
	}
	e.t.Cleanup(func() { _ = d.Close() })
	e.driver = d
	if opts.RetryBackoff == 0 {
		opts.RetryBackoff = 10 * time.Millisecond
	}
	if opts.GateDelay == 0 {
		opts.GateDelay = 20 * time.Millisecond
	}
	e.svc, err = pipeline.New(pipeline.Ports{Table: e.db.Table(), Plan: e.queues["plan"], Slots: e.queues["slots"],
		Completions: e.queues["completions"], Results: e.queues["results"], Blobs: e.blobs, Secrets: e.secrets,
		Sandboxes: d}, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// importTasks imports task directories written by writeTask as the managed
// benchmark key.
func (e *env) importTasks(key, dir string) {
	e.t.Helper()
	entry := benchmark.CatalogEntry{Key: key, Name: key, Dir: dir, HarnessRequirement: benchmark.HarnessOptional, PassThreshold: 1}
	if _, err := pipelinetest.ImportCatalogEntry(e.ctx, e.recs, pipeline.PlatformWorkspace, entry, time.Now()); err != nil {
		e.t.Fatal(err)
	}
}

type retryView struct {
	Generation    int
	Outcome       run.Outcome
	Class         run.ErrorClass
	Retried       bool
	PlatformRetry bool
}

func TestBrokenSandboxEnvironmentEndsAfterThePlatformRetryLimit(t *testing.T) {
	e := newEnv(t, envOptions{})
	// A sandbox-runner that vanished after the driver started: every launch
	// fails to start, through no fault of the run.
	gone := filepath.Join(t.TempDir(), "sandbox-runner")
	data, err := os.ReadFile(runnerBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	e.useDriver(gone, e.queues["completions"], pipeline.Options{})
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	r := e.submit(oneOracle) // max_retries = 0
	r = e.pumpUntil(r.ID, time.Minute)
	if r.Status != run.Failed {
		t.Fatalf("run ended %s (%s), want failed", r.Status, r.Reason)
	}
	var want []retryView
	for g := range pipeline.PlatformRetryLimit {
		want = append(want, retryView{g, run.Errored, run.Infra, true, true})
	}
	want = append(want, retryView{pipeline.PlatformRetryLimit, run.Errored, run.Infra, false, false})
	bySlot := map[string][]retryView{}
	for _, res := range e.results(r.ID) {
		bySlot[res.SlotID] = append(bySlot[res.SlotID], retryView{res.Generation, res.Outcome, res.ErrorClass, res.Retried, res.PlatformRetry})
		if !res.Retried && !strings.Contains(res.Message, fmt.Sprintf("re-ran this attempt %d times", pipeline.PlatformRetryLimit)) {
			t.Errorf("final result message %q does not say the platform gave up", res.Message)
		}
	}
	if len(bySlot) != 3 {
		t.Fatalf("results for %d slots, want 3", len(bySlot))
	}
	for slot, got := range bySlot {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("slot %s results (-want +got):\n%s", slot, diff)
		}
	}
	wantTally := run.Tally{Done: 3, Errored: 3, InfraErrored: 3, Retries: 3 * pipeline.PlatformRetryLimit}
	if diff := cmp.Diff(wantTally, e.tally(r.ID), cmpCounts); diff != "" {
		t.Errorf("tally (-want +got):\n%s", diff)
	}
}

func TestLostSandboxIsRunAgainWithoutUsingMaxRetries(t *testing.T) {
	e := newEnv(t, envOptions{})
	tasks := t.TempDir()
	writeTask(t, tasks, "lose-once", 60)
	e.importTasks("lost-bench", tasks)
	marks := t.TempDir()
	cfg := fmt.Sprintf(`
[experiment]
benchmark = "lost-bench"
[[agents]]
harness = "command"
command = '''if [ ! -e %[1]s/started ]; then touch %[1]s/started; sleep 60; fi; touch "$GAUNTLET_APP_DIR/done"'''
`, marks)

	// The first driver's completions go nowhere: when it goes, the platform
	// has lost its sandbox, as after a crash.
	void, err := e.db.Queue("void", sqlite.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := e.useDriver(runnerBin, void, pipeline.Options{})
	r := e.submit(cfg) // max_retries = 0
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if time.Now().After(deadline) {
			t.Fatal("the slot never ran")
		}
		e.pumpOnce()
		if _, err := os.Stat(filepath.Join(marks, "started")); err == nil {
			break
		}
		<-tick.C
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	e.useDriver(runnerBin, e.queues["completions"], pipeline.Options{LostGrace: 100 * time.Millisecond})
	r = e.pumpUntil(r.ID, time.Minute)
	if r.Status != run.Finished {
		t.Fatalf("run ended %s (%s), want finished", r.Status, r.Reason)
	}
	var got []retryView
	for _, res := range e.results(r.ID) {
		got = append(got, retryView{res.Generation, res.Outcome, res.ErrorClass, res.Retried, res.PlatformRetry})
	}
	want := []retryView{{0, run.Errored, run.Infra, true, true}, {1, run.Passed, "", false, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	slot, err := e.recs.Runs.Slot(e.ctx, r.ID, "0/lose-once/1")
	if err != nil {
		t.Fatal(err)
	}
	if slot.PlatformRetries != 1 || slot.InfraRetries() != 0 {
		t.Errorf("slot platform retries %d, infra retries %d; want 1 and 0", slot.PlatformRetries, slot.InfraRetries())
	}
	if msgs, _ := void.Receive(e.ctx, queue.MaxBatch, time.Second, 0); len(msgs) == 0 {
		t.Error("the first driver reported no completion at all; the test lost nothing")
	}
}
