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
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
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
// SQLite tables and queues and the file blob store — with the instant
// driver, which executes nothing, and reports attempts per second of wall
// time from the plan message to the run's end (submission is not timed).
//
// workers=N handles up to N messages of a queue at once (the local
// platform's pollers run 4). In these variants every result.json is staged
// before the clock starts, as writing it is the sandbox's work (see
// pipelinetest); the grader still reads each one. sandbox-writes=true has
// the instant driver write result.json inside Launch instead, on the clock,
// to show what the stand-in sandbox's file creation adds.
func BenchmarkAttemptOverhead(b *testing.B) {
	for _, c := range []struct {
		workers int
		staged  bool
	}{{1, true}, {4, true}, {4, false}} {
		name := fmt.Sprintf("workers=%d", c.workers)
		if !c.staged {
			name += "/sandbox-writes=true"
		}
		b.Run(name, func(b *testing.B) { benchmarkOverhead(b, c.workers, c.staged) })
	}
}

func benchmarkOverhead(b *testing.B, workers int, staged bool) {
	const tasks = 100
	e := newEnv(b, envOptions{instant: true})
	e.workers = workers
	importSynthetic(b, e, "overhead", tasks)
	attempts := max(1, min(100, (b.N+tasks-1)/tasks))
	r := e.submit(syntheticConfig("overhead", 1, attempts, 1024))
	if staged {
		stageResults(b, e, r)
	}
	b.ResetTimer()
	start := time.Now()
	r = e.pumpUntil(r.ID, 10*time.Minute)
	elapsed := time.Since(start)
	b.StopTimer()
	if r.Status != run.Finished {
		b.Fatalf("run ended %s", r.Status)
	}
	n := r.TotalSlots()
	if got := e.tally(r.ID).Passed; got != int64(n) {
		b.Fatalf("%d passed, want %d", got, n)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "attempts/s")
}

// stageResults writes the result.json of every first-generation slot of the
// run (one agent) and makes the instant driver rely on them.
func stageResults(b *testing.B, e *env, r run.Run) {
	b.Helper()
	d := e.driver.(*pipelinetest.InstantDriver)
	for attempt := 1; attempt <= r.Settings.AttemptsPerTask; attempt++ {
		for _, task := range r.Tasks {
			slot := run.SlotID(0, task, attempt)
			spec := sandbox.Spec{LaunchID: run.LaunchID(r.ID, slot, 0), SlotID: slot, Task: sandbox.TaskRef{Name: task},
				Harness: "command", Output: sandbox.Output{Prefix: pipeline.OutputPrefix(r.ID, slot, 0)}}
			if err := pipelinetest.StageResult(e.ctx, e.blobs, spec, 1, time.Now().UTC()); err != nil {
				b.Fatal(err)
			}
		}
	}
	d.Staged = true
}
