package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/gauntlet-bench/gauntlet/pkg/boardview"
	"github.com/gauntlet-bench/gauntlet/pkg/client"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// runSubmit is `gauntlet submit CONFIG.toml [--yes] [--watch]`.
func runSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return exitCode(submit(ctx, env{stdin: os.Stdin, stdout: stdout, stderr: stderr}, args), "submit", stderr)
}

func submit(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "submit", "submit CONFIG.toml|CONFIG.json [--yes] [--watch] [--name NAME] [--idempotency-key KEY] [--json]")
	yes := cmd.fs.Bool("yes", false, "submit without asking for confirmation")
	watch := cmd.fs.Bool("watch", false, "follow the run until it ends, then print its summary")
	name := cmd.fs.String("name", "", "run name (default: generated)")
	idem := cmd.fs.String("idempotency-key", "", "Idempotency-Key: resubmitting with the same key returns the same run")
	pos, err := cmd.positional(args, 1, "want one run config file")
	if err != nil {
		return err
	}
	config, err := os.ReadFile(pos[0])
	if err != nil {
		return fmt.Errorf("read run config: %w", err)
	}
	sub := client.Submission{Config: config, JSON: strings.EqualFold(filepath.Ext(pos[0]), ".json"), Name: *name, IdempotencyKey: *idem}
	c, err := cmd.flags.client()
	if err != nil {
		return err
	}
	report, err := c.ValidateRun(ctx, sub)
	if err != nil {
		return err
	}
	if !report.Valid {
		if cmd.flags.json {
			_ = printJSON(e.stdout, report)
		}
		return rejected(report)
	}
	if !cmd.flags.json {
		fmt.Fprintf(e.stdout, "%s@%s: %d tasks, %d attempts in all\n", report.Benchmark, report.ManifestVersion, report.TaskCount, report.SlotCount)
		for _, w := range report.Warnings {
			fmt.Fprintf(e.stdout, "warning: %s\n", w)
		}
	}
	if !*yes && isTerminal(e.stdin) {
		ok, err := confirm(e, "Submit this run?")
		if err != nil || !ok {
			return errors.Join(err, errors.New("not submitted"))
		}
	}
	created, err := c.SubmitRun(ctx, sub)
	if err != nil {
		return err
	}
	if !*watch {
		if cmd.flags.json {
			return printJSON(e.stdout, created)
		}
		fmt.Fprintf(e.stdout, "run %s (%s) %s: %d tasks, %d attempts\nfollow it with: gauntlet runs info %s\n",
			created.Name, created.ID, created.Status, created.TaskCount, created.SlotCount, created.ID)
		return nil
	}
	if !cmd.flags.json {
		fmt.Fprintf(e.stdout, "run %s (%s) submitted\n", created.Name, created.ID)
	}
	detail, err := watchRun(ctx, e, c, created.ID, cmd.flags.json)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, detail)
	}
	if err := printRunSummary(e.stdout, detail); err != nil {
		return err
	}
	if detail.Status != "finished" {
		return fmt.Errorf("run %s ended %s: %s", detail.ID, detail.Status, detail.Reason)
	}
	return nil
}

// rejected turns a failed validation into an error listing every problem.
func rejected(r v1.ValidationReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the run config has %s:", runconfig.CountProblems(len(r.Problems)))
	for _, p := range r.Problems {
		b.WriteString("\n  - ")
		if p.Field != "" {
			b.WriteString(p.Field + ": ")
		}
		b.WriteString(p.Message)
	}
	return errors.New(b.String())
}

func confirm(e env, question string) (bool, error) {
	fmt.Fprintf(e.stderr, "%s [y/N] ", question)
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}

// watchInterval is how often --watch polls the run.
const watchInterval = 500 * time.Millisecond

// watchRun follows a run until it ends and its metrics cover every
// result: a progress bar on a terminal, a line per change otherwise.
func watchRun(ctx context.Context, e env, c *client.Client, id string, quiet bool) (v1.RunDetail, error) {
	var bar *progressbar.ProgressBar
	lastLine := ""
	for {
		d, err := c.Run(ctx, id)
		if err != nil {
			return d, err
		}
		ended := d.Status == "finished" || d.Status == "failed" || d.Status == "stopped"
		switch {
		case quiet:
		case isTerminal(e.stdout):
			if bar == nil {
				bar = progressbar.NewOptions64(int64(d.Progress.Total), progressbar.OptionSetWriter(e.stdout),
					progressbar.OptionShowCount(), progressbar.OptionSetWidth(30), progressbar.OptionSetPredictTime(true),
					progressbar.OptionThrottle(100*time.Millisecond))
			}
			bar.Describe(fmt.Sprintf("%-8s %s", d.Status, outcomeLine(d.Outcomes)))
			_ = bar.Set64(int64(d.Progress.Completed))
		default:
			if line := progressLine(d); line != lastLine {
				fmt.Fprintln(e.stdout, line)
				lastLine = line
			}
		}
		if ended && (d.MetricsCurrent || d.Progress.Completed == 0) {
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(e.stdout)
			}
			return d, nil
		}
		select {
		case <-ctx.Done():
			return d, ctx.Err()
		case <-time.After(watchInterval):
		}
	}
}

func progressLine(d v1.RunDetail) string {
	return fmt.Sprintf("%s: %s %d/%d (%s)", d.Name, d.Status, d.Progress.Completed, d.Progress.Total, outcomeLine(d.Outcomes))
}

func outcomeLine(o v1.Outcomes) string {
	s := fmt.Sprintf("passed %d, failed %d, errored %d", o.Passed, o.Failed, o.Errored)
	if o.Cancelled > 0 {
		s += fmt.Sprintf(", cancelled %d", o.Cancelled)
	}
	return s
}

// printRunSummary prints a run's header and one line per agent.
func printRunSummary(w io.Writer, d v1.RunDetail) error {
	fmt.Fprintf(w, "run %s (%s): %s", d.Name, d.ID, d.Status)
	if d.Reason != "" {
		fmt.Fprintf(w, " (%s)", d.Reason)
	}
	fmt.Fprintf(w, "\nbenchmark %s@%s, %d tasks, %d/%d attempts done, %s, duration %s, cost %s, tokens %s in / %s out\n\n",
		d.Benchmark, d.ManifestVersion, d.TaskCount, d.Progress.Completed, d.Progress.Total, outcomeLine(d.Outcomes),
		span(d.DurationSec), selfText(costText(d.CostUSD, d.CostEstimated), d.UsageSelfReported), humanCount(d.Tokens.Input), humanCount(d.Tokens.Output))
	fmt.Fprintf(w, "pinned %s@%s %s; tokens %s cached; submitted %s by %s\n\n", d.Benchmark, d.ManifestVersion, d.ManifestDigest,
		humanCount(d.Tokens.Cache), d.CreatedAt.UTC().Format(time.RFC3339), submitter(d.Submission))
	if j := d.Judge; j != nil {
		// The judge's use is the grading's, never the agents' (not in their
		// cost or tokens above, nor in COST/TASK).
		fmt.Fprintf(w, "judge %s: %d calls, tokens %s in / %s out, cost %s (not counted in the agents')\n\n",
			j.Model, j.Calls, humanCount(j.Tokens.Input), humanCount(j.Tokens.Output), costText(j.CostUSD, j.CostEstimated))
	}
	t := newTable(w, "#", "AGENT", "STATUS", "DONE", "PASS@1", "PASS@K", "COST/TASK", "TIME/TASK", "TOKENS/TASK")
	self := false
	for _, a := range d.AgentsDetail {
		m := a.Metrics
		cost, tokens := boardview.Dollars(m.CostPerTask), count(m.TokensPerTask)
		if a.UsageSelfReported {
			self = true
			cost, tokens = boardview.SelfReported(cost), boardview.SelfReported(tokens)
		}
		// Agents are numbered from 1, like ranks (Index is the config's 0-based position).
		t.row(strconv.Itoa(a.Index+1), a.Label, a.Status, fmt.Sprintf("%d/%d", a.Progress.Completed, a.Progress.Total),
			boardview.Percent(m.Pass1), passAtK(m.PassAtK), cost, boardview.Seconds(m.TimePerTask), tokens)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if self {
		fmt.Fprintln(w, boardview.SelfReportedNote)
	}
	for _, a := range d.AgentsDetail {
		if len(a.Metrics.Categories) == 0 {
			continue
		}
		parts := make([]string, len(a.Metrics.Categories))
		for i, c := range a.Metrics.Categories {
			parts[i] = fmt.Sprintf("%s %.0f%%", c.Category, 100*c.Pass1.Value)
		}
		fmt.Fprintf(w, "  %s by category: %s\n", a.Label, strings.Join(parts, ", "))
	}
	for _, a := range d.AgentsDetail {
		name := a.Name
		if name == "" {
			name = a.Label
		}
		model := a.Model
		if model == "" {
			model = "(none)"
		}
		fmt.Fprintf(w, "  agent %d %s: harness %s, model %s, %s, tokens %s in / %s out, cost %s\n",
			a.Index+1, name, a.Harness, model, agentSpan(a), humanCount(a.Tokens.Input), humanCount(a.Tokens.Output), selfText(costText(a.CostUSD, a.CostEstimated), a.UsageSelfReported))
	}
	if p := d.Power; p != nil {
		fmt.Fprintf(w, "  to separate agents %d and %d (pass@1 %.3g vs %.3g) at %.0f%% power: %d tasks × %d attempts\n",
			p.AgentA+1, p.AgentB+1, p.PassA, p.PassB, p.Power*100, p.Tasks, p.Attempts)
	}
	return nil
}

// agentSpan says how long an agent ran: "ran 1m5s" once it ended,
// "running for 1m5s" while it runs, "never started" when no slot of it ran.
func agentSpan(a v1.AgentView) string {
	switch {
	case a.StartedAt == nil:
		return "never started"
	case a.EndedAt == nil:
		return "running for " + span(a.DurationSec)
	}
	return "ran " + span(a.DurationSec)
}

// submitter names who submitted a run: the user's name, else the id.
func submitter(s v1.Submission) string {
	switch {
	case s.SubmittedByName != "":
		return s.SubmittedByName
	case s.SubmittedBy != "":
		return s.SubmittedBy
	}
	return "unknown"
}

// costText is a cost in dollars, marked "(estimated)" when the platform
// computed it from its dated price table rather than a provider reporting it.
// selfText marks a cost whose figures the agents reported themselves.
func selfText(cost string, self bool) string {
	if self {
		return cost + " (self-reported by the agent, not metered)"
	}
	return cost
}

func costText(usd float64, estimated bool) string {
	if estimated {
		return fmt.Sprintf("$%.4f (estimated)", usd)
	}
	return fmt.Sprintf("$%.4f", usd)
}
