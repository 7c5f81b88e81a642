package harbor

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The ordering is the one PEP 440 gives in its "Summary of permitted
// suffixes and relative ordering" example, extended with epochs, local
// versions and big numbers; each version must sort strictly after the one
// before it.
var pep440Ascending = []string{
	"1.0.dev456",
	"1.0a1",
	"1.0a2.dev456",
	"1.0a12.dev456",
	"1.0a12",
	"1.0b1.dev456",
	"1.0b2",
	"1.0b2.post345.dev456",
	"1.0b2.post345",
	"1.0rc1.dev456",
	"1.0rc1",
	"1.0",
	"1.0+abc.5",
	"1.0+abc.7",
	"1.0+5",
	"1.0.post456.dev34",
	"1.0.post456",
	"1.0.15",
	"1.1.dev1",
	"2.0",
	"2.0.1",
	"10.0",
	"20260129",
	"1!0.1",
	"1!1.0",
}

func TestComparePEP440Ordering(t *testing.T) {
	for i := range pep440Ascending {
		for j := range pep440Ascending {
			a, b := pep440Ascending[i], pep440Ascending[j]
			got, ok := ComparePEP440(a, b)
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if !ok || got != want {
				t.Errorf("ComparePEP440(%q, %q) = %d, %v, want %d, true", a, b, got, ok, want)
			}
		}
	}
}

func TestComparePEP440KnownAnswers(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		// The chain from the brief.
		{"1.0.dev1", "1.0a1", -1},
		{"1.0a1", "1.0b2", -1},
		{"1.0b2", "1.0rc1", -1},
		{"1.0rc1", "1.0", -1},
		{"1.0", "1.0.post1", -1},
		// Release segments: trailing zeros do not count, numbers are numeric.
		{"2.0", "2.0.0", 0},
		{"2", "2.0.0.0", 0},
		{"1.10", "1.9", 1},
		{"1.01", "1.1", 0},
		// Epochs dominate everything.
		{"1!1.0", "2.0", 1},
		{"0!2.0", "2.0", 0},
		{"2!1.0.dev1", "1!9.9", 1},
		// Local versions: none < any; numeric segments beat alphanumeric ones.
		{"1.0", "1.0+local", -1},
		{"1.0+abc", "1.0+1", -1},
		{"1.0+1.2", "1.0+1", 1},
		{"1.0+ubuntu-1", "1.0+ubuntu.1", 0},
		{"1.0+10", "1.0+9", 1},
		// Normalised spellings (PEP 440 "Normalization").
		{"1.0alpha1", "1.0a1", 0},
		{"1.0-beta.2", "1.0b2", 0},
		{"1.0c1", "1.0rc1", 0},
		{"1.0pre1", "1.0rc1", 0},
		{"1.0preview1", "1.0rc1", 0},
		{"1.0a", "1.0a0", 0},
		{"1.0-1", "1.0.post1", 0},
		{"1.0.rev1", "1.0.post1", 0},
		{"1.0r", "1.0.post0", 0},
		{"1.0-dev", "1.0.dev0", 0},
		{"v1.0", "1.0", 0},
		{"V1.0RC1", "1.0rc1", 0},
		{" 1.0 ", "1.0", 0},
		// Dev releases of pre and post releases.
		{"1.0a1.dev1", "1.0a1", -1},
		{"1.0.post1.dev1", "1.0", 1},
		{"1.0.post1.dev1", "1.0.post1", -1},
		// Numbers beyond 64 bits.
		{"1.99999999999999999999999", "1.99999999999999999999998", 1},
	}
	for _, tt := range tests {
		got, ok := ComparePEP440(tt.a, tt.b)
		if !ok || got != tt.want {
			t.Errorf("ComparePEP440(%q, %q) = %d, %v, want %d, true", tt.a, tt.b, got, ok, tt.want)
		}
		back, _ := ComparePEP440(tt.b, tt.a)
		if back != -tt.want {
			t.Errorf("ComparePEP440(%q, %q) = %d, want %d (antisymmetry)", tt.b, tt.a, back, -tt.want)
		}
	}
}

func TestComparePEP440Invalid(t *testing.T) {
	for _, s := range []string{"", "head", "parity", "lite200", "all", "1.0-", "1..0", "1.0+", "1.0+a..b", "1.0.x", "1.0 beta", "-1.0", "1.0a1b2", ".1"} {
		if _, ok := ComparePEP440(s, "1.0"); ok {
			t.Errorf("ComparePEP440(%q, \"1.0\") ok = true, want false", s)
		}
		if _, ok := ComparePEP440("1.0", s); ok {
			t.Errorf("ComparePEP440(\"1.0\", %q) ok = true, want false", s)
		}
	}
}

func TestSortVersions(t *testing.T) {
	want := []string{"1.0.dev1", "1.0a1", "1.0", "1.0.post1", "2.0", "10.0", "head", "lite200", "parity"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		got := slices.Clone(want)
		r.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		SortVersions(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("SortVersions mismatch (-want +got):\n%s", diff)
		}
	}
}

func TestLatestVersion(t *testing.T) {
	tests := []struct {
		versions []string
		want     string
	}{
		{[]string{"1.0", "head", "2.0"}, "head"},
		{[]string{"1.0", "2.0rc1", "1.10"}, "2.0rc1"},
		{[]string{"1.9", "1.10"}, "1.10"},
		{[]string{"2.0", "parity", "1.0"}, "2.0"},
		{[]string{"all", "ic", "manager"}, "manager"},
		{[]string{"parity"}, "parity"},
		{[]string{"1.0", "1.0.0"}, "1.0.0"},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := LatestVersion(tt.versions); got != tt.want {
			t.Errorf("LatestVersion(%q) = %q, want %q", tt.versions, got, tt.want)
		}
	}
}
