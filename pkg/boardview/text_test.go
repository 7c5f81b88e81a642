package boardview

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/api/v1"
)

func TestFormatters(t *testing.T) {
	est := func(v float64, ci ...float64) *v1.Estimate {
		e := &v1.Estimate{Value: v, N: 2}
		if len(ci) == 2 {
			e.CILow, e.CIHigh = &ci[0], &ci[1]
		}
		return e
	}
	tests := []struct {
		name, got, want string
	}{
		{"percent with CI", Percent(est(0.6666666, 0.25, 0.99949)), "66.7% (25.0–99.9)"},
		{"percent without CI", Percent(est(0.5)), "50.0%"},
		{"percent missing", Percent(nil), "–"},
		{"small dollars", Dollars(est(0.01234)), "$0.0123"},
		{"large dollars", Dollars(est(12.345)), "$12.35"},
		{"zero dollars", Dollars(est(0)), "$0.00"},
		{"seconds", Seconds(est(83.44)), "83.4s"},
		{"tokens", Tokens(est(1234567.4)), "1,234,567"},
		{"few tokens", Tokens(est(999.5)), "1,000"},
		{"tokens missing", Tokens(nil), "–"},
		{"compact tokens", compactTokens(est(1234567)), "1.2M"},
		{"compact thousands", compactTokens(est(12345)), "12.3k"},
		{"compact few", compactTokens(est(950.4)), "950"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// TestWriteTextFits120Columns: a long registry label and run id are
// shortened so a board fits a 120-column terminal.
func TestWriteTextFits120Columns(t *testing.T) {
	p := 0.0004
	ci := func(v, lo, hi float64) *v1.Estimate { return &v1.Estimate{Value: v, CILow: &lo, CIHigh: &hi} }
	pk := &v1.PassAtKPoint{K: 5, Estimate: v1.Estimate{Value: 0.5}}
	b := v1.LeaderboardView{Benchmark: "terminal-bench-2-0", Metric: "pass@k", K: 5, Rows: []v1.BoardRow{
		{Rank: 1, Best: true, Label: "openrouter/qwen/qwen3-coder-480b-a35b-instruct-2025-07-25-preview (terminus-2)", TaskSet: "parity",
			Pass1: ci(0.4, 0.301, 0.502), PassAtK: pk, CostPerTask: &v1.Estimate{Value: 0.0123}, TimePerTask: &v1.Estimate{Value: 123.4},
			TokensPerTask: &v1.Estimate{Value: 1234567}, RunID: "run-0123456789abcdef0123456789abcdef"},
		{Rank: 2, Label: "openai/gpt-5.2 (codex)", Pass1: ci(0.3, 0.201, 0.402), PassAtK: pk,
			VsBest: &v1.Comparison{Tested: true, Diff: -0.1, PValue: &p}, RunID: "run-2"},
	}}
	var out bytes.Buffer
	if err := WriteText(&out, b); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if n := len([]rune(line)); n > 120 {
			t.Errorf("line of %d columns > 120: %q", n, line)
		}
	}
	for _, want := range []string{"terminal-bench-2-0 — ranked by pass@5", "PASS@5", "…", "[parity]", "p<0.001"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
