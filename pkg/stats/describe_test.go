package stats

import (
	"math"
	"testing"
)

// sleepGroup1 and sleepGroup2 are R's `sleep` data set (extra hours of sleep
// for ten patients under two drugs).
var (
	sleepGroup1 = []float64{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0}
	sleepGroup2 = []float64{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4}
)

func TestCriticalTMatchesPublishedTables(t *testing.T) {
	tests := []struct {
		df   int
		want float64
	}{
		{1, 12.706205},
		{2, 4.302653},
		{9, 2.262157},
		{30, 2.042272},
		{100, 1.983972},
	}
	for _, tt := range tests {
		if got := CriticalT(tt.df); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("CriticalT(%d) = %.7f, want %.6f", tt.df, got, tt.want)
		}
	}
}

func TestMeanCI(t *testing.T) {
	// By hand: mean 0.75, Σ(x−x̄)² = 28.805, sd = √(28.805/9) = 1.7890097,
	// se = sd/√10 = 0.5657345, half width = 2.262157·se = 1.2797804.
	// R: t.test(sleep$extra[1:10])$conf.int = (-0.5297804, 2.0297804).
	tests := []struct {
		name     string
		xs       []float64
		wantMean float64
		wantCI   Interval
		wantOK   bool
	}{
		{"sleep group 1", sleepGroup1, 0.75, Interval{-0.5297804, 2.0297804}, true},
		{"two values", []float64{0, 1}, 0.5, Interval{0.5 - 12.706205*0.5, 0.5 + 12.706205*0.5}, true},
		{"constant", []float64{0.25, 0.25, 0.25}, 0.25, Interval{0.25, 0.25}, true},
		{"single value has no interval", []float64{0.4}, 0.4, Interval{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mean, ci, ok := MeanCI(tt.xs)
			if ok != tt.wantOK || math.Abs(mean-tt.wantMean) > 1e-12 ||
				math.Abs(ci.Lo-tt.wantCI.Lo) > 1e-6 || math.Abs(ci.Hi-tt.wantCI.Hi) > 1e-6 {
				t.Errorf("MeanCI(%v) = %v, %+v, %v, want %v, %+v, %v", tt.xs, mean, ci, ok, tt.wantMean, tt.wantCI, tt.wantOK)
			}
		})
	}
	if m := Mean(nil); !math.IsNaN(m) {
		t.Errorf("Mean(nil) = %v, want NaN", m)
	}
}

func TestIntervalClip(t *testing.T) {
	tests := []struct {
		in, want Interval
	}{
		{Interval{-0.2, 1.3}, Interval{0, 1}},
		{Interval{0.2, 0.3}, Interval{0.2, 0.3}},
		{Interval{1.2, 1.3}, Interval{1, 1}},
		{Interval{-0.5, -0.1}, Interval{0, 0}},
	}
	for _, tt := range tests {
		if got := tt.in.Clip(0, 1); got != tt.want {
			t.Errorf("%+v.Clip(0, 1) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}
