package main

import (
	"context"
	"io"
	"os"

	"github.com/gauntlet-bench/gauntlet/pkg/boardview"
)

// runCompare is `gauntlet compare A B`.
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return exitCode(showCompare(ctx, env{stdin: os.Stdin, stdout: stdout, stderr: stderr}, args), "compare", stderr)
}

func showCompare(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "compare", "compare A B [--json]   (A and B: RUN, or RUN/AGENT with the agent's index; A is the baseline)")
	pos, c, err := cmd.connect(args, 2, "want two entrants: A B, each RUN or RUN/AGENT")
	if err != nil {
		return err
	}
	view, err := c.Compare(ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, view)
	}
	return boardview.WriteCompare(e.stdout, view)
}
