package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/gauntlet-bench/gauntlet/pkg/client"
)

// errUsage marks a usage error (exit code 2); its text is printed as is.
var errUsage = errors.New("usage")

// usageError returns an error wrapping errUsage.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// env is what a client subcommand runs with.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// clientFlags are the flags every client command takes.
type clientFlags struct {
	url, token, credentials string
	json                    bool
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "API URL (default $GAUNTLET_URL, else the credentials file)")
	fs.StringVar(&c.token, "token", "", "API token (default $GAUNTLET_TOKEN, else the credentials file)")
	fs.StringVar(&c.credentials, "credentials", "", "credentials file (default $GAUNTLET_CREDENTIALS, else ~/.config/gauntlet/credentials)")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of tables")
}

// apiCommand is the flag set of a subcommand that calls the API: the
// client flags every such command takes plus its own.
type apiCommand struct {
	flags clientFlags
	fs    *flag.FlagSet
}

// newAPICommand returns a subcommand's flag set with the client flags
// registered; the caller adds its own flags to fs before parsing.
func newAPICommand(e env, name, usage string) *apiCommand {
	c := &apiCommand{fs: newFlagSet(name, usage, e.stderr)}
	c.flags.register(c.fs)
	return c
}

// positional parses args and returns the positional arguments: a usage
// error saying wrongCount unless there are exactly want of them.
func (c *apiCommand) positional(args []string, want int, wrongCount string) ([]string, error) {
	pos, err := parseArgs(c.fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != want {
		return nil, usageError("%s", wrongCount)
	}
	return pos, nil
}

// connect is positional followed by resolving the API client.
func (c *apiCommand) connect(args []string, want int, wrongCount string) ([]string, *client.Client, error) {
	pos, err := c.positional(args, want, wrongCount)
	if err != nil {
		return nil, nil, err
	}
	cl, err := c.flags.client()
	if err != nil {
		return nil, nil, err
	}
	return pos, cl, nil
}

// client resolves the API URL and token: flags, then GAUNTLET_URL and
// GAUNTLET_TOKEN, then the credentials file `gauntlet local` writes
// (--credentials, else $GAUNTLET_CREDENTIALS — the variable `make run`
// honours — else the default path).
func (c *clientFlags) client() (*client.Client, error) {
	url, token := first(c.url, os.Getenv("GAUNTLET_URL")), first(c.token, os.Getenv("GAUNTLET_TOKEN"))
	if url == "" || token == "" {
		path := first(c.credentials, os.Getenv("GAUNTLET_CREDENTIALS"))
		if path == "" {
			var err error
			if path, err = client.DefaultCredentialsPath(); err != nil {
				return nil, err
			}
		}
		creds, err := client.LoadCredentials(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no API configured: start `gauntlet local`, or pass --url and --token (or set GAUNTLET_URL and GAUNTLET_TOKEN)")
		}
		if err != nil {
			return nil, err
		}
		url, token = first(url, creds.URL), first(token, creds.Token)
	}
	return client.New(url, token, nil)
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// parseArgs parses flags that may come before, between or after the
// positional arguments and returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// newFlagSet returns a flag set that prints its usage to stderr.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: gauntlet %s\n\nflags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// exitCode maps a command's error to an exit code, printing it.
func exitCode(err error, name string, stderr io.Writer) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "gauntlet %s: %s\n", name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return exitUsage
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "gauntlet %s: interrupted\n", name)
		return exitFailure
	}
	fmt.Fprintf(stderr, "gauntlet %s: %v\n", name, err)
	return exitFailure
}

// group is a command with subcommands (gauntlet benchmark list, …).
type group struct {
	name string
	subs []subcommand
}

type subcommand struct {
	name, usage, summary string
	run                  func(ctx context.Context, e env, args []string) error
}

func (g group) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := env{stdin: os.Stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		g.usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, s := range g.subs {
		if s.name == args[0] {
			return exitCode(s.run(ctx, e, args[1:]), g.name+" "+s.name, stderr)
		}
	}
	fmt.Fprintf(stderr, "gauntlet %s: unknown subcommand %q\n\n", g.name, args[0])
	g.usage(stderr)
	return exitUsage
}

func (g group) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: gauntlet %s <subcommand> [flags]\n\nsubcommands:\n", g.name)
	for _, s := range g.subs {
		fmt.Fprintf(w, "  %-40s %s\n", s.usage, s.summary)
	}
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// maxFreeText bounds a free-text cell of a table (a run name) so a row
// fits 120 columns; --json has the whole value.
const maxFreeText = 36

// clip shortens s to at most n runes, marking the cut with "…".
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// tableWriter writes aligned columns.
type tableWriter struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *tableWriter {
	t := &tableWriter{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *tableWriter) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

func (t *tableWriter) flush() error { return t.tw.Flush() }

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
