package main

import (
	"context"
	"io"
	"os"

	"github.com/gauntlet-bench/gauntlet/pkg/boardview"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
)

// runLeaderboard is `gauntlet leaderboard BENCHMARK [--metric M]`.
func runLeaderboard(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return exitCode(showLeaderboard(ctx, env{stdin: os.Stdin, stdout: stdout, stderr: stderr}, args), "leaderboard", stderr)
}

func showLeaderboard(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "leaderboard", "leaderboard BENCHMARK [--metric pass@1|pass@k|pass^k|pass@1-errors-as-failures|cost|time|tokens] [--json]")
	metric := cmd.fs.String("metric", "pass@1", "rank by "+leaderboard.MetricNames())
	pos, c, err := cmd.connect(args, 1, "want one benchmark key")
	if err != nil {
		return err
	}
	if pos[0], err = resolveBenchmark(ctx, c, pos[0]); err != nil {
		return err
	}
	board, err := c.Leaderboard(ctx, pos[0], *metric)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, board)
	}
	return boardview.WriteText(e.stdout, board)
}
