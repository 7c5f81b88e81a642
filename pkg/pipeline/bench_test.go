package pipeline_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// importSynthetic stores a ready benchmark of n tasks whose files are never
// read (planning and the instant driver need none).
func importSynthetic(tb testing.TB, e *env, key string, n int) {
	tb.Helper()
	tasks := make([]benchmark.Task, n)
	files := map[string]records.TaskFiles{}
	timeout := 60.0
	for i := range tasks {
		name := fmt.Sprintf("task-%05d", i)
		tasks[i] = benchmark.Task{Name: name, Category: fmt.Sprintf("cat-%d", i%7), Digest: fmt.Sprintf("sha256:%064d", i),
			AgentTimeoutSec: &timeout, VerifierTimeoutSec: 30}
		files[name] = records.TaskFiles{Dir: "/synthetic/" + name}
	}
	m := benchmark.Manifest{Key: key, Name: key, Version: "1", Tasks: tasks, Digest: benchmark.ComputeDigest(tasks),
		Source: benchmark.Source{Type: benchmark.Managed, Ref: "synthetic"}, HarnessRequirement: benchmark.HarnessOptional, PassThreshold: 1}
	if err := e.recs.PutManifest(e.ctx, pipeline.PlatformWorkspace, m, files); err != nil {
		tb.Fatal(err)
	}
	if _, err := e.recs.PutBenchmark(e.ctx, records.Benchmark{Workspace: pipeline.PlatformWorkspace, Key: key, Name: key,
		Source: m.Source, Status: records.SyncReady, ReadyVersion: "1", ReadyDigest: m.Digest, TaskCount: n}); err != nil {
		tb.Fatal(err)
	}
}

func syntheticConfig(key string, agents, attempts, concurrency int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[experiment]\nbenchmark = %q\n[execution]\nattempts_per_task = %d\nmax_concurrent_attempts = %d\n", key, attempts, concurrency)
	for i := range agents {
		fmt.Fprintf(&b, "[[agents]]\nharness = \"command\"\ncommand = \"true\"\n[agents.model]\ntype = \"hosted\"\nmodel = \"model-%d\"\n", i)
	}
	return b.String()
}

// BenchmarkPlan125kSlots measures planning a run of 125,000 slots — 5 agents
// × 2,500 tasks × 10 attempts, as a run config allows at most 8 agents —
// creating every slot and sending every slot message.
func BenchmarkPlan125kSlots(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		e := newEnv(b, envOptions{instant: true})
		importSynthetic(b, e, "big", 2500)
		r := e.submit(syntheticConfig("big", 5, 10, 4))
		b.StartTimer()
		if err := e.svc.Plan(e.ctx, pipeline.PlanMessage{SchemaVersion: pipeline.SchemaVersion, RunID: r.ID}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		got, _ := e.recs.Run(e.ctx, r.ID)
		if got.Status != run.Queued || got.SentBatches != 25 {
			b.Fatalf("after Plan: status %s, %d batches sent; want queued, 25", got.Status, got.SentBatches)
		}
		b.StartTimer()
	}
	b.ReportMetric(125000, "slots/op")
}

// BenchmarkAttemptOverhead measures the platform's own cost per attempt —
// plan → dispatch → grade → ingest → recompute, every handler run on real
// SQLite tables and queues — with the instant driver, which executes
// nothing. It reports attempts per second of wall time, everything included
// (also the stand-in sandbox writing result.json to the blob store). The
// sequential variant handles one message at a time and also reports
// platform-attempts/s, with the stand-in sandbox's own time taken out; the
// parallel one runs 4 handlers per queue, as the local platform's pollers do.
func BenchmarkAttemptOverhead(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchmarkOverhead(b, workers) })
	}
}

func benchmarkOverhead(b *testing.B, workers int) {
	const tasks = 100
	e := newEnv(b, envOptions{instant: true})
	e.workers = workers
	importSynthetic(b, e, "overhead", tasks)
	attempts := max(1, min(100, (b.N+tasks-1)/tasks))
	start := time.Now()
	b.ResetTimer()
	r := e.submit(syntheticConfig("overhead", 1, attempts, 1024))
	r = e.pumpUntil(r.ID, 10*time.Minute)
	b.StopTimer()
	elapsed := time.Since(start)
	if r.Status != run.Finished {
		b.Fatalf("run ended %s", r.Status)
	}
	n := r.TotalSlots()
	if got := e.tally(r.ID).Passed; got != int64(n) {
		b.Fatalf("%d passed, want %d", got, n)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "attempts/s")
	if workers == 1 {
		busy := e.driver.(*pipelinetest.InstantDriver).Busy()
		b.ReportMetric(float64(n)/(elapsed-busy).Seconds(), "platform-attempts/s")
	}
}
