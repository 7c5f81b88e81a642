package stats

import "math"

// Direction says which end of a metric is better.
type Direction int

const (
	// HigherIsBetter ranks larger values first (pass rates).
	HigherIsBetter Direction = iota
	// LowerIsBetter ranks smaller values first (cost, time, tokens).
	LowerIsBetter
)

// Better reports whether a is strictly better than b in direction d.
func (d Direction) Better(a, b float64) bool {
	if d == LowerIsBetter {
		return a < b
	}
	return a > b
}

// CompetitionRanks returns "1224" competition ranks for values: an entry
// marked tiedWithBest gets 1, any other gets 1 + the number of entries with a
// strictly better value. NaN values are unranked (rank 0) and never count as
// better. tiedWithBest may be nil; otherwise it must be as long as values.
func CompetitionRanks(values []float64, d Direction, tiedWithBest []bool) []int {
	ranks := make([]int, len(values))
	for i, v := range values {
		if math.IsNaN(v) {
			continue
		}
		if tiedWithBest != nil && tiedWithBest[i] {
			ranks[i] = 1
			continue
		}
		rank := 1
		for _, w := range values {
			if !math.IsNaN(w) && d.Better(w, v) {
				rank++
			}
		}
		ranks[i] = rank
	}
	return ranks
}

// Best returns the index of the best non-NaN value in direction d (the first
// one on exact equality), or −1 when every value is NaN.
func Best(values []float64, d Direction) int {
	best := -1
	for i, v := range values {
		if math.IsNaN(v) {
			continue
		}
		if best < 0 || d.Better(v, values[best]) {
			best = i
		}
	}
	return best
}
