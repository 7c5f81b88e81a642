package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/gauntlet-bench/gauntlet/pkg/client"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

var runsGroup = group{name: "runs", subs: []subcommand{
	{name: "list", usage: "runs list [--benchmark KEY] [--status S] [--limit N]", summary: "list runs, newest first", run: runsList},
	{name: "info", usage: "runs info RUN", summary: "show a run: progress, agents, metrics", run: runsInfo},
	{name: "logs", usage: "runs logs RUN [--follow]", summary: "print a run's log", run: runsLogs},
	{name: "stop", usage: "runs stop RUN", summary: "stop a pending, queued or running run", run: runsStop},
	{name: "download", usage: "runs download RUN [--type T] [--format gauntlet|harbor] [-o DIR]", summary: "download a run's results as a zip (or a Harbor job directory)", run: runsDownload},
	{name: "artifacts", usage: "runs artifacts RUN RESULT [PATH] [-o FILE]", summary: "list an attempt's stored files (declared artifacts, logs), or download one", run: runsArtifacts},
}}

func runsList(ctx context.Context, e env, args []string) error {
	var f client.RunFilter
	cmd := newAPICommand(e, "runs list", "runs list [--benchmark KEY] [--status S] [--limit N] [--cursor C] [--json]")
	cmd.fs.StringVar(&f.Benchmark, "benchmark", "", "only runs of this benchmark")
	cmd.fs.StringVar(&f.Status, "status", "", "only runs in this status")
	cmd.fs.IntVar(&f.Limit, "limit", 20, "page size")
	cmd.fs.StringVar(&f.Cursor, "cursor", "", "continue after a previous page")
	_, c, err := cmd.connect(args, 0, "takes no arguments")
	if err != nil {
		return err
	}
	list, err := c.Runs(ctx, f)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, list)
	}
	t := newTable(e.stdout, "ID", "NAME", "BENCHMARK", "STATUS", "PROGRESS", "PASSED", "CREATED")
	for _, r := range list.Runs {
		t.row(r.ID, clip(r.Name, maxFreeText), r.Benchmark, r.Status, fmt.Sprintf("%d/%d", r.Progress.Completed, r.Progress.Total),
			strconv.FormatInt(r.Outcomes.Passed, 10), when(&r.CreatedAt))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if list.NextCursor != "" {
		fmt.Fprintf(e.stdout, "more: gauntlet runs list --cursor %s\n", list.NextCursor)
	}
	return nil
}

func runsInfo(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "runs info", "runs info RUN [--json]")
	pos, c, err := cmd.connect(args, 1, "want one run id: runs info RUN [--json]")
	if err != nil {
		return err
	}
	id := pos[0]
	d, err := c.Run(ctx, id)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, d)
	}
	if err := printRunSummary(e.stdout, d); err != nil {
		return err
	}
	if err := printStepResults(ctx, e.stdout, c, id); err != nil { // steps.go
		return err
	}
	// What ended the errored attempts (an out-of-memory kill says whose
	// processes used the memory).
	errored, err := c.Results(ctx, id, client.ResultFilter{Outcome: "errored", Limit: erroredShown})
	if err != nil {
		return err
	}
	printErrored(e.stdout, errored)
	return nil
}

// erroredShown bounds the errored attempts runs info lists.
const erroredShown = 20

// printErrored lists errored attempts with their error class and message.
func printErrored(w io.Writer, l v1.ResultList) {
	if len(l.Results) == 0 {
		return
	}
	fmt.Fprintf(w, "\nerrored attempts:\n")
	for _, r := range l.Results {
		fmt.Fprintf(w, "  %s (%s): %s error — %s\n", r.ID, r.AgentLabel, r.ErrorClass, r.Message)
	}
	if l.NextCursor != "" {
		fmt.Fprintf(w, "  … (the first %d; the run page lists them all)\n", len(l.Results))
	}
}

func runsLogs(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "runs logs", "runs logs RUN [--follow] [--json]")
	follow := cmd.fs.Bool("follow", false, "keep printing new lines until the run ends")
	pos, c, err := cmd.connect(args, 1, "want one run id: runs logs RUN [--follow] [--json]")
	if err != nil {
		return err
	}
	id := pos[0]
	cursor := ""
	for {
		page, err := c.RunLogs(ctx, id, cursor, 500)
		if err != nil {
			return err
		}
		for _, l := range page.Logs {
			if cmd.flags.json {
				if err := printJSON(e.stdout, l); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintln(e.stdout, v1.FormatLogLine(l.At, l.Level, l.Step, l.Slot, l.Message))
		}
		if page.NextCursor != "" {
			cursor = page.NextCursor
			continue
		}
		if !*follow {
			return nil
		}
		d, err := c.Run(ctx, id)
		if err != nil {
			return err
		}
		if d.Status == "finished" || d.Status == "failed" || d.Status == "stopped" {
			if len(page.Logs) == 0 {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func runsStop(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "runs stop", "runs stop RUN [--json]")
	pos, c, err := cmd.connect(args, 1, "want one run id: runs stop RUN [--json]")
	if err != nil {
		return err
	}
	id := pos[0]
	r, err := c.StopRun(ctx, id)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, r)
	}
	fmt.Fprintf(e.stdout, "run %s (%s): %s\n", r.Name, r.ID, r.Status)
	return nil
}

func runsDownload(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "runs download", "runs download RUN [--type summary|results|artifacts|logs|all] [--format gauntlet|harbor] [-o DIR] [--json]")
	kind := cmd.fs.String("type", "all", "what to download: summary, results, artifacts, logs or all")
	format := cmd.fs.String("format", "gauntlet", "gauntlet (CSVs, logs, artifacts) or harbor (a Harbor job directory that Harbor's viewer opens; type all)")
	dir := cmd.fs.String("o", ".", "directory to write the zip into")
	pos, c, err := cmd.connect(args, 1, "want one run id: runs download RUN [--type summary|results|artifacts|logs|all] [--format gauntlet|harbor] [-o DIR] [--json]")
	if err != nil {
		return err
	}
	id := pos[0]
	body, err := c.Download(ctx, id, *kind, *format)
	if err != nil {
		return err
	}
	defer body.Close()
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", *dir, err)
	}
	name := id + "-" + *kind + ".zip"
	if *format == "harbor" {
		name = id + "-harbor.zip"
	}
	path := filepath.Join(*dir, name)
	n, err := writeDownload(e, body, path, cmd.flags.json)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, map[string]any{"path": path, "bytes": n})
	}
	fmt.Fprintf(e.stdout, "wrote %s (%d bytes)\n", path, n)
	return nil
}

// writeDownload copies body to path with a byte counter on a terminal.
func writeDownload(e env, body io.Reader, path string, quiet bool) (int64, error) {
	tmp := path + ".part"
	f, err := os.Create(tmp)
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", tmp, err)
	}
	defer os.Remove(tmp)
	var w io.Writer = f
	if !quiet && isTerminal(e.stdout) {
		bar := progressbar.NewOptions64(-1, progressbar.OptionSetWriter(e.stdout), progressbar.OptionSetDescription("downloading"),
			progressbar.OptionShowBytes(true), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		defer bar.Finish()
		w = io.MultiWriter(f, bar)
	} else if !quiet {
		fmt.Fprintf(e.stdout, "downloading to %s\n", path)
	}
	n, err := io.Copy(w, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("download to %s: %w", path, err)
	}
	return n, os.Rename(tmp, path)
}
