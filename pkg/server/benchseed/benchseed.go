// Package benchseed seeds a data dir with a large finished benchmark.
//
// It fills a `gauntlet local` data dir with a large finished
// benchmark for the API load test (scripts/bench-api.sh): one synthetic
// benchmark, N entrants each with its own finished run over every task with
// A attempts, the stored run metrics and the leaderboard, written straight
// into the data model (no sandboxes), exactly as the pipeline stores them.
package benchseed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Shape is the size of the seeded benchmark.
type Shape struct {
	Entrants, Tasks, Attempts int
	// Categories spreads the tasks over this many categories (0: tasks
	// without a category, as many Harbor datasets have).
	Categories int
}

// Name is the seeded benchmark's dataset name (its key is
// benchmark.KeyFor(Name, "1.0")).
const Name = "api-bench"

// Seeded names what Seed wrote.
type Seeded struct {
	Benchmark string   `json:"benchmark"`
	Runs      []string `json:"runs"`
	Results   int      `json:"results"`
}

// Seed writes the benchmark, its runs and results into workspace ws, then
// recomputes every run's metrics and the leaderboard with the pipeline.
func Seed(ctx context.Context, svc *pipeline.Service, ws string, shape Shape) (Seeded, error) {
	recs := svc.Records()
	m, err := manifest(shape.Tasks, shape.Categories)
	if err != nil {
		return Seeded{}, err
	}
	if err := recs.Benchmarks.PutManifest(ctx, ws, m, nil); err != nil {
		return Seeded{}, err
	}
	now := time.Now().UTC()
	if _, err := recs.Benchmarks.PutBenchmark(ctx, records.Benchmark{Workspace: ws, Key: m.Key, Name: m.Name, Source: m.Source,
		Status: records.SyncReady, Synced: len(m.Tasks), Total: len(m.Tasks), ReadyVersion: m.Version, ReadyDigest: m.Digest,
		TaskCount: len(m.Tasks), CreatedAt: now, UpdatedAt: now}); err != nil {
		return Seeded{}, err
	}
	out := Seeded{Benchmark: m.Key}
	rng := rand.New(rand.NewPCG(1, 2))
	for e := range shape.Entrants {
		id := fmt.Sprintf("r-seed-%03d", e)
		n, err := seedRun(ctx, recs, ws, id, e, m, shape.Attempts, now.Add(time.Duration(e)*time.Second), rng)
		if err != nil {
			return out, err
		}
		if err := svc.RecomputeRun(ctx, id); err != nil {
			return out, err
		}
		out.Runs, out.Results = append(out.Runs, id), out.Results+n
	}
	return out, svc.RecomputeLeaderboard(ctx, ws, m.Key)
}

func manifest(n, categories int) (benchmark.Manifest, error) {
	tasks := make([]benchmark.Task, n)
	for i := range tasks {
		name := fmt.Sprintf("task-%04d", i)
		sum := sha256.Sum256([]byte(name))
		tasks[i] = benchmark.Task{Name: name, Difficulty: []string{"easy", "medium", "hard"}[i%3], Digest: "sha256:" + hex.EncodeToString(sum[:])}
		if categories > 0 {
			tasks[i].Category = fmt.Sprintf("category-%d", i%categories)
		}
	}
	return benchmark.HarborManifest(Name, "1.0", "synthetic benchmark of the API load test", tasks)
}

// seedRun writes one finished single-agent run with every result and its
// tallies; entrant e passes a task with a probability that falls with e.
func seedRun(ctx context.Context, recs *records.Store, ws, id string, e int, m benchmark.Manifest, attempts int,
	at time.Time, rng *rand.Rand) (int, error) {
	r := run.Run{ID: id, Workspace: ws, Name: fmt.Sprintf("seed-%03d", e), Benchmark: m.Key, BenchmarkName: m.Name,
		ManifestWorkspace: ws, ManifestVersion: m.Version, ManifestDigest: m.Digest, FullTaskList: true, Tasks: m.TaskNames(),
		Settings: run.Settings{AttemptsPerTask: attempts, MaxConcurrentAttempts: 8, TimeoutMultiplier: 1, PassThreshold: 1},
		Status:   run.Finished, Planned: true, Agents: 1, CreatedAt: at, QueuedAt: at, StartedAt: at, EndedAt: at.Add(time.Hour)}
	agent := run.Agent{RunID: id, Index: 0, Harness: fmt.Sprintf("harness-%d", e%5), Model: fmt.Sprintf("provider/model-%03d", e),
		ModelType: "provider", Status: run.Finished, StartedAt: r.StartedAt, EndedAt: r.EndedAt}
	var ops records.Ops
	created, err := records.CreateRunOp(r)
	ops.AddAll(created[:1], err) // no active marker: the run is over
	ops.Add(records.CreateAgentOp(agent))
	if err := ops.Transact(ctx, recs); err != nil {
		return 0, fmt.Errorf("seed run %s: %w", id, err)
	}
	skill := 0.9 - 0.8*float64(e)/50
	var tally run.Tally
	batch := make([]store.Op, 0, store.MaxTransactOps)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := recs.Transact(ctx, batch)
		batch = batch[:0]
		return err
	}
	n := 0
	for _, task := range r.Tasks {
		for a := 1; a <= attempts; a++ {
			res := result(id, task, a, skill, r.StartedAt, rng)
			op, err := records.ResultOp(res)
			if err != nil {
				return n, err
			}
			batch = append(batch, op)
			d := res.Deltas()
			tally = addTally(tally, d)
			n++
			if len(batch) == cap(batch) {
				if err := flush(); err != nil {
					return n, fmt.Errorf("seed results of %s: %w", id, err)
				}
			}
		}
	}
	if err := flush(); err != nil {
		return n, fmt.Errorf("seed results of %s: %w", id, err)
	}
	return n, recs.Transact(ctx, []store.Op{records.RunTallyOp(id, tally), records.AgentTallyOp(id, 0, tally)})
}

func result(runID, task string, attempt int, skill float64, at time.Time, rng *rand.Rand) run.Result {
	reward := 0.0
	outcome := run.FailedOut
	if rng.Float64() < skill {
		reward, outcome = 1, run.Passed
	}
	slot := run.SlotID(0, task, attempt)
	dur := int64(20_000 + rng.IntN(100_000))
	return run.Result{RunID: runID, SlotID: slot, Agent: 0, Task: task, Attempt: attempt, Outcome: outcome, Reward: &reward,
		InputTokens: int64(5_000 + rng.IntN(50_000)), OutputTokens: int64(500 + rng.IntN(5_000)), CostUSD: 0.01 + rng.Float64()/10,
		UsageReported: true, CostReported: true, DurationMS: dur, StartedAt: at, EndedAt: at.Add(time.Duration(dur) * time.Millisecond),
		RecordedAt: at, ArtifactsPrefix: pipeline.OutputPrefix(runID, slot, 0)}
}

func addTally(t, d run.Tally) run.Tally {
	t.Done += d.Done
	t.Passed += d.Passed
	t.Failed += d.Failed
	t.InputTokens += d.InputTokens
	t.OutputTokens += d.OutputTokens
	t.CostMicroUSD += d.CostMicroUSD
	t.DurationMS += d.DurationMS
	return t
}
