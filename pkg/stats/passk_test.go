package stats

import (
	"math"
	"math/big"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPassAtKKnownAnswers pins values computed independently as exact
// fractions of 1 − C(n−c,k)/C(n,k).
func TestPassAtKKnownAnswers(t *testing.T) {
	tests := []struct {
		name    string
		n, c, k int
		want    float64
		wantOK  bool
	}{
		{"one of two, k=2", 2, 1, 2, 1, true},
		{"5,2,3 is 9/10", 5, 2, 3, 9.0 / 10, true},
		{"10,3,5 is 11/12", 10, 3, 5, 11.0 / 12, true},
		{"10,5,5 is 251/252", 10, 5, 5, 251.0 / 252, true},
		{"20,3,10 is 17/19", 20, 3, 10, 17.0 / 19, true},
		{"100,5,10 is 79137/190120", 100, 5, 10, 79137.0 / 190120, true},
		{"no pass k=1", 10, 0, 1, 0, true},
		{"no pass k=5", 10, 0, 5, 0, true},
		{"no pass k=10", 10, 0, 10, 0, true},
		{"pass@1 is c/n", 7, 3, 1, 3.0 / 7, true},
		{"all pass", 4, 4, 4, 1, true},
		{"n-c<k is 1", 6, 4, 3, 1, true},
		{"n<k not reported", 2, 2, 3, 0, false},
		{"n<k not reported even with no pass", 1, 0, 2, 0, false},
		{"k<1 not reported", 5, 2, 0, 0, false},
		{"c>n not reported", 3, 4, 1, 0, false},
		{"negative c not reported", 3, -1, 1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := PassAtK(tt.n, tt.c, tt.k)
			if ok != tt.wantOK || math.Abs(got-tt.want) > 1e-14 {
				t.Errorf("PassAtK(%d, %d, %d) = %v, %v, want %v, %v", tt.n, tt.c, tt.k, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func binomial(n, k int) *big.Int { return new(big.Int).Binomial(int64(n), int64(k)) }

// exactPassAtK computes 1 − C(n−c,k)/C(n,k) as an exact rational.
func exactPassAtK(n, c, k int) float64 {
	q := new(big.Rat).SetFrac(binomial(n-c, k), binomial(n, k))
	f, _ := new(big.Rat).Sub(big.NewRat(1, 1), q).Float64()
	return f
}

func TestPassAtKMatchesExactRationalGrid(t *testing.T) {
	for n := 1; n <= 60; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				got, ok := PassAtK(n, c, k)
				want := exactPassAtK(n, c, k)
				if !ok || math.Abs(got-want) > 1e-13 {
					t.Fatalf("PassAtK(%d, %d, %d) = %v, %v, want %v (exact)", n, c, k, got, ok, want)
				}
			}
		}
	}
}

func TestPassAtKCurve(t *testing.T) {
	tests := []struct {
		name        string
		n, c, depth int
		wantDefined int
		want        []float64
	}{
		{"n=3 c=1 depth 3", 3, 1, 3, 3, []float64{1.0 / 3, 2.0 / 3, 1}},
		{"deeper than n stops at n", 2, 1, 4, 2, []float64{0.5, 1, -1, -1}},
		{"no pass", 3, 0, 2, 2, []float64{0, 0}},
		{"bad c", 3, 4, 2, 0, []float64{-1, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]float64, tt.depth)
			for i := range dst {
				dst[i] = -1
			}
			defined := PassAtKCurve(tt.n, tt.c, dst)
			if defined != tt.wantDefined {
				t.Errorf("PassAtKCurve(%d, %d) defined %d, want %d", tt.n, tt.c, defined, tt.wantDefined)
			}
			if diff := cmp.Diff(tt.want, dst, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-14 })); diff != "" {
				t.Errorf("PassAtKCurve(%d, %d) mismatch (-want +got):\n%s", tt.n, tt.c, diff)
			}
		})
	}
}

// TestPassHatKKnownAnswers pins exact fractions C(c,k)/C(n,k) from
// testdata/reference.py.
func TestPassHatKKnownAnswers(t *testing.T) {
	tests := []struct {
		name    string
		n, c, k int
		want    float64
		wantOK  bool
	}{
		{"5,3,1 is 3/5", 5, 3, 1, 3.0 / 5, true},
		{"5,3,2 is 3/10", 5, 3, 2, 3.0 / 10, true},
		{"5,3,3 is 1/10", 5, 3, 3, 1.0 / 10, true},
		{"c<k is 0", 5, 3, 4, 0, true},
		{"10,7,4 is 1/6", 10, 7, 4, 1.0 / 6, true},
		{"100,90,10", 100, 90, 10, 520058680173.0 / 1573664496040, true},
		{"all pass", 4, 4, 4, 1, true},
		{"no pass", 4, 0, 1, 0, true},
		{"n<k not reported", 2, 2, 3, 0, false},
		{"k<1 not reported", 5, 2, 0, 0, false},
		{"c>n not reported", 3, 4, 1, 0, false},
	}
	for _, tt := range tests {
		got, ok := PassHatK(tt.n, tt.c, tt.k)
		if ok != tt.wantOK || math.Abs(got-tt.want) > 1e-14 {
			t.Errorf("%s: PassHatK(%d, %d, %d) = %v, %v, want %v, %v", tt.name, tt.n, tt.c, tt.k, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestPassHatKMatchesExactRationalGrid(t *testing.T) {
	for n := 1; n <= 60; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				got, ok := PassHatK(n, c, k)
				want, _ := new(big.Rat).SetFrac(binomial(c, k), binomial(n, k)).Float64()
				if !ok || math.Abs(got-want) > 1e-13 {
					t.Fatalf("PassHatK(%d, %d, %d) = %v, %v, want %v (exact)", n, c, k, got, ok, want)
				}
			}
		}
	}
}

func TestPassHatKCurve(t *testing.T) {
	dst := []float64{-1, -1, -1, -1}
	if defined := PassHatKCurve(3, 2, dst); defined != 3 {
		t.Fatalf("PassHatKCurve(3, 2) defined %d, want 3", defined)
	}
	want := []float64{2.0 / 3, 1.0 / 3, 0, -1}
	for i := range want {
		if math.Abs(dst[i]-want[i]) > 1e-15 {
			t.Fatalf("PassHatKCurve(3, 2) = %v, want %v", dst, want)
		}
	}
}
