package stats

import (
	"cmp"
	"math"
	"slices"
)

// Holm returns Holm's (1979) step-down adjusted p-values of a family of
// tests, in the order of p: with the m p-values sorted ascending,
// p̃₍ᵢ₎ = max_{j ≤ i} min(1, (m − j + 1)·p₍ⱼ₎). Rejecting every test with
// p̃ < α controls the family-wise error rate at α under any dependence
// between the tests. NaN p-values are not part of the family and stay NaN.
func Holm(p []float64) []float64 {
	idx := make([]int, 0, len(p))
	for i, v := range p {
		if !math.IsNaN(v) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(p[a], p[b]) })
	adjusted := make([]float64, len(p))
	for i := range adjusted {
		adjusted[i] = math.NaN()
	}
	m, running := len(idx), 0.0
	for rank, i := range idx {
		running = math.Max(running, math.Min(1, float64(m-rank)*p[i]))
		adjusted[i] = running
	}
	return adjusted
}
