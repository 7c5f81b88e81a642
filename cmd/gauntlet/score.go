package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/score"
)

const scoreUsage = `usage: gauntlet score [--metric pass@1|pass@k|pass^k|pass@1-errors-as-failures|cost|time|tokens] [--json] [--threshold X] PATH|-...

Computes a leaderboard from attempt results without any platform. PATH is a
JSONL file (one attempt per line: harness, model, task, attempt, and reward or
outcome — passed, failed, errored (error_class agent or platform),
judge_failed, cancelled; optional cost_usd, input_tokens, output_tokens,
cache_tokens, duration_sec, task_set, version), a Harbor job directory
(trial result.json files), or - for JSONL on stdin (same limits as a file:
64 KiB a line, 1 GiB in all). Flags may come before or after the paths. The
scoring rules are docs/SCORING.md's.

flags:`

// runScore is the "score" subcommand.
func runScore(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("score", flag.ContinueOnError)
	fs.SetOutput(stderr)
	metricName := fs.String("metric", string(leaderboard.MetricPass1), "metric to rank by: "+leaderboard.MetricNames())
	asJSON := fs.Bool("json", false, "print every number as JSON instead of a table")
	threshold := fs.Float64("threshold", score.DefaultThreshold, "a reward ≥ `X` passes")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), scoreUsage)
		fs.PrintDefaults()
	}
	paths, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage // the flag package has printed the problem and usage
	}
	metric, err := leaderboard.ParseMetric(*metricName)
	if err != nil {
		fmt.Fprintf(stderr, "gauntlet score: --metric: %v\n", err)
		return exitUsage
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "gauntlet score: no PATH given")
		fs.Usage()
		return exitUsage
	}
	inputs, err := score.Read(paths, os.Stdin, *threshold)
	if err != nil {
		fmt.Fprintf(stderr, "gauntlet score: %v\n", err)
		return exitFailure
	}
	board := leaderboard.Build(inputs, metric, leaderboard.Options{})
	write := score.WriteText
	if *asJSON {
		write = score.WriteJSON
	}
	if err := write(stdout, board); err != nil {
		fmt.Fprintf(stderr, "gauntlet score: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// parseInterleaved parses flags that may appear between positional
// arguments, returning the positional ones in order. "--" ends flags.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
