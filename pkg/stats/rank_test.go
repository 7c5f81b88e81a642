package stats

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompetitionRanks(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		values []float64
		dir    Direction
		tied   []bool
		want   []int
	}{
		{"equal values share, next skips", []float64{0.9, 0.9, 0.5}, HigherIsBetter, nil, []int{1, 1, 3}},
		{"statistical tie with best", []float64{0.9, 0.8, 0.5, 0.4}, HigherIsBetter, []bool{true, true, false, false}, []int{1, 1, 3, 4}},
		{"tie does not lift others", []float64{0.9, 0.85, 0.8, 0.2}, HigherIsBetter, []bool{true, true, true, false}, []int{1, 1, 1, 4}},
		{"lower is better", []float64{3, 1, 2, 1}, LowerIsBetter, nil, []int{4, 1, 3, 1}},
		{"lower is better with tie", []float64{0.30, 0.10, 0.12}, LowerIsBetter, []bool{false, true, true}, []int{3, 1, 1}},
		{"NaN is unranked and never better", []float64{nan, 0.5, 0.7}, HigherIsBetter, nil, []int{0, 2, 1}},
		{"empty", nil, HigherIsBetter, nil, []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CompetitionRanks(tt.values, tt.dir, tt.tied)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CompetitionRanks(%v) mismatch (-want +got):\n%s", tt.values, diff)
			}
		})
	}
}

func TestBest(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		values []float64
		dir    Direction
		want   int
	}{
		{"highest", []float64{0.2, 0.9, 0.5}, HigherIsBetter, 1},
		{"lowest", []float64{0.2, 0.9, 0.1}, LowerIsBetter, 2},
		{"first on equality", []float64{0.9, 0.9}, HigherIsBetter, 0},
		{"skips NaN", []float64{nan, 0.3}, HigherIsBetter, 1},
		{"all NaN", []float64{nan}, HigherIsBetter, -1},
	}
	for _, tt := range tests {
		if got := Best(tt.values, tt.dir); got != tt.want {
			t.Errorf("%s: Best(%v) = %d, want %d", tt.name, tt.values, got, tt.want)
		}
	}
}
