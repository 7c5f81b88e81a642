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
	n := len(xs)
	if n < 2 {
		return Interval{}, false
	}
	rng := rand.NewPCG(BootstrapSeed[0], BootstrapSeed[1])
	means := make([]float64, BootstrapResamples)
	for b := range means {
		sum := 0.0
		for range n {
			i, _ := bits.Mul64(rng.Uint64(), uint64(n))
			sum += xs[i]
		}
		means[b] = sum / float64(n)
	}
	slices.Sort(means)
	alpha := 1 - Confidence
	return Interval{Lo: quantile7(means, alpha/2), Hi: quantile7(means, 1-alpha/2)}, true
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
