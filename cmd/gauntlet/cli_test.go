package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/client"
	"github.com/gauntlet-bench/gauntlet/pkg/server/servertest"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// cliRun runs the built binary with env (plus a private XDG_CONFIG_HOME)
// and stdin, returning stdout, stderr and the exit code.
type cliRun struct {
	t   *testing.T
	env []string
}

func (c cliRun) run(stdin string, args ...string) (string, string, int) {
	c.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if exitErr, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), exitErr.ExitCode()
	} else if err != nil {
		c.t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), errOut.String(), 0
}

// ok runs a command that must succeed and returns its stdout.
func (c cliRun) ok(stdin string, args ...string) string {
	c.t.Helper()
	stdout, stderr, code := c.run(stdin, args...)
	if code != exitOK {
		c.t.Fatalf("gauntlet %v = exit %d\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
	}
	return stdout
}

const cliRunConfig = `
[experiment]
benchmark = "demo-bench"

[tasks]
task_set = "parity"

[execution]
attempts_per_task = 1
max_concurrent_attempts = 4

[[agents]]
harness = "oracle"
`

// TestCLIAgainstServer drives the built binary against a real `gauntlet
// local` (in-process, real sandboxes) through every client command.
func TestCLIAgainstServer(t *testing.T) {
	srv, err := servertest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	home := t.TempDir()
	c := cliRun{t: t, env: []string{"GAUNTLET_URL=" + srv.URL, "GAUNTLET_TOKEN=" + srv.Tenant.Token, "XDG_CONFIG_HOME=" + home}}

	var list v1.BenchmarkList
	if err := json.Unmarshal([]byte(c.ok("", "benchmark", "list", "--json")), &list); err != nil || len(list.Benchmarks) == 0 || list.Benchmarks[0].Key != "demo-bench" {
		t.Fatalf("benchmark list --json = %+v (%v), want demo-bench", list, err)
	}
	if out := c.ok("", "benchmark", "info", "demo-bench", "--wait"); !strings.Contains(out, "task set parity: 8 tasks, recommended") || !strings.Contains(out, "csv-summary") {
		t.Errorf("benchmark info:\n%s", out)
	}

	const value = "cli-secret-value-91c3"
	c.ok(value+"\n", "secret", "set", "CLI_SECRET", "--scope", "personal")
	if out := c.ok("", "secret", "list"); !strings.Contains(out, "CLI_SECRET") || !strings.Contains(out, "personal") || strings.Contains(out, value) {
		t.Errorf("secret list:\n%s", out)
	}
	c.ok("", "secret", "delete", "CLI_SECRET", "--scope", "personal")

	cfg := filepath.Join(t.TempDir(), "run.toml")
	if err := os.WriteFile(cfg, []byte(cliRunConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	out := c.ok("", "submit", cfg, "--yes", "--watch")
	for _, want := range []string{"demo-bench@1.0: 8 tasks, 8 attempts in all", ": finished 8/8", "oracle", "100.0%"} {
		if !strings.Contains(out, want) {
			t.Errorf("submit --watch output lacks %q:\n%s", want, out)
		}
	}
	var runs v1.RunList
	if err := json.Unmarshal([]byte(c.ok("", "runs", "list", "--json")), &runs); err != nil || len(runs.Runs) != 1 {
		t.Fatalf("runs list --json = %+v (%v), want one run", runs, err)
	}
	id := runs.Runs[0].ID
	if out := c.ok("", "runs", "list"); !strings.Contains(out, id) || !strings.Contains(out, "8/8") {
		t.Errorf("runs list:\n%s", out)
	}
	var detail v1.RunDetail
	if err := json.Unmarshal([]byte(c.ok("", "runs", "info", id, "--json")), &detail); err != nil || detail.Status != "finished" {
		t.Errorf("runs info --json = %+v (%v), want finished", detail.RunView, err)
	}
	// The text view carries every sidebar fact and each agent's harness,
	// model and how long it ran.
	if out := c.ok("", "runs", "info", id); !strings.Contains(out, "pinned demo-bench@"+detail.ManifestVersion+" "+detail.ManifestDigest) ||
		!strings.Contains(out, "tokens ") || !strings.Contains(out, "cost $") || !strings.Contains(out, "by "+detail.Submission.SubmittedByName) ||
		detail.Submission.SubmittedByName == "" || !strings.Contains(out, "agent 1 ") || !strings.Contains(out, "agent 1 oracle: harness oracle, model (none)") ||
		!strings.Contains(out, ", ran ") {
		t.Errorf("runs info:\n%s", out)
	}
	if out := c.ok("", "runs", "logs", id); !strings.Contains(out, "INFO submitted") || !strings.Contains(out, "finished") {
		t.Errorf("runs logs:\n%s", out)
	}
	if out := c.ok("", "leaderboard", "demo-bench"); !strings.Contains(out, "demo-bench — ranked by pass@1") || !strings.Contains(out, "oracle [parity]") {
		t.Errorf("leaderboard:\n%s", out)
	}
	// The run's one agent against itself: every common task, no change.
	if out := c.ok("", "compare", id, id); !strings.Contains(out, "on 8 common tasks") || !strings.Contains(out, "100.0% (67.6–100.0)") ||
		!strings.Contains(out, "Regressions (A solves, B does not): 0") {
		t.Errorf("compare:\n%s", out)
	}
	dir := t.TempDir()
	c.ok("", "runs", "download", id, "--type", "results", "-o", dir)
	zr, err := zip.OpenReader(filepath.Join(dir, id+"-results.zip"))
	if err != nil {
		t.Fatalf("downloaded zip: %v", err)
	}
	if len(zr.File) != 1 || zr.File[0].Name != "results.csv" {
		t.Errorf("downloaded zip holds %v, want results.csv", zr.File)
	}
	zr.Close()
	runsArtifactsCLI(t, c, srv.URL, srv.Tenant.Token, id)

	failures := []struct {
		name, stdin string
		args        []string
		code        int
		stderr      string
	}{
		{"stop a finished run", "", []string{"runs", "stop", id}, exitFailure, "409 CONFLICT"},
		{"unknown run", "", []string{"runs", "info", "r-nope"}, exitFailure, "404 NOT_FOUND"},
		{"no run id", "", []string{"runs", "info"}, exitUsage, "want one run id"},
		{"secret value on argv", "x", []string{"secret", "set", "A", "B"}, exitUsage, "never the command line"},
		{"empty secret", "", []string{"secret", "set", "EMPTY"}, exitFailure, "empty value"},
		{"secret name with a leading underscore", "x", []string{"secret", "set", "_KEY"}, exitUsage, "^[A-Z][A-Z0-9_]*$"},
		{"reserved secret name", "x", []string{"secret", "set", "GAUNTLET_TOKEN"}, exitUsage, "reserved"},
		// The name is refused before the value is read: no stdin at all
		// still gets the name's error, not "empty value".
		{"bad secret name before its value", "", []string{"secret", "set", "lower_case"}, exitUsage, "must be an environment variable name"},
		{"reserved osmosis secret name", "x", []string{"secret", "set", "SKYPILOT_KEY"}, exitUsage, "names starting with SKYPILOT_"},
		{"registry credential without a secret", "", []string{"benchmark", "add", "demo-bench@1.0", "--registry-credential", "ghcr.io"}, exitUsage, "want HOST=SECRET"},
		{"registry credential naming no record", "", []string{"benchmark", "add", "demo-bench@1.0", "--registry-credential", "ghcr.io=NO_SUCH_RECORD"}, exitFailure, "registry_credentials[0].secret: the workspace has no secret record NO_SUCH_RECORD"},
		{"bad package name", "", []string{"benchmark", "add", "a/b/c"}, exitFailure, `source: package reference "a/b/c": name "a/b/c" is not a package name`},
		{"bad package ref", "", []string{"benchmark", "add", "org/name@Not_A_Tag"}, exitFailure, "is neither tag, revision nor digest"},
		{"repo and a name", "", []string{"benchmark", "add", "demo-bench", "--repo", "https://github.com/acme/tasks"}, exitUsage, "give no NAME"},
		{"repo refused by the network guard", "", []string{"benchmark", "add", "--repo", "http://127.0.0.1:9/acme/tasks"}, exitFailure, "loopback"},
		{"bad config", "", []string{"submit", "/nonexistent.toml"}, exitFailure, "read run config"},
		{"unknown subcommand", "", []string{"runs", "frob"}, exitUsage, `unknown subcommand "frob"`},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := c.run(tt.stdin, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("gauntlet %v = exit %d, stderr %q; want %d with %q", tt.args, code, stderr, tt.code, tt.stderr)
			}
		})
	}

	// An unknown dataset is refused at once, naming what the registry has.
	if _, stderr, code := c.run("", "benchmark", "add", "no-such-dataset@9.9", "--wait"); code != exitFailure || !strings.Contains(stderr, "datasets: demo-bench") {
		t.Errorf("benchmark add of an unknown dataset: exit %d, %q; want 1 naming the registry's datasets", code, stderr)
	}

	// Without flags or environment the CLI reads the credentials file.
	bare := cliRun{t: t, env: []string{"GAUNTLET_URL=", "GAUNTLET_TOKEN=", "XDG_CONFIG_HOME=" + home}}
	if _, stderr, code := bare.run("", "benchmark", "list"); code != exitFailure || !strings.Contains(stderr, "no API configured") {
		t.Errorf("without credentials: exit %d, %q; want 1, no API configured", code, stderr)
	}
	if err := client.SaveCredentials(filepath.Join(home, "gauntlet", "credentials"), client.Credentials{URL: srv.URL, Token: srv.Tenant.Token}); err != nil {
		t.Fatal(err)
	}
	if out := bare.ok("", "benchmark", "list"); !strings.Contains(out, "demo-bench") {
		t.Errorf("benchmark list with the credentials file:\n%s", out)
	}
	// GAUNTLET_CREDENTIALS (what make run honours) names another file.
	elsewhere := filepath.Join(t.TempDir(), "creds")
	if err := client.SaveCredentials(elsewhere, client.Credentials{URL: srv.URL, Token: srv.Tenant.Token}); err != nil {
		t.Fatal(err)
	}
	moved := cliRun{t: t, env: []string{"GAUNTLET_URL=", "GAUNTLET_TOKEN=", "XDG_CONFIG_HOME=" + t.TempDir(), "GAUNTLET_CREDENTIALS=" + elsewhere}}
	if out := moved.ok("", "benchmark", "list"); !strings.Contains(out, "demo-bench") {
		t.Errorf("benchmark list with GAUNTLET_CREDENTIALS:\n%s", out)
	}
	if strings.Contains(srv.Logs(), value) {
		t.Error("the secret value appeared in the server log")
	}
}
