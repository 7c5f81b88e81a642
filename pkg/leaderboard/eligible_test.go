package leaderboard

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEligible(t *testing.T) {
	good := eligibleRun("r", t0)
	parity := good
	parity.TaskSet, parity.Coverage = "parity", CoverageParity
	tests := []struct {
		name       string
		mutate     func(*Run)
		attempts   []Attempt
		want       bool
		wantReason string
	}{
		{name: "full run", want: true},
		{name: "parity set", mutate: func(r *Run) { *r = parity }, want: true},
		{name: "run not finished", mutate: func(r *Run) { r.Finished = false }, wantReason: "run not finished"},
		{name: "agent not finished", mutate: func(r *Run) { r.AgentFinished = false }, wantReason: "agent not finished"},
		{name: "subset of tasks", mutate: func(r *Run) { r.Coverage = CoverageSubset },
			wantReason: "run covered neither the full task list nor a published task set"},
		{name: "missing slot results", mutate: func(r *Run) { r.AllSlotsReported = false }, wantReason: "not every slot produced a result"},
		{name: "no pass@1", attempts: tasks("C", "C"), wantReason: "no pass@1: no task has a scored attempt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := good
			if tt.mutate != nil {
				tt.mutate(&run)
			}
			attempts := tt.attempts
			if attempts == nil {
				attempts = tasks("P", "F")
			}
			ok, reason := Eligible(Summarize(input("h", "m", run, attempts), Options{}))
			if ok != tt.want || reason != tt.wantReason {
				t.Errorf("Eligible() = %v, %q, want %v, %q", ok, reason, tt.want, tt.wantReason)
			}
		})
	}
}

func TestLatestEligible(t *testing.T) {
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	unfinished := eligibleRun("r-unfinished", at(9))
	unfinished.Finished = false
	parity := eligibleRun("r-d-parity", at(2))
	parity.TaskSet, parity.Coverage = "parity", CoverageParity
	v2 := eligibleRun("r-v2", at(0))
	v2.ManifestVersion = "v2"
	inputs := []EntrantInput{
		input("h", "a", eligibleRun("r-a-old", at(1)), tasks("F")),
		input("h", "a", eligibleRun("r-a-new", at(5)), tasks("P")),
		input("h", "a", eligibleRun("r-a-mid", at(3)), tasks("F")),
		// A later but ineligible run does not hide the latest eligible one.
		input("h", "b", eligibleRun("r-b", at(2)), tasks("P")),
		input("h", "b", unfinished, tasks("P")),
		// Same model under another harness is another entrant.
		input("other", "a", eligibleRun("r-other", at(0)), tasks("P")),
		// Another task set or version is the same entrant: the latest run of
		// any of them counts (a later parity run replaces a full run).
		input("h", "d", eligibleRun("r-d-full", at(1)), tasks("P")),
		input("h", "d", parity, tasks("P")),
		input("h", "e", eligibleRun("r-e-full", at(1)), tasks("P")),
		input("h", "e", v2, tasks("P")),
		// Equal finish times: the greater run id wins.
		input("h", "c", eligibleRun("r-c-1", at(4)), tasks("P")),
		input("h", "c", eligibleRun("r-c-2", at(4)), tasks("P")),
	}
	var got []string
	for _, s := range LatestEligible(SummarizeAll(inputs, Options{})) {
		got = append(got, s.Run.ID)
	}
	want := []string{"r-a-new", "r-b", "r-other", "r-d-parity", "r-e-full", "r-c-2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LatestEligible() run ids mismatch (-want +got):\n%s", diff)
	}
}

func TestBuildExcludesIneligibleRuns(t *testing.T) {
	subset := eligibleRun("r2", t0)
	subset.Coverage = CoverageSubset
	inputs := []EntrantInput{
		input("h", "a", eligibleRun("r1", t0), tasks("F", "F")),
		input("h", "cherry-picked", subset, tasks("P", "P")),
	}
	b := Build(inputs, MetricPass1, Options{})
	want := []rowView{{"a (h)", 1, true, false, ptr(0.0)}}
	if diff := cmp.Diff(want, view(b), approx); diff != "" {
		t.Errorf("Build() rows mismatch (-want +got):\n%s", diff)
	}
}
