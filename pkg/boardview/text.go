package boardview

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/gauntlet-bench/gauntlet/pkg/api/v1"
)

// missing is printed for a value that does not exist.
const missing = "–"

// maxAgent keeps the table within a 120-column terminal: a longer agent
// label ends in "…" (the JSON output has it whole, and the run behind
// each row).
const maxAgent = 44

// WriteText renders a leaderboard as one aligned table, every entrant in
// one list: RANK ("1*" for a statistical tie with the best, "–" without a
// value for the metric), AGENT as "model (harness)" with "[set]" when the
// row's run measured a named task set, PASS@1 and PASS@K as "v% (lo–hi)",
// PASS@K the value alone, COST, TIME and TOKENS per task, VS BEST (the paired difference and p
// for rows of the best's task set and version) and the RUN behind the row.
func WriteText(w io.Writer, b v1.LeaderboardView) error {
	if len(b.Rows) == 0 {
		_, err := fmt.Fprintf(w, "%s: no eligible runs yet (a run must finish on the full task list or a published task set)\n", b.Benchmark)
		return err
	}
	ranked := b.Metric
	if b.Metric == "pass@k" {
		ranked = fmt.Sprintf("pass@%d", b.K)
	}
	title := fmt.Sprintf("Ranked by %s (cost, time and tokens per task)", ranked)
	if b.Benchmark != "" {
		title = b.Benchmark + " — " + strings.ToLower(title[:1]) + title[1:]
	}
	if _, err := fmt.Fprintln(w, title); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// pass@K is its own column only when every row reached k ≥ 2 (pass@1
	// is already shown).
	header := []string{"RANK", "AGENT", "PASS@1"}
	if b.K >= 2 {
		header = append(header, fmt.Sprintf("PASS@%d", b.K))
	}
	fmt.Fprintln(tw, strings.Join(append(header, "COST", "TIME", "TOKENS", "VS BEST"), "\t"))
	tied, sets := false, false
	for _, r := range b.Rows {
		tied = tied || r.Tied
		sets = sets || r.TaskSet != ""
		cells := []string{rank(r), agent(r), Percent(r.Pass1)}
		if b.K >= 2 {
			cells = append(cells, passAtK(r.PassAtK)) // its interval is in --json
		}
		cells = append(cells, Dollars(r.CostPerTask), Seconds(r.TimePerTask), compactTokens(r.TokensPerTask), vsBest(r))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if tied {
		fmt.Fprintln(w, "* statistically tied with the best: a paired t-test over tasks cannot separate them (α = 0.05)")
	}
	if sets {
		fmt.Fprintln(w, "[set]: the row's run measured that task set; only rows of the best's task set and version are tested for a tie")
	}
	return nil
}

func rank(r v1.BoardRow) string {
	switch {
	case r.Rank == 0:
		return missing
	case r.Tied:
		return strconv.Itoa(r.Rank) + "*"
	}
	return strconv.Itoa(r.Rank)
}

// agent is the row's label, shortened to fit, then its task set tag.
func agent(r v1.BoardRow) string {
	label := ellipsis(r.Label, maxAgent)
	if r.TaskSet != "" {
		label += " [" + r.TaskSet + "]"
	}
	return label
}

func ellipsis(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func vsBest(r v1.BoardRow) string {
	c := r.VsBest
	switch {
	case r.Best:
		return "best"
	case c == nil:
		return missing
	case c.PValue == nil:
		return "untested"
	case *c.PValue < 0.001:
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.3f", *c.PValue)
}

func passAtK(p *v1.PassAtKPoint) string {
	if p == nil {
		return missing
	}
	return fmt.Sprintf("%.1f%%", 100*p.Value)
}

// Percent renders a pass rate as "v% (lo–hi)", one decimal.
func Percent(e *v1.Estimate) string {
	if e == nil {
		return missing
	}
	s := fmt.Sprintf("%.1f%%", 100*e.Value)
	if e.CILow != nil && e.CIHigh != nil {
		s += fmt.Sprintf(" (%.1f–%.1f)", 100**e.CILow, 100**e.CIHigh)
	}
	return s
}

// Dollars renders a cost in USD, four decimals under a dollar.
func Dollars(e *v1.Estimate) string {
	switch {
	case e == nil:
		return missing
	case e.Value != 0 && e.Value < 1:
		return fmt.Sprintf("$%.4f", e.Value)
	}
	return fmt.Sprintf("$%.2f", e.Value)
}

// Seconds renders a duration in seconds.
func Seconds(e *v1.Estimate) string {
	if e == nil {
		return missing
	}
	return fmt.Sprintf("%.1fs", e.Value)
}

// Tokens renders a token count rounded to a whole number with thousands
// separators.
func Tokens(e *v1.Estimate) string {
	if e == nil {
		return missing
	}
	digits := strconv.FormatInt(int64(math.Round(e.Value)), 10)
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

// compactTokens renders a token count as 950, 12.3k or 1.2M: the table's
// narrow form (the exact count is in --json).
func compactTokens(e *v1.Estimate) string {
	switch {
	case e == nil:
		return missing
	case e.Value >= 999_950:
		return fmt.Sprintf("%.1fM", e.Value/1e6)
	case e.Value >= 1_000:
		return fmt.Sprintf("%.1fk", e.Value/1e3)
	}
	return strconv.FormatInt(int64(math.Round(e.Value)), 10)
}
