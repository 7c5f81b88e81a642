package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/client"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

var benchmarkGroup = group{name: "benchmark", subs: []subcommand{
	{name: "list", usage: "benchmark list", summary: "list the workspace's benchmarks", run: benchmarkList},
	{name: "info", usage: "benchmark info KEY [--wait]", summary: "show a benchmark's manifest", run: benchmarkInfo},
	{name: "add", usage: "benchmark add NAME[@VERSION] | ORG/NAME[@REF] [--api-key-secret SECRET] | --repo URL[@REF] [--path DIR]  [--registry-credential HOST=SECRET]… [--wait]", summary: "add a dataset: from the registry.json, from Harbor's package registry (org/name) or from a git repository", run: benchmarkAdd},
	{name: "remove", usage: "benchmark remove KEY", summary: "remove a benchmark added from the registry", run: benchmarkRemove},
	{name: "sync", usage: "benchmark sync KEY [--wait]", summary: "retry a failed sync", run: benchmarkSync},
	{name: "check", usage: "benchmark check KEY [--no-wait]", summary: "run the oracle and nop once per task in its environment: which tasks are broken or trivial", run: benchmarkCheck},
	{name: "build-log", usage: "benchmark build-log [--follow] KEY TASK", summary: "print (or follow, while it builds) the image build log of a Dockerfile task", run: benchmarkBuildLog},
}}

func benchmarkList(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "benchmark list", "benchmark list [--json]")
	_, c, err := cmd.connect(args, 0, "takes no arguments")
	if err != nil {
		return err
	}
	list, err := c.Benchmarks(ctx)
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, v1.BenchmarkList{Benchmarks: list})
	}
	return writeBenchmarkList(e.stdout, list)
}

// writeBenchmarkList writes the benchmark table so that a row fits 120
// columns (free-text cells clipped; the name is in the source, and
// `benchmark info` and --json have everything), then, for each failed
// sync, a line with its error.
func writeBenchmarkList(w io.Writer, list []v1.BenchmarkView) error {
	t := newTable(w, "KEY", "SOURCE", "STATUS", "TASKS", "CATEGORIES", "RUNS", "LAST RUN")
	var failed []v1.BenchmarkView
	for _, b := range list {
		last := "–"
		if b.LastRun != nil {
			last = b.LastRun.Name + " (" + b.LastRun.Status + ")"
		}
		status := syncStatus(b)
		if b.Status == "failed" {
			failed = append(failed, b)
			status = "failed (see below)"
		}
		if b.Images != nil {
			status = "syncing (see below)"
			if b.Status == "failed" {
				status = "failed (see below)"
			}
		}
		t.row(b.Key, clip(string(b.Source.Type)+" "+b.Source.Ref, 26), clip(status, 18),
			strconv.Itoa(b.TaskCount), strconv.Itoa(b.CategoryCount), strconv.Itoa(b.RunCount), clip(last, 26))
	}
	if err := t.flush(); err != nil {
		return err
	}
	// Image preparation is written in full (wrapped, never clipped): which
	// tasks can run already.
	for _, b := range list {
		if b.Images != nil {
			writeImageStates(w, b.Key, b.Images)
		}
	}
	for _, b := range failed {
		prefix := b.Key + ": sync failed: "
		fmt.Fprintln(w, prefix+clip(b.SyncError, 120-len([]rune(prefix))))
	}
	if len(failed) > 0 {
		fmt.Fprintln(w, "(gauntlet benchmark info KEY prints a sync's whole error; benchmark sync KEY retries it)")
	}
	return nil
}

// writeImageStates writes how far a sync's images are and every task's
// state, each state's names wrapped at 120 columns:
//
//	KEY: preparing images 7 / 16 (version 1.0)
//	  ready: a, b
//	  preparing: c
func writeImageStates(w io.Writer, key string, p *v1.ImageProgress) {
	fmt.Fprintf(w, "%s: %s (version %s)\n", key, p.Label, p.Version)
	byState := map[string][]string{}
	for _, t := range p.Tasks {
		byState[t.State] = append(byState[t.State], t.Name)
	}
	for _, st := range []string{"ready", "preparing", "unavailable"} {
		if names := byState[st]; len(names) > 0 {
			writeWrapped(w, "  "+st+": ", names, 120)
		}
	}
}

// writeWrapped writes prefix and the comma-separated names, continuing on
// lines indented like the first once a line would pass width columns.
func writeWrapped(w io.Writer, prefix string, names []string, width int) {
	indent := strings.Repeat(" ", len([]rune(prefix)))
	line := prefix
	for i, n := range names {
		item := n
		if i < len(names)-1 {
			item += ","
		}
		if line != prefix && line != indent && len([]rune(line))+1+len([]rune(item)) > width {
			fmt.Fprintln(w, line)
			line = indent
		}
		if line != prefix && line != indent {
			line += " "
		}
		line += item
	}
	fmt.Fprintln(w, line)
}

func syncStatus(b v1.BenchmarkView) string {
	switch {
	case b.Status == "syncing" && b.Images != nil:
		return "syncing: " + b.Images.Label
	case b.Status == "syncing" && b.Progress.Label != "":
		return "syncing: " + b.Progress.Label
	case b.Status == "syncing":
		return fmt.Sprintf("syncing %d/%d", b.Progress.Synced, b.Progress.Total)
	case b.Status == "failed":
		return "failed: " + b.SyncError
	}
	return b.Status
}

func benchmarkInfo(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "benchmark info", "benchmark info KEY [--wait] [--json]")
	wait := cmd.fs.Bool("wait", false, "first wait until its sync ends (ready or failed)")
	pos, c, err := cmd.connect(args, 1, "want one benchmark key")
	if err != nil {
		return err
	}
	if pos[0], err = resolveBenchmark(ctx, c, pos[0]); err != nil {
		return err
	}
	if *wait {
		if _, err := waitSynced(ctx, e, c, pos[0], true); err != nil {
			return err
		}
	}
	b, err := c.Benchmark(ctx, pos[0])
	if err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, b)
	}
	fmt.Fprintf(e.stdout, "%s (%s)\n%s\nsource:  %s %s\nstatus:  %s\n", b.Name, b.Key, b.Description, b.Source.Type, b.Source.Ref, syncStatus(b.BenchmarkView))
	if len(b.RegistryCredentials) > 0 {
		logins := make([]string, len(b.RegistryCredentials))
		for i, c := range b.RegistryCredentials {
			logins[i] = c.Registry + " with secret " + c.Secret
		}
		fmt.Fprintf(e.stdout, "registry logins: %s\n", strings.Join(logins, ", "))
	}
	if p := b.Images; p != nil {
		fmt.Fprintf(e.stdout, "images:  %s of version %s (%d ready, %d preparing, %d unavailable); runs may select the ready tasks now\n",
			p.Label, p.Version, p.Ready, p.Preparing, p.Unavailable)
		t := newTable(e.stdout, "TASK", "IMAGE", "BUILD LOG")
		for _, task := range p.Tasks {
			log := "–"
			if task.BuildLog != "" {
				log = "gauntlet benchmark build-log --follow " + b.Key + " " + task.Name
			}
			t.row(task.Name, task.State, log)
		}
		if err := t.flush(); err != nil {
			return err
		}
		for _, task := range p.Tasks {
			if task.Reason != "" {
				fmt.Fprintf(e.stdout, "%s is unavailable: %s\n", task.Name, task.Reason)
			}
		}
		fmt.Fprintln(e.stdout)
	}
	m := b.Manifest
	if m == nil {
		return nil
	}
	fmt.Fprintf(e.stdout, "version: %s (%s)\nharness: %s", m.Version, m.Digest, m.Harness.Requirement)
	if m.Harness.Default != "" {
		fmt.Fprintf(e.stdout, ", default %s", m.Harness.Default)
	}
	fmt.Fprintf(e.stdout, "\njudge:   %v\npass threshold: %g\n\n", judge(m.Judge.Required, m.Judge.DefaultModel), m.PassThreshold)
	cats := make([]string, len(m.Categories))
	for i, c := range m.Categories {
		cats[i] = fmt.Sprintf("%s (%d)", c.Name, c.Tasks)
	}
	fmt.Fprintf(e.stdout, "categories: %s\n", strings.Join(cats, ", "))
	for _, s := range m.TaskSets {
		rec := ""
		if s.Recommended {
			rec = ", recommended"
		}
		fmt.Fprintf(e.stdout, "task set %s: %d tasks%s. %s\n", s.Name, s.Tasks, rec, s.Description)
	}
	fmt.Fprintln(e.stdout)
	t := newTable(e.stdout, "TASK", "CATEGORY", "DIFFICULTY", "IMAGE", "CHECK")
	for _, task := range m.Tasks {
		t.row(task.Name, orDash(task.Category), orDash(task.Difficulty), imageLabel(task.Environment), orDash(task.Check))
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, u := range m.UnavailableTasks {
		fmt.Fprintf(e.stdout, "\nunavailable: %s\n", u.Reason)
	}
	return nil
}

// imageLabel says where a task's image comes from and what it is pinned to.
func imageLabel(env *v1.TaskEnvironment) string {
	switch {
	case env == nil:
		return "–"
	case env.Unavailable != "":
		return env.Source + ": unavailable"
	}
	digest := env.Pinned
	if i := strings.LastIndex(digest, "@sha256:"); i >= 0 && len(digest) >= i+20 {
		digest = digest[i+1 : i+20]
	}
	if env.Image != "" {
		return env.Source + " " + env.Image + " " + digest
	}
	return env.Source + " " + digest
}

func benchmarkCheck(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "benchmark check", "benchmark check KEY [--no-wait] [--json]")
	noWait := cmd.fs.Bool("no-wait", false, "start the check and return at once")
	pos, c, err := cmd.connect(args, 1, "want one benchmark key")
	if err != nil {
		return err
	}
	if pos[0], err = resolveBenchmark(ctx, c, pos[0]); err != nil {
		return err
	}
	check, err := c.StartCheck(ctx, pos[0])
	if err != nil {
		return err
	}
	if !cmd.flags.json {
		fmt.Fprintf(e.stdout, "environment check of %s@%s: run %s (%s)\n", pos[0], check.Version, check.Run, check.Status)
	}
	for !*noWait && check.Status != "done" {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if check, err = c.Check(ctx, pos[0]); err != nil {
			return err
		}
	}
	if cmd.flags.json {
		return printJSON(e.stdout, check)
	}
	if check.Status == "done" {
		fmt.Fprintf(e.stdout, "%d tasks checked; broken (the oracle fails): %s; trivial (nop passes): %s\n",
			check.Checked, listOrNone(check.Broken), listOrNone(check.Trivial))
		for _, f := range check.Flagged {
			fmt.Fprintf(e.stdout, "  %s %s: %s\n", f.Verdict, f.Task, f.Detail)
		}
	}
	return nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func benchmarkBuildLog(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "benchmark build-log", "benchmark build-log [--follow] KEY TASK")
	follow := cmd.fs.Bool("follow", false, "while the image builds, print the log as it is written, until the build ends")
	pos, c, err := cmd.connect(args, 2, "want a benchmark key and a task name")
	if err != nil {
		return err
	}
	if pos[0], err = resolveBenchmark(ctx, c, pos[0]); err != nil {
		return err
	}
	if *follow {
		return c.FollowBuildLog(ctx, pos[0], pos[1], e.stdout)
	}
	text, err := c.BuildLog(ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	_, err = io.WriteString(e.stdout, text)
	return err
}

func judge(required bool, model string) string {
	if !required {
		return "none"
	}
	return "required, default " + model
}

func orDash(s *string) string {
	if s == nil {
		return "–"
	}
	return *s
}

func benchmarkAdd(ctx context.Context, e env, args []string) error {
	const usage = "benchmark add NAME[@VERSION] | ORG/NAME[@REF] [--api-key-secret SECRET] | --repo URL[@REF] [--path DIR]  [--registry-credential HOST=SECRET]… [--wait] [--json]"
	cmd := newAPICommand(e, "benchmark add", usage)
	wait := cmd.fs.Bool("wait", false, "wait until the task list is synced (ready or failed)")
	var req v1.AddBenchmarkRequest
	cmd.fs.StringVar(&req.Repo, "repo", "", "add the task directories of a git repository, https://host/org/name[@REF] (REF: branch, tag or commit; a branch is followed by scheduled syncs)")
	cmd.fs.StringVar(&req.Path, "path", "", "with --repo: the directory holding the task directories (default tasks)")
	cmd.fs.StringVar(&req.APIKeySecret, "api-key-secret", "", "with ORG/NAME: the workspace secret record holding a Harbor API key, for private packages")
	cmd.fs.Func("registry-credential", "HOST=SECRET: pull the task images from registry HOST (ghcr.io, registry.example.com:5000) "+
		"logged in with workspace secret record SECRET, whose value is username:password; repeatable", func(v string) error {
		host, name, ok := strings.Cut(v, "=")
		if !ok || host == "" || name == "" {
			return fmt.Errorf("want HOST=SECRET, e.g. ghcr.io=GHCR_PULL, not %q", v)
		}
		req.RegistryCredentials = append(req.RegistryCredentials, v1.RegistryCredential{Registry: host, Secret: name})
		return nil
	})
	pos, err := parseArgs(cmd.fs, args)
	if err != nil {
		return err
	}
	switch {
	case req.Repo == "" && len(pos) != 1:
		return usageError("want one dataset: %s", usage)
	case req.Repo != "" && len(pos) != 0:
		return usageError("--repo takes the dataset from the repository: give no NAME (%s)", usage)
	}
	if len(pos) == 1 {
		req.Source = pos[0]
	}
	c, err := cmd.flags.client()
	if err != nil {
		return err
	}
	b, err := c.AddBenchmarkFrom(ctx, req)
	if err != nil {
		return err
	}
	return finishChange(ctx, e, cmd, c, b, *wait)
}

func benchmarkSync(ctx context.Context, e env, args []string) error {
	return benchmarkChange(ctx, e, args, "sync", "benchmark sync KEY [--wait] [--json]",
		func(c *client.Client, arg string) (v1.BenchmarkView, error) { return c.SyncBenchmark(ctx, arg) })
}

// benchmarkChange runs add or sync, then optionally waits for the sync.
func benchmarkChange(ctx context.Context, e env, args []string, name, usage string, change func(*client.Client, string) (v1.BenchmarkView, error)) error {
	return benchmarkChangeWith(ctx, e, args, name, usage, nil, change)
}

// benchmarkChangeWith is benchmarkChange with the command's own flags.
func benchmarkChangeWith(ctx context.Context, e env, args []string, name, usage string, flags func(*flag.FlagSet), change func(*client.Client, string) (v1.BenchmarkView, error)) error {
	cmd := newAPICommand(e, "benchmark "+name, usage)
	wait := cmd.fs.Bool("wait", false, "wait until the task list is synced (ready or failed)")
	if flags != nil {
		flags(cmd.fs)
	}
	pos, c, err := cmd.connect(args, 1, "want one argument: "+usage)
	if err != nil {
		return err
	}
	b, err := change(c, pos[0])
	if err != nil {
		return err
	}
	return finishChange(ctx, e, cmd, c, b, *wait)
}

// finishChange prints an added or re-synced benchmark and, with wait,
// follows its sync to the end.
func finishChange(ctx context.Context, e env, cmd *apiCommand, c *client.Client, b v1.BenchmarkView, wait bool) error {
	var err error
	if !cmd.flags.json {
		fmt.Fprintf(e.stdout, "benchmark %s (%s): %s\n", b.Key, b.Source.Ref, syncStatus(b))
		if b.SyncWarning != "" {
			fmt.Fprintf(e.stdout, "warning: %s\n", b.SyncWarning)
		}
	}
	if wait {
		if b, err = waitSynced(ctx, e, c, b.Key, cmd.flags.json); err != nil {
			return err
		}
	}
	if cmd.flags.json {
		return printJSON(e.stdout, b)
	}
	if b.Status == "failed" {
		return fmt.Errorf("sync of %s failed: %s", b.Key, b.SyncError)
	}
	return nil
}

// waitSynced polls a benchmark until its sync ends.
func waitSynced(ctx context.Context, e env, c *client.Client, key string, quiet bool) (v1.BenchmarkView, error) {
	last := ""
	for {
		d, err := c.Benchmark(ctx, key)
		if err != nil {
			return v1.BenchmarkView{}, err
		}
		b := d.BenchmarkView
		if s := syncStatus(b); s != last && !quiet {
			fmt.Fprintf(e.stdout, "benchmark %s: %s\n", key, s)
			last = s
		}
		if b.Status == "ready" || b.Status == "failed" {
			return b, nil
		}
		select {
		case <-ctx.Done():
			return b, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func benchmarkRemove(ctx context.Context, e env, args []string) error {
	cmd := newAPICommand(e, "benchmark remove", "benchmark remove KEY")
	pos, c, err := cmd.connect(args, 1, "want one benchmark key")
	if err != nil {
		return err
	}
	if pos[0], err = resolveBenchmark(ctx, c, pos[0]); err != nil {
		return err
	}
	if err := c.DeleteBenchmark(ctx, pos[0]); err != nil {
		return err
	}
	if cmd.flags.json {
		return printJSON(e.stdout, map[string]string{"removed": pos[0]})
	}
	fmt.Fprintf(e.stdout, "benchmark %s removed\n", pos[0])
	return nil
}

// resolveBenchmark turns what the user typed into a benchmark key: a key is
// taken as is (keys are unique); otherwise a name that one benchmark carries
// names it, and a name two benchmarks carry is refused listing both keys,
// since guessing would silently pick one. Anything else is passed on for the
// API to report as not found.
func resolveBenchmark(ctx context.Context, c *client.Client, ref string) (string, error) {
	list, err := c.Benchmarks(ctx)
	if err != nil {
		return "", fmt.Errorf("list benchmarks to resolve %q: %w", ref, err)
	}
	var matches, keys []string
	for _, b := range list {
		if b.Key == ref {
			return ref, nil
		}
		if b.Name == ref {
			keys = append(keys, b.Key)
			matches = append(matches, fmt.Sprintf("%s (%s %s)", b.Key, b.Source.Type, b.Source.Ref))
		}
	}
	switch len(matches) {
	case 0:
		return ref, nil
	case 1:
		return keys[0], nil
	}
	return "", fmt.Errorf("ambiguous: benchmark name %q matches %d benchmarks: %s; give a key", ref, len(matches), strings.Join(matches, ", "))
}
