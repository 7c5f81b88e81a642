package leaderboard

import (
	"fmt"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/stats"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// outcomes turns "PFEC" into attempts of one task: Passed, Failed, Errored,
// Cancelled.
func outcomes(task, codes string) []Attempt {
	var as []Attempt
	for _, r := range codes {
		o := map[rune]Outcome{'P': Passed, 'F': Failed, 'E': Errored, 'C': Cancelled}[r]
		as = append(as, Attempt{Task: task, Outcome: o})
	}
	return as
}

// tasks builds attempts for tasks "t00", "t01", … from one code string each.
func tasks(codes ...string) []Attempt {
	var as []Attempt
	for i, c := range codes {
		as = append(as, outcomes(fmt.Sprintf("t%02d", i), c)...)
	}
	return as
}

// repeat returns n copies of s.
func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// eligibleRun is a finished full-coverage run on set "" of version v1.
func eligibleRun(id string, finished time.Time) Run {
	return Run{ID: id, FinishedAt: finished, ManifestVersion: "v1", ManifestDigest: "sha256:aa",
		Finished: true, AgentFinished: true, Coverage: CoverageFull, AllSlotsReported: true}
}

func input(harness, model string, run Run, attempts []Attempt) EntrantInput {
	return EntrantInput{Entrant: Entrant{Harness: harness, Model: model}, Run: run, Attempts: attempts}
}

func ptr[T any](v T) *T { return &v }

func iv(lo, hi float64) *stats.Interval { return &stats.Interval{Lo: lo, Hi: hi} }

// approx compares floats to 1e-9 and ignores unexported fields.
var approx = cmp.Options{
	cmpopts.EquateApprox(0, 1e-9),
	cmpopts.IgnoreUnexported(Summary{}),
	cmpopts.EquateEmpty(),
}
