package leaderboard

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/stats"
)

// Metric is what a board ranks by.
type Metric string

// The metrics a board can rank by. Pass rates rank higher-is-better; cost,
// time and tokens per task rank lower-is-better.
const (
	MetricPass1   Metric = "pass@1"
	MetricPassAtK Metric = "pass@k"
	// MetricPassHatK ranks by pass^k, the chance that all k attempts pass.
	MetricPassHatK Metric = "pass^k"
	// MetricPass1ErrorsAsFailures ranks by pass@1 with every error (the
	// platform's and failed judges too) scored as a failure.
	MetricPass1ErrorsAsFailures Metric = "pass@1-errors-as-failures"
	MetricCost                  Metric = "cost"
	MetricTime                  Metric = "time"
	MetricTokens                Metric = "tokens"
)

// Metrics lists every Metric in display order.
var Metrics = []Metric{MetricPass1, MetricPassAtK, MetricPassHatK, MetricPass1ErrorsAsFailures, MetricCost, MetricTime, MetricTokens}

// MetricNames is the Metrics as "a, b or c", for messages and usage.
func MetricNames() string {
	names := make([]string, len(Metrics))
	for i, m := range Metrics {
		names[i] = string(m)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ParseMetric returns the Metric named s.
func ParseMetric(s string) (Metric, error) {
	for _, m := range Metrics {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown metric %q: want %s", s, MetricNames())
}

// Direction says whether larger or smaller values of the metric are better.
func (m Metric) Direction() stats.Direction {
	switch m {
	case MetricCost, MetricTime, MetricTokens:
		return stats.LowerIsBetter
	}
	return stats.HigherIsBetter
}

// Board is a leaderboard ranked by one metric: every eligible entrant in
// one list. Task set and resolved manifest version enter only the tie test:
// a row is tied with the best only when it ran the same task set on the same
// version (string and digest) as the best and the paired t-test cannot
// separate them; any other row is ranked by its value and never tied, since
// a parity sample and a full run, or runs on different versions, are not the
// same measurement.
type Board struct {
	Metric Metric `json:"metric"`
	// K is the board's pass@k depth: the deepest k every row reached, i.e.
	// the smallest len(PassAtK) over rows that have pass@1 (0 when none
	// has). MetricPassAtK ranks by pass@K and MetricPassHatK by pass^K;
	// displays show pass@K and pass^K.
	K    int   `json:"k"`
	Rows []Row `json:"rows"`
	// MinDetectableDiff is the median, over the rows tested against the
	// best with a nonzero spread of differences, of the smallest difference
	// from the best their paired test detects with 80% power at α = 0.05
	// (stats.MinDetectableDiff): how close to the best a row can be and
	// still be told apart, as the board stands. Nil when no row qualifies.
	MinDetectableDiff *float64 `json:"min_detectable_diff,omitempty"`
}

// Row is one entrant's place on a Board.
type Row struct {
	// Rank is the competition rank: 1 for the best row and every row tied
	// with it, otherwise 1 + the number of rows with a strictly better
	// value; 0 when the row has no value for the metric.
	Rank int `json:"rank"`
	// Best marks the row with the best value (the first in entrant order on
	// an exact tie).
	Best bool `json:"best"`
	// TiedWithBest marks a row with a worse value than the best that shares
	// rank 1 only because the paired t-test cannot separate it from the best
	// once its p-value is adjusted by Holm's step-down procedure across every
	// comparison with the best (a statistical tie; only rows of the best's
	// task set and version are tested). A row whose value equals the best's
	// has rank 1 outright and is not marked.
	TiedWithBest bool `json:"tied_with_best"`
	// Value is the row's value of the metric; nil when it has none.
	Value   *float64 `json:"value,omitempty"`
	Summary Summary  `json:"summary"`
	// VsBest compares the row with the best row on the metric; nil for the
	// best row, for rows without a value, and for rows of another task set
	// or manifest version than the best's (they are never compared).
	VsBest *Comparison `json:"vs_best,omitempty"`
}

// Comparison is a paired comparison of a row with the best row over the
// tasks both have a value for.
type Comparison struct {
	// Tasks is the number of paired tasks.
	Tasks int `json:"tasks"`
	// Tested is false when fewer than two tasks pair up: no test can
	// separate the rows, so the row counts as tied with the best.
	Tested bool `json:"tested"`
	// Diff is the mean over paired tasks of (row − best); 0 with no pairs.
	Diff float64 `json:"diff"`
	// CI is the 95% interval of Diff, P the two-sided p-value, T the t
	// statistic and DF its degrees of freedom. All are absent when not
	// Tested; T is also absent when infinite (every difference identical
	// and nonzero, P = 0).
	CI *stats.Interval `json:"ci,omitempty"`
	P  *float64        `json:"p,omitempty"`
	// AdjustedP is P adjusted by Holm's step-down procedure over the board's
	// tested comparisons with the best (stats.Holm): the row is tied with
	// the best when it is ≥ 0.05. Absent when not Tested.
	AdjustedP *float64 `json:"adjusted_p,omitempty"`
	T         *float64 `json:"t,omitempty"`
	DF        int      `json:"df,omitempty"`
	// MinDetectable is the smallest difference this test detects with 80%
	// power at α = 0.05; absent when not Tested or the differences have no
	// spread.
	MinDetectable *float64 `json:"min_detectable,omitempty"`
}

// Build summarizes every input, keeps the latest eligible run of each
// entrant (LatestEligible) and ranks the result by metric (NewBoard).
func Build(inputs []EntrantInput, metric Metric, opts Options) Board {
	return NewBoard(LatestEligible(SummarizeAll(inputs, opts)), metric)
}

// SummarizeAll summarizes every input, in order.
func SummarizeAll(inputs []EntrantInput, opts Options) []Summary {
	summaries := make([]Summary, len(inputs))
	for i := range inputs {
		summaries[i] = Summarize(inputs[i], opts)
	}
	return summaries
}

// Boards ranks the same summaries by every metric, in Metrics order.
func Boards(summaries []Summary) []Board {
	boards := make([]Board, len(Metrics))
	for i, m := range Metrics {
		boards[i] = NewBoard(summaries, m)
	}
	return boards
}

// NewBoard ranks summaries by metric in one list. It does not filter: pass
// it LatestEligible's result for a leaderboard.
func NewBoard(summaries []Summary, metric Metric) Board {
	members := slices.Clone(summaries)
	slices.SortStableFunc(members, func(a, b Summary) int {
		return cmp.Or(strings.Compare(a.Entrant.String(), b.Entrant.String()), strings.Compare(a.Run.ID, b.Run.ID))
	})
	board := Board{Metric: metric, K: groupDepth(members)}
	dir := metric.Direction()
	values := make([]float64, len(members))
	for i := range members {
		values[i] = metricValue(&members[i], metric, board.K)
	}
	best := stats.Best(values, dir)
	board.Rows = make([]Row, len(members))
	var buf []float64
	for i := range members {
		row := Row{Summary: members[i], Best: i == best}
		if !math.IsNaN(values[i]) {
			v := values[i]
			row.Value = &v
		}
		if i != best && best >= 0 && row.Value != nil && keyOf(members[i].Run) == keyOf(members[best].Run) {
			var c Comparison
			c, buf = compare(&members[i], &members[best], metric, board.K, buf)
			row.VsBest = &c
		}
		board.Rows[i] = row
	}
	tied := tiesWithBest(board.Rows, values, best, dir)
	board.MinDetectableDiff = medianDetectable(board.Rows)
	ranks := stats.CompetitionRanks(values, dir, tied)
	for i := range board.Rows {
		board.Rows[i].Rank = ranks[i]
	}
	sortRows(board.Rows, dir)
	return board
}

// tiesWithBest adjusts the p-values of the rows' comparisons with the best
// by Holm's procedure, as one family, and marks the best and every row the
// adjusted test cannot separate from it (or that could not be tested).
func tiesWithBest(rows []Row, values []float64, best int, dir stats.Direction) []bool {
	tied := make([]bool, len(rows))
	if best < 0 {
		return tied
	}
	tied[best] = true
	p := make([]float64, len(rows))
	for i := range rows {
		p[i] = math.NaN()
		if c := rows[i].VsBest; c != nil && c.Tested {
			p[i] = *c.P
		}
	}
	adjusted := stats.Holm(p)
	for i := range rows {
		c := rows[i].VsBest
		if c == nil {
			continue
		}
		if c.Tested {
			adj := adjusted[i]
			c.AdjustedP = &adj
		}
		tied[i] = !c.Tested || *c.AdjustedP >= 1-stats.Confidence
		rows[i].TiedWithBest = tied[i] && dir.Better(values[best], values[i])
	}
	return tied
}

// medianDetectable is the median of the rows' MinDetectable, or nil.
func medianDetectable(rows []Row) *float64 {
	var ds []float64
	for i := range rows {
		if c := rows[i].VsBest; c != nil && c.MinDetectable != nil {
			ds = append(ds, *c.MinDetectable)
		}
	}
	if len(ds) == 0 {
		return nil
	}
	slices.Sort(ds)
	m := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		m = (ds[len(ds)/2-1] + m) / 2
	}
	return &m
}

// groupDepth is the deepest k every summary with pass@1 reached.
func groupDepth(members []Summary) int {
	depth := -1
	for i := range members {
		if members[i].Pass1 != nil && (depth < 0 || len(members[i].PassAtK) < depth) {
			depth = len(members[i].PassAtK)
		}
	}
	return max(depth, 0)
}

// metricValue is the summary's score for metric (pass@k at depth k), or NaN.
func metricValue(s *Summary, metric Metric, k int) float64 {
	var e *Estimate
	switch metric {
	case MetricPass1:
		e = s.Pass1
	case MetricPassAtK:
		if k >= 1 && k <= len(s.PassAtK) {
			e = &s.PassAtK[k-1].Estimate
		}
	case MetricPassHatK:
		if k >= 1 && k <= len(s.PassHatK) {
			e = &s.PassHatK[k-1].Estimate
		}
	case MetricPass1ErrorsAsFailures:
		e = s.Pass1ErrorsAsFailures
	case MetricCost:
		e = s.CostPerTask
	case MetricTime:
		e = s.TimePerTask
	case MetricTokens:
		e = s.TokensPerTask
	}
	if e == nil {
		return math.NaN()
	}
	return e.Mean
}

// taskMetric returns the per-task values behind metricValue (NaN for tasks
// without a value), aligned with s.perTask.names.
func taskMetric(s *Summary, metric Metric, k int) []float64 {
	v := &s.perTask
	switch metric {
	case MetricPass1:
		if v.depth >= 1 {
			return v.passAt(1)
		}
	case MetricPassAtK:
		if k >= 1 && k <= v.depth {
			return v.passAt(k)
		}
	case MetricPassHatK:
		if k >= 1 && k <= v.depth {
			return v.passHatAt(k)
		}
	case MetricPass1ErrorsAsFailures:
		return v.strict
	case MetricCost:
		return v.cost
	case MetricTime:
		return v.time
	case MetricTokens:
		return v.tokens
	}
	return nil
}

// compare runs the paired t-test of row against best over the tasks both
// have a value for. buf is scratch space, returned for reuse.
func compare(row, best *Summary, metric Metric, k int, buf []float64) (Comparison, []float64) {
	diffs := pairedDiffs(row.perTask.names, taskMetric(row, metric, k), best.perTask.names, taskMetric(best, metric, k), buf[:0])
	c := Comparison{Tasks: len(diffs)}
	if len(diffs) > 0 {
		c.Diff = stats.Mean(diffs)
	}
	test, err := stats.PairedTTestDiffs(diffs)
	if err != nil {
		return c, diffs
	}
	c.Tested, c.Diff, c.DF = true, test.MeanDiff, test.DF
	ci, p := test.CI, test.P
	c.CI, c.P = &ci, &p
	if !math.IsInf(test.T, 0) {
		t := test.T
		c.T = &t
	}
	if se := (test.CI.Hi - test.CI.Lo) / 2 / stats.CriticalT(test.DF); se > 0 {
		d := stats.MinDetectableDiff(se, test.DF, stats.DefaultPower)
		c.MinDetectable = &d
	}
	return c, diffs
}

// pairedDiffs merge-joins two name-sorted task lists and appends a − b for
// every task both have a value for.
func pairedDiffs(aNames []string, a []float64, bNames []string, b []float64, dst []float64) []float64 {
	if a == nil || b == nil {
		return dst
	}
	for i, j := 0, 0; i < len(aNames) && j < len(bNames); {
		switch c := strings.Compare(aNames[i], bNames[j]); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			if !math.IsNaN(a[i]) && !math.IsNaN(b[j]) {
				dst = append(dst, a[i]-b[j])
			}
			i++
			j++
		}
	}
	return dst
}

// sortRows orders ranked rows by rank, then by value (better first), then by
// entrant; unranked rows go last.
func sortRows(rows []Row, dir stats.Direction) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		if (a.Rank == 0) != (b.Rank == 0) {
			if a.Rank == 0 {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(a.Rank, b.Rank); c != 0 {
			return c
		}
		if a.Value != nil && b.Value != nil && *a.Value != *b.Value {
			if dir.Better(*a.Value, *b.Value) {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Summary.Entrant.String(), b.Summary.Entrant.String())
	})
}
