package leaderboard

import (
	"math"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/stats"
)

// SolvedRate is the per-task pass@1 at or above which a task counts as
// solved when two entrants are contrasted: the entrant passed at least half
// of its scored attempts (with one attempt: it passed).
const SolvedRate = 0.5

// Contrast compares two entrants of a benchmark on the tasks both scored:
// A is the baseline, B the candidate, and every difference is B − A.
type Contrast struct {
	A Summary `json:"a"`
	B Summary `json:"b"`
	// SameMeasurement is false when the two ran different manifest versions
	// (the common tasks may then differ in content).
	SameMeasurement bool `json:"same_measurement"`
	// Tasks counts the tasks both scored; OnlyA and OnlyB those one scored.
	Tasks int `json:"tasks"`
	OnlyA int `json:"only_a"`
	OnlyB int `json:"only_b"`
	// Pass1 is the paired difference of pass@1; Cost, Time and Tokens the
	// paired differences per task over the common tasks that report them
	// (nil when none does).
	Pass1  Difference  `json:"pass1"`
	Cost   *Difference `json:"cost,omitempty"`
	Time   *Difference `json:"time,omitempty"`
	Tokens *Difference `json:"tokens,omitempty"`
	// Categories is the pass@1 difference within each category of the
	// common tasks.
	Categories []CategoryDifference `json:"categories,omitempty"`
	// Regressions are the common tasks A solves and B does not,
	// Improvements the ones B solves and A does not (solved: pass@1 ≥
	// SolvedRate), each sorted by the size of the change, then by name.
	Regressions  []TaskContrast `json:"regressions"`
	Improvements []TaskContrast `json:"improvements"`
}

// Difference is a paired difference B − A over tasks with its 95% interval
// and two-sided p-value (a paired t-test); CI and P are absent with fewer
// than two tasks.
type Difference struct {
	Tasks int             `json:"tasks"`
	Diff  float64         `json:"diff"`
	CI    *stats.Interval `json:"ci,omitempty"`
	P     *float64        `json:"p,omitempty"`
}

// CategoryDifference is the pass@1 difference within one category.
type CategoryDifference struct {
	Category string     `json:"category"`
	Pass1    Difference `json:"pass1"`
}

// TaskContrast is one task's pass@1 under A and under B.
type TaskContrast struct {
	Task string  `json:"task"`
	A    float64 `json:"a"`
	B    float64 `json:"b"`
}

// Compare contrasts two summaries (A the baseline, B the candidate) on
// their common tasks; categories maps task names to categories for the
// per-category differences (nil skips them).
func Compare(a, b Summary, categories map[string]string) Contrast {
	c := Contrast{A: a, B: b, SameMeasurement: a.Run.ManifestVersion == b.Run.ManifestVersion && a.Run.ManifestDigest == b.Run.ManifestDigest,
		Regressions: []TaskContrast{}, Improvements: []TaskContrast{}}
	av, bv := &a.perTask, &b.perTask
	var aPass, bPass []float64
	if av.depth >= 1 && bv.depth >= 1 {
		aPass, bPass = av.passAt(1), bv.passAt(1)
	}
	var p1, cost, time, tokens []float64
	byCategory := map[string][]float64{}
	for i, j := 0, 0; i < len(av.names) || j < len(bv.names); {
		switch {
		case j >= len(bv.names) || (i < len(av.names) && av.names[i] < bv.names[j]):
			if aPass != nil && !math.IsNaN(aPass[i]) {
				c.OnlyA++
			}
			i++
			continue
		case i >= len(av.names) || av.names[i] > bv.names[j]:
			if bPass != nil && !math.IsNaN(bPass[j]) {
				c.OnlyB++
			}
			j++
			continue
		}
		name := av.names[i]
		if aPass != nil && !math.IsNaN(aPass[i]) && !math.IsNaN(bPass[j]) {
			c.Tasks++
			d := bPass[j] - aPass[i]
			p1 = append(p1, d)
			if cat, ok := categories[name]; ok {
				byCategory[cat] = append(byCategory[cat], d)
			}
			switch as, bs := aPass[i] >= SolvedRate, bPass[j] >= SolvedRate; {
			case as && !bs:
				c.Regressions = append(c.Regressions, TaskContrast{Task: name, A: aPass[i], B: bPass[j]})
			case bs && !as:
				c.Improvements = append(c.Improvements, TaskContrast{Task: name, A: aPass[i], B: bPass[j]})
			}
		}
		cost = appendDiff(cost, av.cost[i], bv.cost[j])
		time = appendDiff(time, av.time[i], bv.time[j])
		tokens = appendDiff(tokens, av.tokens[i], bv.tokens[j])
		i++
		j++
	}
	c.Pass1 = difference(p1)
	c.Cost, c.Time, c.Tokens = usageDifference(cost), usageDifference(time), usageDifference(tokens)
	for cat, diffs := range byCategory {
		c.Categories = append(c.Categories, CategoryDifference{Category: cat, Pass1: difference(diffs)})
	}
	slices.SortFunc(c.Categories, func(x, y CategoryDifference) int { return strings.Compare(x.Category, y.Category) })
	byChange := func(x, y TaskContrast) int {
		if dx, dy := math.Abs(x.B-x.A), math.Abs(y.B-y.A); dx != dy {
			if dx > dy {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Task, y.Task)
	}
	slices.SortFunc(c.Regressions, byChange)
	slices.SortFunc(c.Improvements, byChange)
	return c
}

func appendDiff(dst []float64, a, b float64) []float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return dst
	}
	return append(dst, b-a)
}

func difference(diffs []float64) Difference {
	d := Difference{Tasks: len(diffs)}
	if len(diffs) > 0 {
		d.Diff = stats.Mean(diffs)
	}
	if test, err := stats.PairedTTestDiffs(diffs); err == nil {
		ci, p := test.CI, test.P
		d.CI, d.P = &ci, &p
	}
	return d
}

func usageDifference(diffs []float64) *Difference {
	if len(diffs) == 0 {
		return nil
	}
	d := difference(diffs)
	return &d
}
