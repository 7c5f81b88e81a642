package boardview

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func TestWriteCompare(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	c := v1.CompareView{
		A:     v1.CompareEntrant{RunID: "r1", Agent: 0, Label: "oracle", Pass1: &v1.Estimate{Value: 1}, TimePerTask: &v1.Estimate{Value: 10}},
		B:     v1.CompareEntrant{RunID: "r1", Agent: 1, Label: "nop", Pass1: &v1.Estimate{Value: 0.25}, TimePerTask: &v1.Estimate{Value: 4}},
		Tasks: 4, OnlyB: 1, SameMeasurement: true,
		Pass1:        v1.Difference{Tasks: 4, Diff: -0.75, CILow: f(-1.2), CIHigh: f(-0.3), PValue: f(0.0123)},
		Time:         &v1.Difference{Tasks: 4, Diff: -6, PValue: f(0.0004)},
		Categories:   []v1.CategoryDifference{{Category: "web", Pass1: v1.Difference{Tasks: 1, Diff: -1}}},
		Regressions:  []v1.TaskChange{{Task: "t1", A: 1, B: 0}, {Task: "t2", A: 1, B: 0.5}},
		Improvements: []v1.TaskChange{},
	}
	var out bytes.Buffer
	if err := WriteCompare(&out, c); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"A oracle (r1/0) vs B nop (r1/1) on 4 common tasks (0 only A scored, 1 only B)",
		"METRIC A B B − A 95% CI P",
		"pass@1 100.0% 25.0% −75.0 pp −120.0 pp to −30.0 pp p=0.012",
		"time/task 10.0s 4.0s −6.0s – p<0.001",
		"",
		"By category (pass@1, B − A):",
		"CATEGORY TASKS B − A 95% CI P",
		"web 1 −100.0 pp – –",
		"",
		"Regressions (A solves, B does not): 2",
		"TASK A PASS@1 B PASS@1",
		"t1 100% 0%",
		"t2 100% 50%",
		"",
		"Improvements (B solves, A does not): 0",
	}
	if got := strings.Join(lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("WriteCompare() =\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

// TestWriteCompareMarksSelfReportedCost: a side whose cost its agent
// reported itself is marked, with the note under the table.
func TestWriteCompareMarksSelfReportedCost(t *testing.T) {
	c := v1.CompareView{
		A:     v1.CompareEntrant{RunID: "r1", Label: "heuristic (command)", CostPerTask: &v1.Estimate{Value: 0.006}, UsageSelfReported: true},
		B:     v1.CompareEntrant{RunID: "r2", Label: "openai/gpt-5 (codex)", CostPerTask: &v1.Estimate{Value: 0.02}},
		Tasks: 4, SameMeasurement: true, Cost: &v1.Difference{Tasks: 4, Diff: 0.014},
	}
	var out bytes.Buffer
	if err := WriteCompare(&out, c); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "$0.0060 (self)") || !strings.Contains(got, SelfReportedNote) || strings.Contains(got, "$0.0200 (self)") {
		t.Errorf("WriteCompare() does not mark exactly A's self-reported cost:\n%s", got)
	}
}
