package run

import "testing"

func TestTrialName(t *testing.T) {
	tests := []struct {
		slot string
		gen  int
		want string
	}{
		{"0/git-multibranch/1", 0, "git-multibranch__0-1-g0"},
		{"3/terminal-bench/git-multibranch/12", 2, "terminal-bench~git-multibranch__3-12-g2"},
		{"slot-1", 0, "slot-1__g0"},
		{"x/y", 1, "x~y__g1"},
	}
	for _, tt := range tests {
		if got := TrialName(tt.slot, tt.gen); got != tt.want {
			t.Errorf("TrialName(%q, %d) = %q, want %q", tt.slot, tt.gen, got, tt.want)
		}
	}
}

func TestHarborJobID(t *testing.T) {
	a, b := HarborJobID("run_1"), HarborJobID("run_2")
	if a != HarborJobID("run_1") || a == b || len(a) != 36 {
		t.Errorf("HarborJobID: %q, %q; want a stable UUID per run", a, b)
	}
}
