package stats

import (
	"math"
	"strings"
	"testing"
)

func TestPairedSampleSizeMatchesConnorByHand(t *testing.T) {
	// Reference computed by hand from Connor's formula, not by this code:
	// pA = 0.6, pB = 0.4: δ = 0.2, ψ = 0.6·0.6 + 0.4·0.4 = 0.52.
	// z(0.975) = 1.959964, z(0.80) = 0.841621 (normal tables).
	// 1.959964·√0.52 = 1.959964·0.721110 = 1.413350
	// 0.841621·√0.48 = 0.841621·0.692820 = 0.583092
	// (1.996442)² / 0.04 = 3.985781 / 0.04 = 99.64 → 100 pairs.
	plan, err := PairedSampleSize(0.6, 0.4, 0.05, DefaultPower, 1)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Pairs != 100 || plan.Tasks != 100 {
		t.Fatalf("pairs %d tasks %d, want 100 and 100", plan.Pairs, plan.Tasks)
	}
	// Same pairs over 3 attempts: ⌈100/3⌉ = 34 tasks.
	plan, err = PairedSampleSize(0.4, 0.6, 0.05, DefaultPower, 3)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Pairs != 100 || plan.Tasks != 34 {
		t.Fatalf("pairs %d tasks %d, want 100 and 34", plan.Pairs, plan.Tasks)
	}
	if len(plan.Assumptions) == 0 {
		t.Fatal("no assumptions stated")
	}
}

func TestPairedSampleSizeSecondReference(t *testing.T) {
	// By hand: pA = 0.5, pB = 0.3: δ = 0.2, ψ = 0.5·0.7 + 0.3·0.5 = 0.50.
	// 1.959964·√0.50 = 1.959964·0.707107 = 1.385904
	// 0.841621·√0.46 = 0.841621·0.678233 = 0.570815
	// (1.956719)² / 0.04 = 3.828749 / 0.04 = 95.72 → 96 pairs.
	plan, err := PairedSampleSize(0.5, 0.3, 0.05, DefaultPower, 1)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Pairs != 96 {
		t.Fatalf("pairs %d, want 96", plan.Pairs)
	}
}

func TestPairedSampleSizeRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		a, b, alpha, power float64
		attempts           int
		want               string
	}{
		{1.2, 0.4, 0.05, 0.8, 1, "pass rate A"},
		{0.5, -0.1, 0.05, 0.8, 1, "pass rate B"},
		{0.5, 0.5, 0.05, 0.8, 1, "no difference"},
		{0.6, 0.4, 0, 0.8, 1, "alpha"},
		{0.6, 0.4, 0.05, 1, 1, "power"},
		{0.6, 0.4, 0.05, 0.8, 0, "attempts"},
	} {
		_, err := PairedSampleSize(c.a, c.b, c.alpha, c.power, c.attempts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c, err, c.want)
		}
	}
}

func TestMinDetectableDiffMatchesPublishedTables(t *testing.T) {
	// Student's t tables: t(0.975, 9) = 2.262157, t(0.975, 30) = 2.042272;
	// t(0.80, 9) = 0.883404 and t(0.80, 30) = 0.853767 by integrating the
	// density (testdata/reference.py; tables print 0.883 and 0.854).
	tests := []struct {
		se   float64
		df   int
		want float64
	}{
		{0.1, 9, (2.262157 + 0.883404) * 0.1},
		{0.05, 30, (2.042272 + 0.853767) * 0.05},
	}
	for _, tt := range tests {
		if got := MinDetectableDiff(tt.se, tt.df, DefaultPower); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("MinDetectableDiff(%v, %d, 0.8) = %.7f, want %.7f", tt.se, tt.df, got, tt.want)
		}
	}
}
