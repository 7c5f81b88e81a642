package stats

import (
	"math/bits"
	"math/rand/v2"
	"slices"
)

// BootstrapResamples is how many resamples BootstrapMeanCI draws.
const BootstrapResamples = 1000

// BootstrapSeed seeds every bootstrap, so that a board recomputed from the
// same data shows the same intervals.
var BootstrapSeed = [2]uint64{0x6761756e746c6574, 0x626f6f7473747261} // "gauntlet", "bootstra"

// BootstrapMeanCI returns the percentile bootstrap interval at the package's
// Confidence level of the mean of xs: BootstrapResamples resamples of
// len(xs) values drawn with replacement, each index the high word of a
// 64-bit PCG-DXSM output (math/rand/v2's PCG seeded with BootstrapSeed)
// times len(xs); the interval's ends are the 2.5% and 97.5% quantiles of
// the resample means by linear interpolation between order statistics
// (Hyndman and Fan's type 7, numpy's default). It suits heavy-tailed
// quantities (cost, time, tokens), where a t interval is symmetric about a
// mean that a few large values drag. ok is false when len(xs) < 2.
func BootstrapMeanCI(xs []float64) (ci Interval, ok bool) {
	cis, ok := BootstrapMeanCIs(xs)
	if !ok {
		return Interval{}, false
	}
	return cis[0], true
}

// BootstrapMeanCIs is BootstrapMeanCI of each of several samples of one
// length (the per-task cost, time and tokens of the same tasks): since every
// bootstrap starts from BootstrapSeed, they resample the same indices, which
// are drawn once for all. cis[i] equals BootstrapMeanCI(xss[i]). ok is false
// when the samples are fewer than two values or of different lengths.
func BootstrapMeanCIs(xss ...[]float64) (cis []Interval, ok bool) {
	if len(xss) == 0 {
		return nil, false
	}
	n := len(xss[0])
	for _, xs := range xss {
		if len(xs) != n {
			return nil, false
		}
	}
	if n < 2 {
		return nil, false
	}
	rng := rand.NewPCG(BootstrapSeed[0], BootstrapSeed[1])
	means := make([][]float64, len(xss))
	for q := range means {
		means[q] = make([]float64, BootstrapResamples)
	}
	sums := make([]float64, len(xss))
	for b := range BootstrapResamples {
		clear(sums)
		for range n {
			i, _ := bits.Mul64(rng.Uint64(), uint64(n))
			for q, xs := range xss {
				sums[q] += xs[i]
			}
		}
		for q := range xss {
			means[q][b] = sums[q] / float64(n)
		}
	}
	alpha := 1 - Confidence
	cis = make([]Interval, len(xss))
	for q := range xss {
		slices.Sort(means[q])
		cis[q] = Interval{Lo: quantile7(means[q], alpha/2), Hi: quantile7(means[q], 1-alpha/2)}
	}
	return cis, true
}

// quantile7 is the q-quantile of sorted by Hyndman and Fan's type 7.
func quantile7(sorted []float64, q float64) float64 {
	h := q * float64(len(sorted)-1)
	lo := int(h)
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}
