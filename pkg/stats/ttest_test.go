package stats

import (
	"errors"
	"math"
	"testing"
)

func TestPairedTTest(t *testing.T) {
	tests := []struct {
		name    string
		a, b    []float64
		want    PairedTest
		wantErr error
	}{
		{
			// R: t.test(sleep$extra[1:10], sleep$extra[11:20], paired = TRUE)
			name: "R sleep",
			a:    sleepGroup1, b: sleepGroup2,
			want: PairedTest{T: -4.062127683, DF: 9, P: 0.002832890, MeanDiff: -1.58,
				CI: Interval{-2.459885763, -0.700114237}},
		},
		{
			name: "R sleep reversed",
			a:    sleepGroup2, b: sleepGroup1,
			want: PairedTest{T: 4.062127683, DF: 9, P: 0.002832890, MeanDiff: 1.58,
				CI: Interval{0.700114237, 2.459885763}},
		},
		{
			name: "all differences zero",
			a:    []float64{0.5, 1, 0}, b: []float64{0.5, 1, 0},
			want: PairedTest{T: 0, DF: 2, P: 1, MeanDiff: 0, CI: Interval{0, 0}},
		},
		{
			name: "identical nonzero differences",
			a:    []float64{0.3, 0.6, 1.1, 0.4}, b: []float64{0.2, 0.5, 1.0, 0.3},
			want: PairedTest{T: math.Inf(1), DF: 3, P: 0, MeanDiff: 0.1, CI: Interval{0.1, 0.1}},
		},
		{
			name: "identical negative differences",
			a:    []float64{0, 0}, b: []float64{1, 1},
			want: PairedTest{T: math.Inf(-1), DF: 1, P: 0, MeanDiff: -1, CI: Interval{-1, -1}},
		},
		{name: "one pair", a: []float64{1}, b: []float64{0}, wantErr: ErrTooFewPairs},
		{name: "no pairs", wantErr: ErrTooFewPairs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PairedTTest(tt.a, tt.b)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("PairedTTest() error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !closeOrEqual(got.T, tt.want.T, 1e-8) || got.DF != tt.want.DF || !closeOrEqual(got.P, tt.want.P, 1e-9) ||
				!closeOrEqual(got.MeanDiff, tt.want.MeanDiff, 1e-12) ||
				!closeOrEqual(got.CI.Lo, tt.want.CI.Lo, 1e-8) || !closeOrEqual(got.CI.Hi, tt.want.CI.Hi, 1e-8) {
				t.Errorf("PairedTTest() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPairedTTestLengthMismatch(t *testing.T) {
	if _, err := PairedTTest([]float64{1, 2}, []float64{1}); err == nil {
		t.Error("PairedTTest(2 values, 1 value) error = nil, want an error")
	}
}

func TestPairedTestSignificant(t *testing.T) {
	tests := []struct {
		p    float64
		want bool
	}{{0.0028, true}, {0.049, true}, {0.05, false}, {0.2, false}, {1, false}}
	for _, tt := range tests {
		if got := (PairedTest{P: tt.p}).Significant(); got != tt.want {
			t.Errorf("PairedTest{P: %v}.Significant() = %v, want %v", tt.p, got, tt.want)
		}
	}
}

func closeOrEqual(got, want, tol float64) bool {
	if math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= tol
}
