package boardview

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// WriteCompare renders a comparison of two entrants as text: the paired
// pass@1 difference with its interval and p, the cost, time and token
// deltas, the per-category differences, and the regressions and
// improvements task by task.
func WriteCompare(w io.Writer, c v1.CompareView) error {
	side := func(e v1.CompareEntrant) string { return fmt.Sprintf("%s (%s/%d)", e.Label, e.RunID, e.Agent) }
	fmt.Fprintf(w, "A %s vs B %s on %d common tasks", side(c.A), side(c.B), c.Tasks)
	if c.OnlyA+c.OnlyB > 0 {
		fmt.Fprintf(w, " (%d only A scored, %d only B)", c.OnlyA, c.OnlyB)
	}
	fmt.Fprintln(w)
	if !c.SameMeasurement {
		fmt.Fprintf(w, "note: A ran manifest %s and B %s: a common task may differ between them\n", c.A.ManifestVersion, c.B.ManifestVersion)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tA\tB\tB − A\t95% CI\tP")
	fmt.Fprintf(tw, "pass@1\t%s\t%s\t%s\n", Percent(c.A.Pass1), Percent(c.B.Pass1), diffCells(c.Pass1, pp))
	if c.Cost != nil {
		a, b := Dollars(c.A.CostPerTask), Dollars(c.B.CostPerTask)
		if c.A.UsageSelfReported {
			a = SelfReported(a)
		}
		if c.B.UsageSelfReported {
			b = SelfReported(b)
		}
		fmt.Fprintf(tw, "cost/task\t%s\t%s\t%s\n", a, b, diffCells(*c.Cost, signedWith(dollars)))
	}
	if c.Time != nil {
		fmt.Fprintf(tw, "time/task\t%s\t%s\t%s\n", Seconds(c.A.TimePerTask), Seconds(c.B.TimePerTask), diffCells(*c.Time, signedWith(seconds)))
	}
	if c.Tokens != nil {
		fmt.Fprintf(tw, "tokens/task\t\t\t%s\n", diffCells(*c.Tokens, signedWith(func(v float64) string { return compactTokens(&v1.Estimate{Value: v}) })))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if c.Cost != nil && (c.A.UsageSelfReported || c.B.UsageSelfReported) {
		fmt.Fprintln(w, SelfReportedNote)
	}
	if len(c.Categories) > 0 {
		fmt.Fprintln(w, "\nBy category (pass@1, B − A):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CATEGORY\tTASKS\tB − A\t95% CI\tP")
		for _, cd := range c.Categories {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", cd.Category, cd.Pass1.Tasks, diffCells(cd.Pass1, pp))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	if err := writeChanges(w, "Regressions (A solves, B does not)", c.Regressions); err != nil {
		return err
	}
	return writeChanges(w, "Improvements (B solves, A does not)", c.Improvements)
}

func writeChanges(w io.Writer, title string, changes []v1.TaskChange) error {
	fmt.Fprintf(w, "\n%s: %d\n", title, len(changes))
	if len(changes) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tA PASS@1\tB PASS@1")
	for _, t := range changes {
		fmt.Fprintf(tw, "%s\t%.0f%%\t%.0f%%\n", t.Task, 100*t.A, 100*t.B)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// diffCells is "diff\tlo to hi\tp" for a difference.
func diffCells(d v1.Difference, format func(float64) string) string {
	cells := []string{format(d.Diff), missing, missing}
	if d.CILow != nil && d.CIHigh != nil {
		cells[1] = format(*d.CILow) + " to " + format(*d.CIHigh)
	}
	if d.PValue != nil {
		cells[2] = pText(*d.PValue)
	}
	return strings.Join(cells, "\t")
}

func pText(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.3f", p)
}

func pp(v float64) string {
	return signed(100*v, func(x float64) string { return fmt.Sprintf("%.1f pp", x) })
}

func dollars(v float64) string { return Dollars(&v1.Estimate{Value: v}) }

func seconds(v float64) string { return Seconds(&v1.Estimate{Value: v}) }

func signedWith(format func(float64) string) func(float64) string {
	return func(v float64) string { return signed(v, format) }
}

// signed prefixes a nonzero value with + or − (U+2212) and formats its
// magnitude.
func signed(v float64, format func(float64) string) string {
	switch {
	case v > 0:
		return "+" + format(v)
	case v < 0:
		return "−" + format(-v)
	}
	return format(0)
}
