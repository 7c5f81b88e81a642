package pipeline_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// scoredBench is a synthetic benchmark stored straight into the data model:
// runs are written running with every result, then finished on demand, so
// a test controls when each run's finish reaches the change stream.
type scoredBench struct {
	e        *env
	manifest benchmark.Manifest
	attempts int
	cp       string // change-stream position of changes()
	// outcome, when set, decides a result (agent index, task index,
	// attempt) in place of the default pass rule; ok false keeps it.
	outcome func(agent, task, attempt int) (o run.Outcome, class run.ErrorClass, ok bool)
}

func newScoredBench(e *env, name string, tasks, categories, attempts int) *scoredBench {
	e.t.Helper()
	ts := make([]benchmark.Task, tasks)
	for i := range ts {
		n := fmt.Sprintf("task-%04d", i)
		sum := sha256.Sum256([]byte(n))
		ts[i] = benchmark.Task{Name: n, Digest: "sha256:" + hex.EncodeToString(sum[:]), Category: fmt.Sprintf("category-%04d", i%categories)}
	}
	m, err := benchmark.HarborManifest(name, "1.0", "synthetic", ts)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.recs.Benchmarks.PutManifest(e.ctx, testWS, m, nil); err != nil {
		e.t.Fatal(err)
	}
	b := &scoredBench{e: e, manifest: m, attempts: attempts}
	b.changes() // skip the setup's changes
	return b
}

// addRun writes a running run of the given agents (harness names) with
// every result; agent i passes task t when (t+i) % (i+2) == 0.
func (b *scoredBench) addRun(id string, harnesses ...string) {
	e := b.e
	e.t.Helper()
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	r := run.Run{ID: id, Workspace: testWS, Name: id, Benchmark: b.manifest.Key, BenchmarkName: b.manifest.Name,
		ManifestWorkspace: testWS, ManifestVersion: b.manifest.Version, ManifestDigest: b.manifest.Digest, FullTaskList: true,
		Tasks: b.manifest.TaskNames(), Settings: run.Settings{AttemptsPerTask: b.attempts, MaxConcurrentAttempts: 1, TimeoutMultiplier: 1, PassThreshold: 1},
		Status: run.Running, Planned: true, Agents: len(harnesses), CreatedAt: at, QueuedAt: at, StartedAt: at}
	var ops records.Ops
	ops.AddAll(records.CreateRunOp(r))
	for i, h := range harnesses {
		ops.Add(records.CreateAgentOp(run.Agent{RunID: id, Index: i, Harness: h, ModelType: "provider", Status: run.Running, StartedAt: at}))
	}
	if err := ops.Transact(e.ctx, e.recs); err != nil {
		e.t.Fatalf("create run %s: %v", id, err)
	}
	var batch []store.Op
	for i := range harnesses {
		for t, task := range r.Tasks {
			for a := 1; a <= b.attempts; a++ {
				out, reward := run.FailedOut, 0.0
				if (t+i)%(i+2) == 0 {
					out, reward = run.Passed, 1
				}
				var class run.ErrorClass
				rewardp := &reward
				if b.outcome != nil {
					if o, c, ok := b.outcome(i, t, a); ok {
						out, class = o, c
						if o == run.Passed {
							reward = 1
						}
						if o == run.Errored || o == run.JudgeFailed {
							rewardp = nil
						}
					}
				}
				op, err := records.ResultOp(run.Result{RunID: id, SlotID: run.SlotID(i, task, a), Agent: i, Task: task, Attempt: a,
					Outcome: out, ErrorClass: class, Reward: rewardp, DurationMS: 1000, StartedAt: at, EndedAt: at, RecordedAt: at})
				if err != nil {
					e.t.Fatal(err)
				}
				if batch = append(batch, op); len(batch) == store.MaxTransactOps {
					if err := e.recs.Transact(e.ctx, batch); err != nil {
						e.t.Fatal(err)
					}
					batch = batch[:0]
				}
			}
		}
	}
	if len(batch) > 0 {
		if err := e.recs.Transact(e.ctx, batch); err != nil {
			e.t.Fatal(err)
		}
	}
}

// finish ends a run and its agents as finished.
func (b *scoredBench) finish(id string) {
	e := b.e
	end := time.Date(2026, 11, 1, 1, 0, 0, 0, time.UTC)
	agents, err := e.recs.Runs.Agents(e.ctx, id)
	if err != nil {
		e.t.Error(err)
		return
	}
	for _, a := range agents {
		if _, err := e.recs.Runs.UpdateAgent(e.ctx, id, a.Index, func(a *run.Agent) error {
			a.Status, a.EndedAt = run.Finished, end
			return nil
		}); err != nil {
			e.t.Error(err)
		}
	}
	if _, err := e.recs.Runs.UpdateRun(e.ctx, id, func(r *run.Run) error {
		r.Status, r.EndedAt = run.Finished, end
		return nil
	}); err != nil {
		e.t.Error(err)
	}
}

// changes returns the change records written since the last call.
func (b *scoredBench) changes() []store.Change {
	var all []store.Change
	for {
		page, next, err := b.e.db.Stream().Read(b.e.ctx, b.cp, 1000)
		if err != nil {
			b.e.t.Fatal(err)
		}
		if len(page) == 0 {
			return all
		}
		all, b.cp = append(all, page...), next
	}
}

// entrants lists the harnesses on the stored pass@1 board.
func (b *scoredBench) entrants() []string {
	board, err := b.e.recs.Boards.Board(b.e.ctx, testWS, b.manifest.Key, leaderboard.MetricPass1)
	if err != nil {
		b.e.t.Fatalf("ReadBoard: %v", err)
	}
	var names []string
	for _, r := range board.Rows {
		names = append(names, r.Entrant.Harness)
	}
	slices.Sort(names)
	return names
}

// TestRecomputeStaleBoardNeverWins pins the race of two runs finishing
// together: the recompute triggered by run A reads the runs before B
// finished, B finishes and its recompute stores a board with both, and
// only then does A's recompute try to store its older board. The stored
// board must keep both entrants.
func TestRecomputeStaleBoardNeverWins(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	b := newScoredBench(e, "race-bench", 6, 2, 2)
	b.addRun("r-a", "alpha")
	b.addRun("r-b", "beta")
	b.changes()

	b.finish("r-a")
	changesA := b.changes()
	aRead, bDone := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	defer pipeline.SetBoardReadHook(func(_, _ string, _ int64) {
		if first.CompareAndSwap(false, true) { // the first recompute to read: A's
			close(aRead)
			<-bDone
		}
	})()
	errA := make(chan error, 1)
	go func() { errA <- e.svc.Recompute(e.ctx, changesA) }()
	<-aRead
	b.finish("r-b")
	if err := e.svc.Recompute(e.ctx, b.changes()); err != nil {
		t.Fatalf("Recompute of B's finish: %v", err)
	}
	if diff := cmp.Diff([]string{"alpha", "beta"}, b.entrants()); diff != "" {
		t.Errorf("board after B's recompute (-want +got):\n%s", diff)
	}
	close(bDone)
	if err := <-errA; err != nil {
		t.Fatalf("Recompute of A's finish: %v", err)
	}
	if diff := cmp.Diff([]string{"alpha", "beta"}, b.entrants()); diff != "" {
		t.Errorf("board after A's late recompute (-want +got):\n%s", diff)
	}
}

// TestRecomputeConcurrentFinishesConverge finishes two runs at once from two
// goroutines, each delivering every change it can see (its own and maybe
// the other's) twice, shuffled, to Recompute; whatever the interleaving,
// the stored board ends with both runs' entrants.
func TestRecomputeConcurrentFinishesConverge(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	for i := range 12 {
		b := newScoredBench(e, fmt.Sprintf("converge-%02d", i), 4, 2, 1)
		b.addRun(fmt.Sprintf("r-%02d-a", i), "alpha", "gamma")
		b.addRun(fmt.Sprintf("r-%02d-b", i), "beta")
		start := b.cp
		b.changes()
		var wg sync.WaitGroup
		for g, id := range []string{fmt.Sprintf("r-%02d-a", i), fmt.Sprintf("r-%02d-b", i)} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i), uint64(g)))
				b.finish(id)
				seen, _, err := e.db.Stream().Read(e.ctx, start, 1000)
				if err != nil {
					t.Error(err)
					return
				}
				deliveries := append(slices.Clone(seen), seen...)
				rng.Shuffle(len(deliveries), func(x, y int) { deliveries[x], deliveries[y] = deliveries[y], deliveries[x] })
				for len(deliveries) > 0 {
					n := min(len(deliveries), 1+rng.IntN(4))
					if err := e.svc.Recompute(e.ctx, deliveries[:n]); err != nil {
						t.Errorf("Recompute: %v", err)
					}
					deliveries = deliveries[n:]
				}
			}()
		}
		wg.Wait()
		if diff := cmp.Diff([]string{"alpha", "beta", "gamma"}, b.entrants()); diff != "" {
			t.Errorf("round %d: board (-want +got):\n%s", i, diff)
		}
	}
}

// TestRunMetricsOfManyCategoriesSpill recomputes the metrics of a run of 8
// agents over 1,000 tasks in 1,000 categories — too many per-category
// scores for one 400 KB item — and reads them back whole; recomputing again
// keeps only the current and the previous generation of spilled parts.
func TestRunMetricsOfManyCategoriesSpill(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	b := newScoredBench(e, "wide-bench", 1000, 1000, 1)
	harnesses := []string{"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"}
	b.addRun("r-wide", harnesses...)
	for round := range 3 {
		if err := e.svc.RecomputeRun(e.ctx, "r-wide"); err != nil {
			t.Fatalf("RecomputeRun: %v", err)
		}
		m, err := e.recs.Runs.RunMetrics(e.ctx, "r-wide")
		if err != nil {
			t.Fatalf("ReadRunMetrics: %v", err)
		}
		type agentShape struct {
			Harness    string
			Categories int
			Sorted     bool
		}
		var got, want []agentShape
		for _, a := range m.Agents {
			sorted := slices.IsSortedFunc(a.Summary.Categories, func(x, y leaderboard.CategoryScore) int {
				return strings.Compare(x.Category, y.Category)
			})
			got = append(got, agentShape{a.Harness, len(a.Summary.Categories), sorted})
		}
		for _, h := range harnesses {
			want = append(want, agentShape{h, 1000, true})
		}
		if diff := cmp.Diff(want, got); diff != "" || m.Results != 8000 {
			t.Errorf("round %d: %d results, agents (-want +got):\n%s", round, m.Results, diff)
		}
		gens := map[string]bool{}
		page, err := e.db.Table().Query(e.ctx, store.Query{PK: "RUN#r-wide", Prefix: "METRICS#CAT#", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			gens[it.SK[len("METRICS#CAT#"):len("METRICS#CAT#")+19]] = true
		}
		if want := min(round+1, 2); len(gens) != want {
			t.Errorf("round %d: spilled parts of %d generations stored, want %d", round, len(gens), want)
		}
	}
}

// TestBoardReadsStoredTalliesNotResults finishes two runs of a benchmark of
// 3,000 tasks — enough that each agent's per-task tallies take several
// stored parts — and checks the board is the one their results give (the
// latest run of an entrant wins; pass@1 as the pass pattern dictates), and
// that recomputing it after every result was deleted gives the same board:
// a board recompute reads the finished runs' tallies, never their results.
func TestBoardReadsStoredTalliesNotResults(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	const tasks = 3000
	b := newScoredBench(e, "tally-bench", tasks, 10, 1)
	b.addRun("r-1", "alpha", "beta")
	b.addRun("r-2", "alpha")
	b.finish("r-1")
	b.finish("r-2")
	if err := e.svc.Recompute(e.ctx, b.changes()); err != nil {
		t.Fatalf("Recompute: %v", err)
	}
	before := readBoards(t, e, b.manifest.Key)

	// r-2 is later than r-1 (same end time, greater id), so alpha's row is
	// r-2's; agent i passes task t when (t+i) % (i+2) == 0: alpha (index 0
	// in both runs) every second task, beta (index 1) every third.
	type row struct {
		Harness, Run string
		Pass1        float64
		Tasks        int
	}
	var got []row
	for _, r := range before[leaderboard.MetricPass1].Rows {
		got = append(got, row{r.Entrant.Harness, r.RunID, r.Pass1.Mean, r.Pass1.Tasks})
	}
	want := []row{{"alpha", "r-2", 0.5, tasks}, {"beta", "r-1", 1000.0 / tasks, tasks}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("pass@1 board (-want +got):\n%s", diff)
	}
	for _, id := range []string{"r-1", "r-2"} {
		page, err := e.db.Table().Query(e.ctx, store.Query{PK: "RUN#" + id, Prefix: "METRICS#TASKS#", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if agents := map[string]int{"r-1": 2, "r-2": 1}[id]; len(page.Items) < 2*agents {
			t.Errorf("run %s keeps its tallies in %d parts, want at least 2 per agent", id, len(page.Items))
		}
		deleted := 0
		for {
			res, err := e.db.Table().Query(e.ctx, store.Query{PK: "RUN#" + id, Prefix: "RESULT#", Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Items) == 0 {
				break
			}
			for _, it := range res.Items {
				if err := e.db.Table().Delete(e.ctx, it.PK, it.SK, store.Cond{}); err != nil {
					t.Fatal(err)
				}
				deleted++
			}
		}
		if want := map[string]int{"r-1": 2 * tasks, "r-2": tasks}[id]; deleted != want {
			t.Fatalf("deleted %d results of run %s, want %d", deleted, id, want)
		}
	}
	if err := e.svc.RecomputeLeaderboard(e.ctx, testWS, b.manifest.Key); err != nil {
		t.Fatalf("RecomputeLeaderboard without results: %v", err)
	}
	if diff := cmp.Diff(before, readBoards(t, e, b.manifest.Key)); diff != "" {
		t.Errorf("board recomputed from stored tallies differs (-from results +from tallies):\n%s", diff)
	}
}

// TestBoardAccountsForErrors: the stored board leaves platform errors and
// failed judges out of pass@1 (a task with none scored is left out and
// counted), scores agent errors as failures, and keeps the
// errors-as-failures view and the counts.
func TestBoardAccountsForErrors(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	b := newScoredBench(e, "error-bench", 4, 1, 2)
	b.outcome = func(_, task, attempt int) (run.Outcome, run.ErrorClass, bool) {
		switch {
		case task == 0:
			return run.Errored, run.Infra, true
		case task == 1 && attempt == 1:
			return run.JudgeFailed, "", true
		case task == 2 && attempt == 1:
			return run.Errored, run.AgentError, true
		case attempt == 1:
			return run.Passed, "", true
		case task == 3:
			return run.FailedOut, "", true
		}
		return run.Passed, "", true
	}
	b.addRun("r-1", "alpha")
	b.finish("r-1")
	if err := e.svc.Recompute(e.ctx, b.changes()); err != nil {
		t.Fatalf("Recompute: %v", err)
	}
	board, err := e.recs.Boards.Board(e.ctx, testWS, b.manifest.Key, leaderboard.MetricPass1)
	if err != nil || len(board.Rows) != 1 {
		t.Fatalf("board = %+v, %v; want one row", board, err)
	}
	row := board.Rows[0]
	if want := (leaderboard.ErrorCounts{AgentErrors: 1, PlatformErrors: 2, JudgeFailures: 1, UnscoredTasks: 1}); row.Errors != want {
		t.Errorf("errors = %+v, want %+v", row.Errors, want)
	}
	// Scored: task 1 1/1, task 2 1/2, task 3 1/2 → 2/3 over 3 tasks. As
	// failures: 0/2, 1/2, 1/2, 1/2 → 3/8 over 4.
	if row.Pass1 == nil || math.Abs(row.Pass1.Mean-2.0/3) > 1e-12 || row.Pass1.Tasks != 3 {
		t.Errorf("pass@1 = %+v, want 2/3 over 3 tasks", row.Pass1)
	}
	if e := row.Pass1ErrorsAsFailures; e == nil || math.Abs(e.Mean-3.0/8) > 1e-12 || e.Tasks != 4 {
		t.Errorf("pass@1 errors as failures = %+v, want 3/8 over 4 tasks", e)
	}
}

// TestBoardBackfillsTalliesOfOlderMetrics stores a finished run's metrics
// the way a version without per-task tallies did (computed while it ran),
// and checks the next board recompute ranks it and leaves its tallies
// stored.
func TestBoardBackfillsTalliesOfOlderMetrics(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	b := newScoredBench(e, "legacy-bench", 12, 3, 2)
	b.addRun("r-old", "alpha", "beta")
	if err := e.svc.RecomputeRun(e.ctx, "r-old"); err != nil { // still running: no tallies kept
		t.Fatalf("RecomputeRun: %v", err)
	}
	if tallies, ok, err := e.recs.Runs.RunTallies(e.ctx, "r-old"); err != nil || ok || tallies != nil {
		t.Fatalf("ReadRunTallies of a running run = %v, %v, %v; want no tallies", tallies, ok, err)
	}
	b.finish("r-old")
	if err := e.svc.RecomputeLeaderboard(e.ctx, testWS, b.manifest.Key); err != nil {
		t.Fatalf("RecomputeLeaderboard: %v", err)
	}
	if diff := cmp.Diff([]string{"alpha", "beta"}, b.entrants()); diff != "" {
		t.Errorf("board (-want +got):\n%s", diff)
	}
	tallies, ok, err := e.recs.Runs.RunTallies(e.ctx, "r-old")
	if err != nil || !ok || len(tallies) != 2 || len(tallies[0]) != 12 || len(tallies[1]) != 12 {
		t.Errorf("ReadRunTallies after the board recompute: %d agents, ok %v, err %v; want 2 agents × 12 tasks", len(tallies), ok, err)
	}
}

// readBoards reads every metric's stored board.
func readBoards(t *testing.T, e *env, key string) map[leaderboard.Metric]records.Board {
	t.Helper()
	out := map[leaderboard.Metric]records.Board{}
	for _, m := range leaderboard.Metrics {
		board, err := e.recs.Boards.Board(e.ctx, testWS, key, m)
		if err != nil {
			t.Fatalf("ReadBoard %s: %v", m, err)
		}
		out[m] = board
	}
	return out
}

// TestRunEndsOnlyAfterEveryAgent counts every result of a two-agent run and
// settles agent alpha only, as the handler of alpha's last result does while
// beta's last result is counted but its own settle has not run yet: the run
// must not finish with beta still going, or its finish would reach the
// recompute (and the board) without beta.
func TestRunEndsOnlyAfterEveryAgent(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	b := newScoredBench(e, "settle-bench", 5, 1, 2)
	b.addRun("r-1", "alpha", "beta")
	perAgent := run.Tally{Done: 10, Passed: 5, Failed: 5}
	var ops records.Ops
	ops.Append(records.RunTallyOp("r-1", run.Tally{Done: 20, Passed: 10, Failed: 10}),
		records.AgentTallyOp("r-1", 0, perAgent), records.AgentTallyOp("r-1", 1, perAgent))
	if err := ops.Transact(e.ctx, e.recs); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Settle(e.ctx, "r-1", 0); err != nil {
		t.Fatalf("settle: %v", err)
	}
	got := runAndAgentStatuses(t, e, "r-1")
	if diff := cmp.Diff([]run.Status{run.Finished, run.Finished, run.Finished}, got); diff != "" {
		t.Errorf("run, alpha, beta status (-want +got):\n%s", diff)
	}
}

// TestBoardRanksAnAgentThatEndedAfterItsRunsMetrics stores a finished
// run's metrics while one of its agents was still going (an agent's own
// change triggers no recompute), ends the agent, and finishes another run:
// the board must rank the late agent.
func TestBoardRanksAnAgentThatEndedAfterItsRunsMetrics(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	b := newScoredBench(e, "late-agent-bench", 8, 2, 1)
	b.addRun("r-1", "alpha", "beta")
	end := time.Date(2026, 11, 1, 1, 0, 0, 0, time.UTC)
	if _, err := e.recs.Runs.UpdateRun(e.ctx, "r-1", func(r *run.Run) error {
		r.Status, r.EndedAt = run.Finished, end
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.RecomputeRun(e.ctx, "r-1"); err != nil {
		t.Fatal(err)
	}
	b.finish("r-1") // the agents end
	b.changes()
	b.addRun("r-2", "gamma")
	b.finish("r-2")
	if err := e.svc.Recompute(e.ctx, b.changes()); err != nil {
		t.Fatalf("Recompute: %v", err)
	}
	if diff := cmp.Diff([]string{"alpha", "beta", "gamma"}, b.entrants()); diff != "" {
		t.Errorf("board (-want +got):\n%s", diff)
	}
}

// TestBoardSurvivesDamagedTallies gives a finished run's stored tallies a
// leftover part past the head's count, then loses them altogether: each
// time the board recompute still succeeds with the same board, and the
// lost tallies are stored again.
func TestBoardSurvivesDamagedTallies(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	b := newScoredBench(e, "damaged-bench", 20, 4, 2)
	b.addRun("r-1", "alpha", "beta")
	b.finish("r-1")
	if err := e.svc.Recompute(e.ctx, b.changes()); err != nil {
		t.Fatalf("Recompute: %v", err)
	}
	want := readBoards(t, e, b.manifest.Key)
	parts := func() []store.Item {
		page, err := e.db.Table().Query(e.ctx, store.Query{PK: "RUN#r-1", Prefix: "METRICS#TASKS#", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return page.Items
	}
	stored := parts()
	if len(stored) == 0 {
		t.Fatal("no tally parts stored")
	}
	last := stored[len(stored)-1]
	leftover := store.Item{PK: last.PK, SK: last.SK[:len(last.SK)-4] + "0999", Data: []byte(`{"agent":0,"tasks":[{"task":"zzz","n":1,"all":1}]}`)}
	if _, err := e.db.Table().Put(e.ctx, leftover, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.RecomputeLeaderboard(e.ctx, testWS, b.manifest.Key); err != nil {
		t.Fatalf("RecomputeLeaderboard with a leftover part: %v", err)
	}
	if diff := cmp.Diff(want, readBoards(t, e, b.manifest.Key)); diff != "" {
		t.Errorf("board with a leftover part (-want +got):\n%s", diff)
	}
	for _, it := range parts() {
		if err := e.db.Table().Delete(e.ctx, it.PK, it.SK, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.svc.RecomputeLeaderboard(e.ctx, testWS, b.manifest.Key); err != nil {
		t.Fatalf("RecomputeLeaderboard with lost tallies: %v", err)
	}
	if diff := cmp.Diff(want, readBoards(t, e, b.manifest.Key)); diff != "" {
		t.Errorf("board with lost tallies (-want +got):\n%s", diff)
	}
	if got := len(parts()); got != len(stored) {
		t.Errorf("%d tally parts after the board recompute, want %d stored again", got, len(stored))
	}
}

// TestStoppedRunsAgentsEndStopped stops a running two-agent run and counts
// every slot cancelled before the stop's drain reached the agents: settling
// must end the run and both agents stopped, not finished.
func TestStoppedRunsAgentsEndStopped(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	b := newScoredBench(e, "stop-bench", 3, 1, 1)
	b.addRun("r-1", "alpha", "beta")
	now := time.Date(2026, 11, 1, 0, 30, 0, 0, time.UTC)
	if _, err := e.recs.Runs.UpdateRun(e.ctx, "r-1", func(r *run.Run) error { return r.SetStatus(run.Stopping, now) }); err != nil {
		t.Fatal(err)
	}
	perAgent := run.Tally{Done: 3, Cancelled: 3}
	var ops records.Ops
	ops.Append(records.RunTallyOp("r-1", run.Tally{Done: 6, Cancelled: 6}),
		records.AgentTallyOp("r-1", 0, perAgent), records.AgentTallyOp("r-1", 1, perAgent))
	if err := ops.Transact(e.ctx, e.recs); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Settle(e.ctx, "r-1", 0); err != nil {
		t.Fatalf("settle: %v", err)
	}
	got := runAndAgentStatuses(t, e, "r-1")
	if diff := cmp.Diff([]run.Status{run.Stopped, run.Stopped, run.Stopped}, got); diff != "" {
		t.Errorf("run, alpha, beta status (-want +got):\n%s", diff)
	}
}

// runAndAgentStatuses returns a run's status followed by its agents'.
func runAndAgentStatuses(t *testing.T, e *env, id string) []run.Status {
	t.Helper()
	r, err := e.recs.Runs.Run(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	agents, err := e.recs.Runs.Agents(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	statuses := []run.Status{r.Status}
	for _, a := range agents {
		statuses = append(statuses, a.Status)
	}
	return statuses
}
