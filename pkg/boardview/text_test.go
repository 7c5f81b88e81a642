package boardview

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
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
	b.Metric = "pass^k"
	b.Rows[0].PassHatK = &v1.PassAtKPoint{K: 5, Estimate: v1.Estimate{Value: 0.125}}
	var hat bytes.Buffer
	if err := WriteText(&hat, b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ranked by pass^5", "PASS^5", "12.5%"} {
		if !strings.Contains(hat.String(), want) {
			t.Errorf("pass^k output lacks %q:\n%s", want, hat.String())
		}
	}
	for _, want := range []string{"terminal-bench-2-0 — ranked by pass@5", "PASS@5", "…", "[parity]", "p<0.001"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestWriteTextErrorsAndAdjustedP: the ERRORS column appears once some row
// has errors, VS BEST shows the Holm-adjusted p, and a board ranked by the
// errors-as-failures view shows that value.
func TestWriteTextErrorsAndAdjustedP(t *testing.T) {
	p, adj, mdd := 0.03, 0.06, 0.2345
	b := v1.LeaderboardView{Metric: "pass@1-errors-as-failures", K: 1, MinDetectableDiff: &mdd, Rows: []v1.BoardRow{
		{Rank: 1, Best: true, Label: "a", Pass1: &v1.Estimate{Value: 1}, Pass1ErrorsAsFailures: &v1.Estimate{Value: 0.75},
			Errors: v1.ErrorCounts{AgentErrors: 1, PlatformErrors: 2, JudgeFailures: 3}},
		{Rank: 1, Tied: true, Label: "b", Pass1: &v1.Estimate{Value: 0.5}, Pass1ErrorsAsFailures: &v1.Estimate{Value: 0.5},
			VsBest: &v1.Comparison{Tested: true, PValue: &p, AdjustedP: &adj}},
	}}
	var out bytes.Buffer
	if err := WriteText(&out, b); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"Ranked by pass@1 with errors as failures (cost, time and tokens per task)",
		"RANK AGENT PASS@1 ERR=FAIL COST TIME TOKENS ERRORS VS BEST",
		"1 a 100.0% 75.0% – – – 1/2/3 best",
		"1* b 50.0% 50.0% – – – 0/0/0 p=0.060",
		"* statistically tied with the best: a paired t-test over tasks cannot separate them (adjusted p ≥ 0.05)",
		"VS BEST p: the paired t-test against the best, adjusted for the board's comparisons (Holm)",
		"ERRORS a/p/j: agent errors (scored as failures) / platform errors and failed judges (left out of the scores)",
		"minimum detectable difference from the best: 23.4 pp (80% power, α = 0.05; the median over the tested rows)",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("WriteText() =\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestWriteTextMarksSelfReportedUsage: a row whose cost and tokens the
// agent reported itself (usage.json) shows them marked, with the note
// under the table; a metered row's figures stay unmarked.
func TestWriteTextMarksSelfReportedUsage(t *testing.T) {
	b := v1.LeaderboardView{Metric: "pass@1", K: 1, Rows: []v1.BoardRow{
		{Rank: 1, Best: true, Label: "heuristic (command)", Pass1: &v1.Estimate{Value: 0.5},
			CostPerTask: &v1.Estimate{Value: 0.006}, TokensPerTask: &v1.Estimate{Value: 4800}, UsageSelfReported: true},
		{Rank: 2, Label: "openai/gpt-5 (codex)", Pass1: &v1.Estimate{Value: 0.25},
			CostPerTask: &v1.Estimate{Value: 0.02}, TokensPerTask: &v1.Estimate{Value: 9000}},
	}}
	var out bytes.Buffer
	if err := WriteText(&out, b); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"$0.0060 (self)", "4.8k (self)", SelfReportedNote} {
		if !strings.Contains(got, want) {
			t.Errorf("WriteText() lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "$0.0200 (self)") || strings.Contains(got, "9k (self)") {
		t.Errorf("the metered row is marked self-reported:\n%s", got)
	}
}
