package boardview

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
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
// row's run measured a named task set, PASS@1 as "v% (lo–hi)", PASS@K (or
// PASS^K when the board ranks by pass^k; K ≥ 2) the value alone, ERR=FAIL (pass@1 with every error a
// failure) when the board ranks by it, COST, TIME and TOKENS per task,
// ERRORS (agent/platform/judge, when some row has any), and VS BEST (the
// p of the paired test for rows of the best's task set and version,
// Holm-adjusted: a footnote says so).
func WriteText(w io.Writer, b v1.LeaderboardView) error {
	if len(b.Rows) == 0 {
		_, err := fmt.Fprintf(w, "%s: no eligible runs yet (a run must finish on the full task list or a published task set)\n", b.Benchmark)
		return err
	}
	ranked := b.Metric
	switch b.Metric {
	case "pass@k":
		ranked = fmt.Sprintf("pass@%d", b.K)
	case "pass^k":
		ranked = fmt.Sprintf("pass^%d", b.K)
	case "pass@1-errors-as-failures":
		ranked = "pass@1 with errors as failures"
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
	strict := b.Metric == "pass@1-errors-as-failures"
	errs := false
	for _, r := range b.Rows {
		errs = errs || r.Errors != (v1.ErrorCounts{})
	}
	header := []string{"RANK", "AGENT", "PASS@1"}
	// The pass@K column shows pass^K on a board ranked by it: both would
	// not fit a 120-column terminal.
	hat := b.Metric == "pass^k"
	if b.K >= 2 && hat {
		header = append(header, fmt.Sprintf("PASS^%d", b.K))
	} else if b.K >= 2 {
		header = append(header, fmt.Sprintf("PASS@%d", b.K))
	}
	if strict {
		header = append(header, "ERR=FAIL")
	}
	header = append(header, "COST", "TIME", "TOKENS")
	if errs {
		header = append(header, "ERRORS")
	}
	fmt.Fprintln(tw, strings.Join(append(header, "VS BEST"), "\t"))
	tied, sets, tested, self := false, false, false, false
	for _, r := range b.Rows {
		tied = tied || r.Tied
		tested = tested || (r.VsBest != nil && r.VsBest.PValue != nil)
		sets = sets || r.TaskSet != ""
		cells := []string{rank(r), agent(r), Percent(r.Pass1)}
		if b.K >= 2 && hat {
			cells = append(cells, passAtK(r.PassHatK)) // its interval is in --json
		} else if b.K >= 2 {
			cells = append(cells, passAtK(r.PassAtK))
		}
		if strict {
			cells = append(cells, value(r.Pass1ErrorsAsFailures))
		}
		cost, tokens := Dollars(r.CostPerTask), compactTokens(r.TokensPerTask)
		if r.UsageSelfReported {
			self = true
			cost, tokens = SelfReported(cost), SelfReported(tokens)
		}
		cells = append(cells, cost, Seconds(r.TimePerTask), tokens)
		if errs {
			cells = append(cells, errorCounts(r.Errors))
		}
		fmt.Fprintln(tw, strings.Join(append(cells, vsBest(r)), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if tied {
		fmt.Fprintln(w, "* statistically tied with the best: a paired t-test over tasks cannot separate them (adjusted p ≥ 0.05)")
	}
	if self {
		fmt.Fprintln(w, SelfReportedNote)
	}
	if tested {
		fmt.Fprintln(w, "VS BEST p: the paired t-test against the best, adjusted for the board's comparisons (Holm)")
	}
	if errs {
		fmt.Fprintln(w, "ERRORS a/p/j: agent errors (scored as failures) / platform errors and failed judges (left out of the scores)")
	}
	if d := b.MinDetectableDiff; d != nil {
		fmt.Fprintf(w, "minimum detectable difference from the best: %s (80%% power, α = 0.05; the median over the tested rows)\n", difference(b.Metric, *d))
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
	}
	p := *c.PValue
	if c.AdjustedP != nil {
		p = *c.AdjustedP
	}
	if p < 0.001 {
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.3f", p)
}

// difference renders a difference of the metric in its unit.
func difference(metric string, d float64) string {
	switch metric {
	case "cost":
		return Dollars(&v1.Estimate{Value: d})
	case "time":
		return Seconds(&v1.Estimate{Value: d})
	case "tokens":
		return compactTokens(&v1.Estimate{Value: d})
	}
	return fmt.Sprintf("%.1f pp", 100*d)
}

// errorCounts is "agent/platform/judge", the attempts each error rule
// touched.
func errorCounts(e v1.ErrorCounts) string {
	return fmt.Sprintf("%d/%d/%d", e.AgentErrors, e.PlatformErrors, e.JudgeFailures)
}

func passAtK(p *v1.PassAtKPoint) string {
	if p == nil {
		return missing
	}
	return fmt.Sprintf("%.1f%%", 100*p.Value)
}

func value(e *v1.Estimate) string {
	if e == nil {
		return missing
	}
	return fmt.Sprintf("%.1f%%", 100*e.Value)
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

// SelfReportedNote explains the SelfReported mark under a table.
const SelfReportedNote = "(self): reported by the agent itself (its usage.json), not metered by the model gateway: not comparable with metered figures"

// SelfReported marks a cost or token cell whose figure the agent reported
// itself; a missing value stays as it is.
func SelfReported(cell string) string {
	if cell == missing {
		return cell
	}
	return cell + " (self)"
}
