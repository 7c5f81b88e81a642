package stats

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// ErrTooFewPairs is returned by the paired t-test when fewer than two pairs
// are available, so no variance (and no test) exists.
var ErrTooFewPairs = errors.New("paired t-test needs at least two pairs")

// PairedTest is the result of a two-sided paired t-test of a − b.
type PairedTest struct {
	// T is the t statistic. It is ±Inf when every difference is the same
	// nonzero value (zero spread), and 0 when every difference is zero.
	T float64 `json:"t"`
	// DF is the degrees of freedom, pairs − 1.
	DF int `json:"df"`
	// P is the two-sided p-value: 1 when every difference is zero, 0 when the
	// differences are identical and nonzero.
	P float64 `json:"p"`
	// MeanDiff is the mean of the differences a − b.
	MeanDiff float64 `json:"mean_diff"`
	// CI is the Confidence-level interval of MeanDiff (a single point when the
	// differences have zero spread).
	CI Interval `json:"ci"`
}

// Significant reports whether the test rejects "no difference" at
// α = 1 − Confidence.
func (r PairedTest) Significant() bool { return r.P < 1-Confidence }

// PairedTTest runs a two-sided paired t-test on a − b. a and b must have the
// same length, at least two.
func PairedTTest(a, b []float64) (PairedTest, error) {
	if len(a) != len(b) {
		return PairedTest{}, fmt.Errorf("paired t-test: %d values against %d", len(a), len(b))
	}
	diffs := make([]float64, len(a))
	for i := range a {
		diffs[i] = a[i] - b[i]
	}
	return PairedTTestDiffs(diffs)
}

// PairedTTestDiffs runs the paired t-test on precomputed differences, which
// lets callers reuse one buffer across many comparisons.
func PairedTTestDiffs(diffs []float64) (PairedTest, error) {
	n := len(diffs)
	if n < 2 {
		return PairedTest{}, ErrTooFewPairs
	}
	mean := Mean(diffs)
	sd := StdDev(diffs, mean)
	r := PairedTest{DF: n - 1, MeanDiff: mean}
	if sd == 0 || sd < 1e-12*math.Abs(mean) {
		// Zero spread: no sampling variation at all. Identical differences
		// are either all zero (no evidence of any difference) or a certain
		// shift.
		r.CI = Interval{Lo: mean, Hi: mean}
		if mean == 0 {
			r.T, r.P = 0, 1
		} else {
			r.T, r.P = math.Inf(sign(mean)), 0
		}
		return r, nil
	}
	se := sd / math.Sqrt(float64(n))
	r.T = mean / se
	dist := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(r.DF)}
	r.P = math.Min(1, 2*dist.Survival(math.Abs(r.T)))
	half := CriticalT(r.DF) * se
	r.CI = Interval{Lo: mean - half, Hi: mean + half}
	return r, nil
}

func sign(x float64) int {
	if x < 0 {
		return -1
	}
	return 1
}
