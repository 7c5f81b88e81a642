package stats

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// Confidence is the two-sided confidence level of every interval in this
// package, and 1 − Confidence the significance level α of the paired t-test.
const Confidence = 0.95

// Interval is a closed interval [Lo, Hi].
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Clip returns the interval intersected with [lo, hi].
func (iv Interval) Clip(lo, hi float64) Interval {
	return Interval{Lo: math.Min(math.Max(iv.Lo, lo), hi), Hi: math.Max(math.Min(iv.Hi, hi), lo)}
}

// Contains reports whether x lies in the interval.
func (iv Interval) Contains(x float64) bool { return iv.Lo <= x && x <= iv.Hi }

// Mean returns the arithmetic mean of xs, or NaN when xs is empty.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// StdDev returns the sample standard deviation of xs (ddof = 1) around mean,
// or NaN when xs has fewer than two values.
func StdDev(xs []float64, mean float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	ss := 0.0
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// TQuantile returns the p-quantile of Student's t distribution with df degrees
// of freedom (df ≥ 1).
func TQuantile(p float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
}

// criticalCache memoizes CriticalT by degrees of freedom: a leaderboard
// computes thousands of intervals over a handful of distinct task counts.
var criticalCache sync.Map

// CriticalT returns t(1 − α/2, df), the two-sided critical value at the
// package's Confidence level (2.262157 for df = 9). Safe for concurrent use.
func CriticalT(df int) float64 {
	if v, ok := criticalCache.Load(df); ok {
		return v.(float64)
	}
	v := TQuantile(1-(1-Confidence)/2, df)
	criticalCache.Store(df, v)
	return v
}

// MeanCI returns the mean of xs and its Confidence-level interval
// mean ± t(0.975, T−1)·sd/√T, where T = len(xs) and sd uses ddof = 1.
// ok is false, and no interval exists, when T < 2. The interval is not
// clipped; callers clip to the range their quantity can take.
func MeanCI(xs []float64) (mean float64, ci Interval, ok bool) {
	mean = Mean(xs)
	if len(xs) < 2 {
		return mean, Interval{}, false
	}
	half := CriticalT(len(xs)-1) * StdDev(xs, mean) / math.Sqrt(float64(len(xs)))
	return mean, Interval{Lo: mean - half, Hi: mean + half}, true
}
