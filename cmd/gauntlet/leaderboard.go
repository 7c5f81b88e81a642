package main

import (
	"context"
	"fmt"
	"github.com/gauntlet-bench/gauntlet/pkg/api/v1"
	"io"
	"os"
)

// runLeaderboard is `gauntlet leaderboard BENCHMARK [--metric M]`.
func runLeaderboard(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return exitCode(showLeaderboard(ctx, env{stdin: os.Stdin, stdout: stdout, stderr: stderr}, args), "leaderboard", stderr)
}

func showLeaderboard(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "leaderboard", "leaderboard BENCHMARK [--metric pass@1|pass@k|cost|time|tokens] [--json]")
	metric := cmd.fs.String("metric", "pass@1", "rank by pass@1, pass@k, cost, time or tokens")
	pos, c, err := cmd.connect(args, 1, "want one benchmark key")
	if err != nil {
		return err
	}
	board, err := c.Leaderboard(ctx, pos[0], *metric)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, board)
	}
	return printLeaderboard(e.stdout, board)
}

// printLeaderboard prints one table per (task set, version) group; a rank
// with * is a statistical tie with the best.
func printLeaderboard(w io.Writer, b v1.LeaderboardView) error {
	if len(b.Groups) == 0 {
		fmt.Fprintf(w, "%s: no eligible runs yet (a run must finish on the full task list or a published task set)\n", b.Benchmark)
		return nil
	}
	tied := false
	for i, g := range b.Groups {
		if i > 0 {
			fmt.Fprintln(w)
		}
		set := g.TaskSet
		if set == "" {
			set = "all tasks"
		}
		fmt.Fprintf(w, "%s — %s, version %s, ranked by %s\n", b.Benchmark, set, g.ManifestVersion, b.Metric)
		t := newTable(w, "RANK", "AGENT", "PASS@1", fmt.Sprintf("PASS@%d", g.K), "COST/TASK", "TIME/TASK", "TOKENS/TASK", "VS BEST (p)", "RUN")
		for _, r := range g.Rows {
			vs := "–"
			if r.VsBest != nil && r.VsBest.PValue != nil {
				vs = fmt.Sprintf("%+.3f (p=%.3f)", r.VsBest.Diff, *r.VsBest.PValue)
			}
			pk := "–"
			if r.PassAtK != nil {
				pk = percent(&r.PassAtK.Estimate)
			}
			tied = tied || r.Tied
			t.row(rank(r), r.Label, percent(r.Pass1), pk, dollars(r.CostPerTask), seconds(r.TimePerTask), count(r.TokensPerTask), vs, r.RunID)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if tied {
		fmt.Fprintln(w, "* tied with the best: a paired t-test (α = 0.05) cannot separate them")
	}
	return nil
}
