package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The expected values below are printed by testdata/reference.py, an
// independent implementation in Python's standard library; the Wilson ones
// agree with published tables (0/10: upper 0.2775, Brown, Cai and DasGupta
// 2001, table 4).

func TestWilson(t *testing.T) {
	tests := []struct {
		p, n   float64
		lo, hi float64
	}{
		{0, 10, 0, 0.27753279986288915},
		{1, 10, 0.7224672001371109, 1},
		{0.5, 10, 0.23659309051256405, 0.763406909487436},
		{0.9, 20, 0.6989663547715128, 0.9721335187862319},
		{14.0 / 15, 15, 0.7018347012621997, 0.9881331045067314},
	}
	for _, tt := range tests {
		got := Wilson(tt.p, tt.n)
		if math.Abs(got.Lo-tt.lo) > 1e-12 || math.Abs(got.Hi-tt.hi) > 1e-12 {
			t.Errorf("Wilson(%v, %v) = %+v, want [%v, %v]", tt.p, tt.n, got, tt.lo, tt.hi)
		}
	}
}

func TestRateCI(t *testing.T) {
	third := 1.0 / 3
	tests := []struct {
		name     string
		xs       []float64
		attempts int
		mean     float64
		lo, hi   float64
		ok       bool
	}{
		{"one attempt per task is Wilson of passes/T", []float64{1, 1, 1, 1, 1, 0, 0, 0, 0, 0}, 10, 0.5, 0.23659309051256405, 0.763406909487436, true},
		{"all passed has width", []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 45, 1, 0.7961166989641514, 1, true},
		{"all failed has width", []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 10, 0, 0, 0.27753279986288915, true},
		{"attempt averages: effective n 14.73", []float64{third, 2 * third, 1, 0, third, 2 * third}, 18, 0.5, 0.27258087902036265, 0.7274191209796373, true},
		{"equal rates: effective n is T", []float64{third, third, third, third}, 12, third, 0.07508313967000402, 0.7548804724815283, true},
		{"one task has no interval", []float64{0.5}, 2, 0.5, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mean, ci, ok := RateCI(tt.xs, tt.attempts)
			if ok != tt.ok || math.Abs(mean-tt.mean) > 1e-12 || math.Abs(ci.Lo-tt.lo) > 1e-9 || math.Abs(ci.Hi-tt.hi) > 1e-9 {
				t.Errorf("RateCI(%v, %d) = %v, %+v, %v, want %v, [%v, %v], %v", tt.xs, tt.attempts, mean, ci, ok, tt.mean, tt.lo, tt.hi, tt.ok)
			}
		})
	}
}

func TestPCGMatchesReferenceImplementation(t *testing.T) {
	// The reference script's PCG must be math/rand/v2's for its bootstrap
	// values to mean anything.
	if got := rand.NewPCG(1, 2).Uint64(); got != 14192431797130687760 {
		t.Fatalf("PCG(1, 2) first output %d, want 14192431797130687760", got)
	}
	if got := rand.NewPCG(BootstrapSeed[0], BootstrapSeed[1]).Uint64(); got != 4564514398242876155 {
		t.Fatalf("PCG(BootstrapSeed) first output %d, want 4564514398242876155", got)
	}
}

func TestBootstrapMeanCI(t *testing.T) {
	tests := []struct {
		name   string
		xs     []float64
		lo, hi float64
		ok     bool
	}{
		// Heavy-tailed costs: mean 0.405, the interval is far from
		// symmetric about it (a t interval would be 0.405 ± 0.53).
		{"skewed costs", []float64{0.12, 0.08, 0.10, 0.95, 0.11, 0.09, 2.40, 0.07, 0.13, 0.10}, 0.096, 0.882025, true},
		{"two values", []float64{1, 3}, 1, 3, true},
		{"one value", []float64{1}, 0, 0, false},
	}
	for _, tt := range tests {
		ci, ok := BootstrapMeanCI(tt.xs)
		if ok != tt.ok || math.Abs(ci.Lo-tt.lo) > 1e-12 || math.Abs(ci.Hi-tt.hi) > 1e-12 {
			t.Errorf("%s: BootstrapMeanCI(%v) = %+v, %v, want [%v, %v], %v", tt.name, tt.xs, ci, ok, tt.lo, tt.hi, tt.ok)
		}
	}
}

func TestHolm(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		p    []float64
		want []float64
	}{
		{"step-down with monotonicity", []float64{0.01, 0.04, 0.03, 0.005, 0.20}, []float64{0.04, 0.09, 0.09, 0.025, 0.2}},
		{"equal p-values", []float64{0.02, 0.02, 0.5}, []float64{0.06, 0.06, 0.5}},
		{"capped at 1", []float64{0.6, 0.7}, []float64{1, 1}},
		{"one test is unadjusted", []float64{0.03}, []float64{0.03}},
		{"NaN is outside the family", []float64{0.01, nan, 0.04}, []float64{0.02, nan, 0.04}},
		{"empty", nil, []float64{}},
	}
	for _, tt := range tests {
		got := Holm(tt.p)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: Holm(%v) = %v, want %v", tt.name, tt.p, got, tt.want)
		}
		for i := range got {
			if math.IsNaN(tt.want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(got[i]) && math.Abs(got[i]-tt.want[i]) > 1e-15) {
				t.Errorf("%s: Holm(%v) = %v, want %v", tt.name, tt.p, got, tt.want)
				break
			}
		}
	}
}

func TestVarianceParts(t *testing.T) {
	tests := []struct {
		name            string
		n, c            []int
		between, within float64
		ok              bool
	}{
		// Exact fractions from the reference script: 7/54 and 1/6.
		{"four tasks of three", []int{3, 3, 3, 3}, []int{0, 1, 2, 3}, 7.0 / 54, 1.0 / 6, true},
		{"unequal attempts", []int{2, 4, 3}, []int{1, 4, 0}, 1.0 / 6, 1.0 / 6, true},
		{"one attempt has no within-task variance", []int{1, 3}, []int{1, 2}, 0, 0, false},
		{"one task", []int{3}, []int{1}, 0, 0, false},
	}
	for _, tt := range tests {
		b, w, ok := VarianceParts(tt.n, tt.c)
		if ok != tt.ok || math.Abs(b-tt.between) > 1e-15 || math.Abs(w-tt.within) > 1e-15 {
			t.Errorf("%s: VarianceParts(%v, %v) = %v, %v, %v, want %v, %v, %v", tt.name, tt.n, tt.c, b, w, ok, tt.between, tt.within, tt.ok)
		}
	}
}

// TestBootstrapMeanCIsEqualsOneByOne: resampling several samples together
// gives each the interval it gets alone.
func TestBootstrapMeanCIsEqualsOneByOne(t *testing.T) {
	a := []float64{0.12, 0.08, 0.10, 0.95, 0.11, 0.09, 2.40, 0.07, 0.13, 0.10}
	b := []float64{61, 75, 300, 58, 64, 70, 1200, 66, 59, 62}
	cis, ok := BootstrapMeanCIs(a, b)
	if !ok || len(cis) != 2 {
		t.Fatalf("BootstrapMeanCIs() = %v, %v", cis, ok)
	}
	for i, xs := range [][]float64{a, b} {
		if one, _ := BootstrapMeanCI(xs); cis[i] != one {
			t.Errorf("BootstrapMeanCIs()[%d] = %+v, BootstrapMeanCI = %+v", i, cis[i], one)
		}
	}
	if _, ok := BootstrapMeanCIs(a, b[:9]); ok {
		t.Error("BootstrapMeanCIs of different lengths: ok, want not")
	}
}

// TestRateCICoverageOnSmallSkewedData computes, by enumerating every
// outcome of T one-attempt tasks with true pass rate p, the probability
// that the interval covers p. The exact coverages are from
// testdata/reference.py's Wilson; the t interval over tasks that RateCI
// replaced covers p = 0.95 on 10 tasks only 40% of the time.
func TestRateCICoverageOnSmallSkewedData(t *testing.T) {
	coverage := func(tasks int, p float64, ci func([]float64) (Interval, bool)) float64 {
		total := 0.0
		for passes := 0; passes <= tasks; passes++ {
			xs := make([]float64, tasks)
			for i := range passes {
				xs[i] = 1
			}
			iv, ok := ci(xs)
			if ok && iv.Contains(p) {
				total += float64(binomial(tasks, passes).Int64()) * math.Pow(p, float64(passes)) * math.Pow(1-p, float64(tasks-passes))
			}
		}
		return total
	}
	rate := func(xs []float64) (Interval, bool) {
		_, ci, ok := RateCI(xs, len(xs))
		return ci, ok
	}
	tInterval := func(xs []float64) (Interval, bool) {
		_, ci, ok := MeanCI(xs)
		return ci.Clip(0, 1), ok
	}
	tests := []struct {
		tasks      int
		p          float64
		wantWilson float64
		wantT      float64
	}{
		{10, 0.8, 0.9672, 0.8863},
		{10, 0.95, 0.9139, 0.4012},
		{20, 0.95, 0.9245, 0.6412},
		{30, 0.98, 0.9783, 0.4542},
	}
	for _, tt := range tests {
		if got := coverage(tt.tasks, tt.p, rate); math.Abs(got-tt.wantWilson) > 1e-4 {
			t.Errorf("RateCI coverage at T=%d, p=%v: %.4f, want %.4f", tt.tasks, tt.p, got, tt.wantWilson)
		}
		if got := coverage(tt.tasks, tt.p, tInterval); math.Abs(got-tt.wantT) > 1e-4 {
			t.Errorf("t interval coverage at T=%d, p=%v: %.4f, want %.4f", tt.tasks, tt.p, got, tt.wantT)
		}
	}
}
