// Command gauntlet scores AI agents on published benchmarks. Each subcommand
// lives in its own file; main only dispatches to it.
//
// Exit codes: 0 success, 1 failure, 2 usage error.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes shared by every subcommand.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// command is one subcommand: run gets the arguments after its name and
// returns the exit code.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands is the dispatch table, in help order.
var commands = []command{
	{name: "local", summary: "serve the whole platform on this machine (embedded SQLite, local sandboxes)", run: runLocal},
	{name: "benchmark", summary: "list, inspect, add, remove and sync benchmarks", run: benchmarkGroup.run},
	{name: "submit", summary: "submit a run config (--watch to follow it)", run: runSubmit},
	{name: "runs", summary: "list, inspect, follow, stop and download runs", run: runsGroup.run},
	{name: "leaderboard", summary: "show a benchmark's leaderboard", run: runLeaderboard},
	{name: "compare", summary: "compare two entrants (RUN or RUN/AGENT) on their common tasks", run: runCompare},
	{name: "secret", summary: "set, list and delete secret records (values are write-only)", run: secretGroup.run},
	{name: "agents", summary: "list and install the agent bundles (the pinned agent programs)", run: runAgents},
	{name: "images", summary: "list, pull and prune the local image store; serve base images on loopback", run: imagesGroup.run},
	{name: "score", summary: "rank agents from attempt results (JSONL files or Harbor job directories)", run: runScore},
	{name: "plan-size", summary: "tasks × attempts a paired test needs to separate two pass rates (power analysis)", run: runPlanSize},
	{name: "admin", summary: "platform operators: create workspaces, set billing, add users", run: runAdmin},
	{name: "mock-model", summary: "serve a scripted mock model (OpenAI, Anthropic, Gemini wire APIs) for demos and tests", run: runMockModel},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "gauntlet: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: gauntlet <command> [flags] [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "gauntlet <command> -h" for a command's flags.`)
}
