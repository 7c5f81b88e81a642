package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// zCritical is z(1 − α/2) at the package's Confidence level (1.959964).
var zCritical = distuv.UnitNormal.Quantile(1 - (1-Confidence)/2)

// Wilson returns the Wilson score interval at the package's Confidence level
// for a proportion p observed over n trials (n > 0 need not be whole: see
// RateCI). Unlike the normal-approximation interval it stays inside [0, 1]
// and has nonzero width at p = 0 and p = 1 (Wilson 1927; Brown, Cai and
// DasGupta 2001 recommend it for small n).
func Wilson(p, n float64) Interval {
	z2 := zCritical * zCritical
	denom := 1 + z2/n
	center := (p + z2/(2*n)) / denom
	half := zCritical / denom * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return Interval{Lo: math.Max(0, center-half), Hi: math.Min(1, center+half)}
}

// RateCI returns the mean of per-task rates xs (each in [0, 1]) and its
// Confidence-level interval: the Wilson score interval of the mean with an
// effective sample size (Korn and Graubard 1998),
//
//	n_eff = p(1 − p) / v,   v = Σ(x − p)² / T²,
//
// the number of independent pass/fail trials whose binomial variance equals
// the observed variance v of the mean over T tasks. With one attempt per
// task the rates are 0 or 1 and n_eff = T exactly: the plain Wilson interval
// of passes/T. Since rates lie in [0, 1], n_eff ≥ T always; it is capped at
// attempts, the scored attempts behind the rates (averaging attempts cannot
// make an estimate more precise than that many independent trials), and is
// T when v = 0 (every task the same rate — all passed or all failed — where
// attempts of one task are not independent evidence).
//
// ok is false, and no interval exists, when T < 2: one task says nothing of
// how tasks vary.
func RateCI(xs []float64, attempts int) (mean float64, ci Interval, ok bool) {
	mean = Mean(xs)
	t := float64(len(xs))
	if len(xs) < 2 {
		return mean, Interval{}, false
	}
	ss := 0.0
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	v := ss / (t * t)
	nEff := t
	if v > 1e-15 {
		nEff = math.Max(t, math.Min(mean*(1-mean)/v, math.Max(float64(attempts), t)))
	}
	return mean, Wilson(mean, nEff), true
}
