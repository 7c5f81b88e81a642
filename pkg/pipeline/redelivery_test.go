package pipeline_test

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

const redeliveryConfig = `
[experiment]
benchmark = "demo-bench"
[tasks]
task_set = "parity"
[execution]
attempts_per_task = 2
max_concurrent_attempts = 3
[[agents]]
harness = "oracle"
[[agents]]
harness = "nop"
`

// outcomeOf is what must be identical however messages are delivered.
type outcomeOf struct {
	Slot       string
	Generation int
	Outcome    run.Outcome
	Reward     float64
}

func outcomes(results []run.Result) []outcomeOf {
	out := make([]outcomeOf, len(results))
	for i, r := range results {
		out[i] = outcomeOf{r.SlotID, r.Generation, r.Outcome, *r.Reward}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slot < out[j].Slot })
	return out
}

func TestRedeliveredShuffledMessagesChangeNothing(t *testing.T) {
	normal := newEnv(t, envOptions{})
	chaotic := newEnv(t, envOptions{})
	chaotic.chaos = rand.New(rand.NewPCG(1, 2))

	var got [2][]outcomeOf
	var tallies [2]run.Tally
	var boards [2][]string
	for i, e := range []*env{normal, chaotic} {
		r := e.submit(redeliveryConfig)
		r = e.pumpUntil(r.ID, 3*time.Minute)
		if r.Status != run.Finished {
			t.Fatalf("env %d: run ended %s (%s), want finished", i, r.Status, r.Reason)
		}
		got[i] = outcomes(e.results(r.ID))
		tallies[i] = e.tally(r.ID)
		board, err := e.recs.Boards.Leaderboard(e.ctx, testWS, "demo-bench")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := board.Board(leaderboard.MetricPass1)
		for _, row := range b.Rows {
			boards[i] = append(boards[i], row.Entrant.Harness)
		}
		if g, _ := e.recs.Runs.GlobalGate(e.ctx); g != 0 {
			t.Errorf("env %d: global gate = %d after the run, want 0", i, g)
		}
		if g, _ := e.recs.Runs.RunGate(e.ctx, r.ID); g != 0 {
			t.Errorf("env %d: run gate = %d after the run, want 0", i, g)
		}
	}
	if len(got[0]) != 32 {
		t.Fatalf("%d results, want 32 (one per slot)", len(got[0]))
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Errorf("results with redelivery differ (-once +twice):\n%s", diff)
	}
	if diff := cmp.Diff(tallies[0], tallies[1], cmpCounts); diff != "" {
		t.Errorf("counters with redelivery differ (-once +twice):\n%s", diff)
	}
	if diff := cmp.Diff(run.Tally{Done: 32, Passed: 16, Failed: 16}, tallies[1], cmpCounts); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(boards[0], boards[1]); diff != "" || len(boards[1]) != 2 {
		t.Errorf("leaderboard rows differ or are not 2 (-once +twice):\n%s", diff)
	}
}
