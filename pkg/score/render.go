package score

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
)

// missing is printed for a value that does not exist.
const missing = "–"

// WriteText renders the board as one aligned table per group (task set,
// version): Rank ("1*" for a statistical tie with the best), Agent as
// "model (harness)", Pass@1 as "v% (lo–hi)", Pass@K for the group's deepest k
// every task reached (when K ≥ 2), and Cost/Time/Tokens per task.
func WriteText(w io.Writer, b leaderboard.Board) error {
	for i, g := range b.Groups {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := writeGroup(w, b.Metric, g); err != nil {
			return err
		}
	}
	return nil
}

func writeGroup(w io.Writer, metric leaderboard.Metric, g leaderboard.Group) error {
	fmt.Fprintln(w, groupTitle(metric, g))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"Rank", "Agent", "Pass@1"}
	if g.K >= 2 {
		header = append(header, fmt.Sprintf("Pass@%d", g.K))
	}
	header = append(header, "Cost/task", "Time/task", "Tokens/task")
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	tied := false
	for _, r := range g.Rows {
		tied = tied || r.TiedWithBest
		fmt.Fprintln(tw, strings.Join(rowCells(r, g.K), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if tied {
		fmt.Fprintln(w, "* statistically tied with the best: a paired t-test over tasks cannot separate them (α = 0.05)")
	}
	return nil
}

func groupTitle(metric leaderboard.Metric, g leaderboard.Group) string {
	parts := []string{"Ranked by " + string(metric)}
	if metric == leaderboard.MetricPassAtK {
		parts[0] = fmt.Sprintf("Ranked by pass@%d", g.K)
	}
	set := "all tasks"
	if g.TaskSet != "" {
		set = "task set " + g.TaskSet
	}
	parts = append(parts, set)
	if g.ManifestVersion != "" {
		parts = append(parts, "version "+g.ManifestVersion)
	}
	tasks := 0
	for _, r := range g.Rows {
		tasks = max(tasks, r.Summary.Tasks)
	}
	parts = append(parts, fmt.Sprintf("%d tasks", tasks))
	return strings.Join(parts, " · ")
}

func rowCells(r leaderboard.Row, k int) []string {
	s := r.Summary
	rank := missing
	if r.Rank > 0 {
		rank = strconv.Itoa(r.Rank)
		if r.TiedWithBest {
			rank += "*"
		}
	}
	cells := []string{rank, s.Entrant.String(), percent(s.Pass1)}
	if k >= 2 {
		var e *leaderboard.Estimate
		if k <= len(s.PassAtK) {
			e = &s.PassAtK[k-1].Estimate
		}
		cells = append(cells, percent(e))
	}
	return append(cells, dollars(s.CostPerTask), seconds(s.TimePerTask), tokens(s.TokensPerTask))
}

// percent renders a pass rate as "v% (lo–hi)", one decimal.
func percent(e *leaderboard.Estimate) string {
	if e == nil {
		return missing
	}
	v := fmt.Sprintf("%.1f%%", 100*e.Mean)
	if e.CI != nil {
		v += fmt.Sprintf(" (%.1f–%.1f)", 100*e.CI.Lo, 100*e.CI.Hi)
	}
	return v
}

func dollars(e *leaderboard.Estimate) string {
	switch {
	case e == nil:
		return missing
	case e.Mean != 0 && e.Mean < 1:
		return fmt.Sprintf("$%.4f", e.Mean)
	}
	return fmt.Sprintf("$%.2f", e.Mean)
}

func seconds(e *leaderboard.Estimate) string {
	if e == nil {
		return missing
	}
	return fmt.Sprintf("%.1fs", e.Mean)
}

// tokens renders a token count rounded to a whole number with thousands
// separators.
func tokens(e *leaderboard.Estimate) string {
	if e == nil {
		return missing
	}
	digits := strconv.FormatInt(int64(math.Round(e.Mean)), 10)
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

// WriteJSON writes the whole board, every number included, as indented JSON.
func WriteJSON(w io.Writer, b leaderboard.Board) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(b); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
