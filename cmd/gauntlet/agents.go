package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/gauntlet-bench/gauntlet/pkg/agentbundle"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
)

// runAgents is `gauntlet agents list|install`: the agent bundles of the
// harness table, prepared once into the local cache.
func runAgents(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "list" && args[0] != "install") {
		fmt.Fprintln(stderr, "usage: gauntlet agents list [--cache DIR]\n       gauntlet agents install [--cache DIR] [--quiet] [HARNESS ...]")
		return exitUsage
	}
	fs := flag.NewFlagSet("agents "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("cache", agentbundle.DefaultDir(), "agent bundle cache (default ${GAUNTLET_CACHE:-~/.cache/gauntlet}/agents)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	// Flags may come before or after the harness names.
	var names []string
	for rest := args[1:]; ; {
		if err := fs.Parse(rest); err != nil {
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		names, rest = append(names, fs.Arg(0)), fs.Args()[1:]
	}
	cache := agentbundle.Cache{Dir: *dir}
	table := agentbundle.Bundled(harness.All())
	if args[0] == "list" {
		if len(names) > 0 {
			fmt.Fprintln(stderr, "gauntlet agents list: takes no arguments")
			return exitUsage
		}
		return listAgents(cache, stdout, stderr)
	}
	if len(names) > 0 {
		var pick []harness.Harness
		for _, n := range names {
			i := slices.IndexFunc(table, func(h harness.Harness) bool { return h.Name == n })
			if i < 0 {
				fmt.Fprintf(stderr, "gauntlet agents install: harness %q has no agent bundle; bundled: %s\n", n, harness.Names(table))
				return exitUsage
			}
			pick = append(pick, table[i])
		}
		table = pick
	}
	opts := agentbundle.InstallOptions{Output: stderr}
	if !*quiet {
		opts.Progress = &barProgress{w: stderr}
	}
	start := time.Now()
	sts, err := cache.Install(ctx, table, opts)
	if p, ok := opts.Progress.(*barProgress); ok {
		p.finish()
	}
	if err != nil {
		fmt.Fprintf(stderr, "gauntlet agents install: %v\n", err)
		return exitFailure
	}
	for _, st := range sts {
		fmt.Fprintf(stdout, "%s %s ready in %s\n", st.Harness, st.Version, st.Dir)
	}
	fmt.Fprintf(stdout, "(%s)\n", time.Since(start).Round(time.Millisecond))
	return exitOK
}

func listAgents(cache agentbundle.Cache, stdout, stderr io.Writer) int {
	sts, err := cache.List(harness.All())
	if err != nil {
		fmt.Fprintf(stderr, "gauntlet agents list: %v\n", err)
		return exitFailure
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HARNESS\tVERSION\tSTATE\tSIZE\tBUNDLE")
	for _, st := range sts {
		state, size := "not installed", "-"
		if st.Installed {
			state, size = "installed", fmt.Sprintf("%.0f MB", float64(st.Bytes)/1e6)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", st.Harness, st.Version, state, size, st.Dir)
	}
	_ = tw.Flush()
	return exitOK
}

// barProgress draws agentbundle's stages as progress bars.
type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

// Stage starts a bar for one stage. Its size goes in the description and
// no rate is drawn: a bundle is hard-linked from npm's tree, so "bytes per
// second" would be the speed of link(2) over file sizes (hundreds of TB/s),
// not of anything copied.
func (p *barProgress) Stage(desc string, total int64) {
	p.finish()
	if total > 0 {
		desc = fmt.Sprintf("%s (%.0f MB)", desc, float64(total)/1e6)
	}
	p.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(false), progressbar.OptionSetWidth(30), progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSpinnerType(14))
}

func (p *barProgress) Add(n int64) {
	if p.bar != nil {
		_ = p.bar.Add64(n)
	}
}

func (p *barProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
		p.bar = nil
	}
}
