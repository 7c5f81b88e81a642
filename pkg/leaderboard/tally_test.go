package leaderboard

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// randomInput is an entrant with tasks of uneven attempt counts, every
// outcome, and cost, time and tokens reported by only some attempts, in a
// shuffled order.
func randomInput(rng *rand.Rand, harness string, tasks int) EntrantInput {
	var attempts []Attempt
	for t := range tasks {
		for range 1 + rng.IntN(6) {
			a := Attempt{Task: fmt.Sprintf("task-%03d", t), Outcome: []Outcome{Passed, Failed, Errored, Cancelled}[rng.IntN(4)]}
			if rng.IntN(3) > 0 {
				a.HasCost, a.CostUSD = true, rng.Float64()/7
			}
			if rng.IntN(3) > 0 {
				a.HasDuration, a.DurationSec = true, rng.Float64()*900
			}
			if rng.IntN(3) > 0 {
				a.HasTokens, a.InputTokens, a.OutputTokens = true, rng.Int64N(1e6), rng.Int64N(1e5)
			}
			attempts = append(attempts, a)
		}
	}
	rng.Shuffle(len(attempts), func(i, j int) { attempts[i], attempts[j] = attempts[j], attempts[i] })
	return input(harness, "m", eligibleRun("run-"+harness, t0), attempts)
}

// TestSummarizeTalliesEqualsSummarize checks that tallies kept as JSON are
// a lossless stand-in for the attempts: every board ranked from summaries
// of decoded tallies — ranks, intervals and the paired tests against the
// best, which read the per-task values — equals the board ranked from the
// attempts, bit for bit.
func TestSummarizeTalliesEqualsSummarize(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 20 {
		var fromAttempts, fromTallies []Summary
		for e := range 2 + rng.IntN(5) {
			in := randomInput(rng, fmt.Sprintf("h%d", e), 1+rng.IntN(40))
			fromAttempts = append(fromAttempts, Summarize(in, Options{}))
			data, err := json.Marshal(Tally(in))
			if err != nil {
				t.Fatal(err)
			}
			var decoded EntrantTallies
			if err := json.Unmarshal(data, &decoded); err != nil {
				t.Fatal(err)
			}
			fromTallies = append(fromTallies, SummarizeTallies(decoded, Options{}))
		}
		opts := cmp.Options{cmp.AllowUnexported(Summary{}, taskValues{}), cmpopts.EquateNaNs()}
		if diff := cmp.Diff(fromAttempts, fromTallies, opts); diff != "" {
			t.Fatalf("trial %d: summaries of decoded tallies differ (-attempts +tallies):\n%s", trial, diff)
		}
		if diff := cmp.Diff(Boards(fromAttempts), Boards(fromTallies), opts); diff != "" {
			t.Fatalf("trial %d: boards of decoded tallies differ (-attempts +tallies):\n%s", trial, diff)
		}
	}
}

// TestTallyCounts checks one task's tally against counts done by hand.
func TestTallyCounts(t *testing.T) {
	attempts := []Attempt{
		{Task: "b", Outcome: Passed, HasCost: true, CostUSD: 0.5, HasDuration: true, DurationSec: 10},
		{Task: "a", Outcome: Cancelled, HasCost: true, CostUSD: 9}, // cancelled: counted in All only
		{Task: "b", Outcome: Errored, HasTokens: true, InputTokens: 100, OutputTokens: 20, CacheTokens: 50},
		{Task: "b", Outcome: Failed, HasCost: true, CostUSD: 0.25},
	}
	got := Tally(input("h", "m", eligibleRun("r", t0), attempts)).Tasks
	want := []TaskTally{
		{Task: "a", All: 1},
		{Task: "b", Scored: 3, Passed: 1, All: 3, AgentErrors: 1, Cost: 0.75, CostReports: 2, Time: 10, TimeReports: 1, Tokens: 120, TokenReports: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Tally().Tasks mismatch (-want +got):\n%s", diff)
	}
}
