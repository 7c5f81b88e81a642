package leaderboard

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestCompare(t *testing.T) {
	// Per-task pass@1, A: 1, ½, 0, 1; B: ½, 1, 1, 0 (and t04, B's alone).
	a := Summarize(input("h", "a", eligibleRun("r1", t0), tasks("PP", "PF", "FF", "PP")), Options{})
	b := Summarize(input("h", "b", eligibleRun("r2", t0), tasks("PF", "PP", "PP", "FF", "P")), Options{})
	cats := map[string]string{"t00": "web", "t01": "web", "t02": "data", "t03": "data"}
	c := Compare(a, b, cats)
	if c.Tasks != 4 || c.OnlyA != 0 || c.OnlyB != 1 || !c.SameMeasurement {
		t.Errorf("Compare() tasks %d only A %d only B %d same %v, want 4, 0, 1, true", c.Tasks, c.OnlyA, c.OnlyB, c.SameMeasurement)
	}
	// B − A: −½, ½, 1, −1 → mean 0, sd √(2.5/3), se 0.4564355, half
	// 3.182446·se = 1.4525814, t = 0 ⇒ p = 1. web: −½, ½ → ±12.706205·½;
	// data: 1, −1 → ±12.706205·1.
	want := Contrast{
		Tasks: 4, OnlyB: 1, SameMeasurement: true,
		Pass1: Difference{Tasks: 4, Diff: 0, CI: iv(-1.4525814, 1.4525814), P: ptr(1.0)},
		Categories: []CategoryDifference{
			{Category: "data", Pass1: Difference{Tasks: 2, CI: iv(-12.706205, 12.706205), P: ptr(1.0)}},
			{Category: "web", Pass1: Difference{Tasks: 2, CI: iv(-6.3531024, 6.3531024), P: ptr(1.0)}},
		},
		Regressions:  []TaskContrast{{Task: "t03", A: 1, B: 0}},
		Improvements: []TaskContrast{{Task: "t02", A: 0, B: 1}},
	}
	opts := cmp.Options{cmpopts.EquateApprox(0, 1e-6), cmpopts.IgnoreUnexported(Summary{}), cmpopts.EquateEmpty()}
	c.A, c.B = Summary{}, Summary{}
	if diff := cmp.Diff(want, c, opts); diff != "" {
		t.Errorf("Compare() mismatch (-want +got):\n%s", diff)
	}
}

func TestCompareUsage(t *testing.T) {
	// Cost B − A per task: 1, 0, 2 → mean 1, se 1/√3, half 4.302653/√3;
	// t = √3 with 2 df ⇒ p = 1 − t/√(t²+2) = 1 − √(3/5) = 0.2254033.
	a := Summarize(input("h", "a", eligibleRun("r1", t0), costAttempts(1, 2, 3)), Options{})
	b := Summarize(input("h", "b", eligibleRun("r2", t0), costAttempts(2, 2, 5)), Options{})
	c := Compare(a, b, nil)
	half := 4.302653 / math.Sqrt(3)
	want := &Difference{Tasks: 3, Diff: 1, CI: iv(1-half, 1+half), P: ptr(1 - math.Sqrt(3.0/5))}
	if diff := cmp.Diff(want, c.Cost, cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-6 })); diff != "" {
		t.Errorf("Compare().Cost mismatch (-want +got):\n%s", diff)
	}
	if c.Time == nil || c.Time.Diff != 10 {
		t.Errorf("Compare().Time = %+v, want a mean difference of 10 s", c.Time)
	}
	if len(c.Regressions) != 0 || len(c.Improvements) != 0 {
		t.Errorf("both pass everything, yet regressions %v improvements %v", c.Regressions, c.Improvements)
	}
}
