package localimages_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/internal/fixtures"
	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/localimages"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

var runnerBin string

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "gauntlet-localimages-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runnerBin = filepath.Join(tmp, "sandbox-runner")
	// Static: the runner runs inside the task's image, which has its own libc.
	build := exec.Command("go", "build", "-o", runnerBin, "../../cmd/sandbox-runner")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build sandbox-runner: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(tmp)
	os.Exit(code)
}

// TestTerminalBench2TasksEndToEnd runs the two real Terminal-Bench 2 tasks
// of shared/fixtures (read in place, copied to a temp dir and adapted there,
// never into the repository) on the local platform: synced with images
// (their Dockerfile FROM python:3.13-slim-bookworm reaches the Debian +
// python3 base through the mirror setting; buildah builds them), then the
// oracle passes both and nop fails both, every attempt in its task's image.
//
// The adaptations, each needed because these machines (and tests) reach no
// network beyond loopback, as published the tasks need the internet:
//   - tests/test.sh: the published verifier installs curl with apt-get and uv
//     from astral.sh, then runs pytest with uvx; here it runs
//     `python3 -m pytest` from the image (Debian's python3-pytest in the
//     base) and writes reward.txt the same way (no CTRF report: Debian has
//     no pytest-json-ctrf);
//   - task.toml: network_mode = "no-network" (published: public by default);
//   - the platform forces builds (Harbor's forced build): the published
//     docker_image alexgshaw/<task>:20251031 is on Docker Hub, which is
//     out of reach;
//   - fix-git: environment/Dockerfile drops `RUN apt-get update && apt-get
//     install -y git` (git is in the base), and setup.sh clones a stand-in
//     of github.com/TheMikeMerrill/personal-site that the test makes (two
//     commits holding _includes/about.md and _layouts/default.html) instead
//     of the GitHub repository, resetting to its second commit where the
//     original resets to d7d3e4b; the rest of setup.sh, the solution and
//     the tests are unchanged;
//   - log-summary-date-ranges: solution/solve.sh drops its first line's
//     `apt-get update && apt-get install -y grep coreutils` (both are in
//     the base).
func TestTerminalBench2TasksEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("heavy (two buildah builds FROM the Debian + python3 base and four attempts in images, minutes on a busy machine); run without -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("buildah builds and image sandboxes need root here; run the tests as root")
	}
	provenance, err := fixtures.Path("terminal-bench-2/PROVENANCE.md")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Dir(provenance)
	tasks := t.TempDir()
	for _, name := range []string{"fix-git", "log-summary-date-ranges"} {
		if out, err := exec.Command("cp", "-r", filepath.Join(src, name), filepath.Join(tasks, name)).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", name, err, out)
		}
		adaptOffline(t, filepath.Join(tasks, name))
	}
	adaptFixGit(t, filepath.Join(tasks, "fix-git"))
	edit(t, filepath.Join(tasks, "log-summary-date-ranges", "solution", "solve.sh"), "apt-get update && apt-get install -y grep coreutils\n", "")

	ctx := context.Background()
	_, mirrors := imagetest.BaseImages(t)
	dir := t.TempDir()
	catalog := filepath.Join(dir, "catalog.toml")
	writeFile(t, catalog, fmt.Sprintf("[[benchmarks]]\nkey = \"tb2\"\nname = \"tb2\"\ndir = %q\nharness_requirement = \"optional\"\npass_threshold = 1.0\n", tasks))
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	imagesDir := filepath.Join(dir, "images")
	store, err := image.Open(imagesDir, image.Options{Mirrors: mirrors, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	// Both tasks name docker_image alexgshaw/<task>:20251031, which no
	// registry here serves: the platform forces builds of their
	// Dockerfiles (Harbor's forced build), the published way to get the
	// same environment.
	envs, err := localimages.Environments(localimages.Config{Store: store, Mirrors: mirrors, BuildDir: buildCache(t),
		Policy: localimages.Policy{ForceBuild: true}})
	if err != nil {
		t.Fatal(err)
	}
	sandboxImages := localimages.SandboxImages(store, nil)
	start := time.Now()
	p, err := local.Open(ctx, local.Options{DataDir: dir, RunnerPath: runnerBin, Catalog: catalog, Isolation: "bwrap",
		Images: sandboxImages, Environments: envs, WatchInterval: time.Second,
		Pipeline: pipeline.Options{GateDelay: 50 * time.Millisecond, RetryBackoff: 50 * time.Millisecond}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	t.Logf("sync with image builds: %v", time.Since(start))
	recs := p.Records()
	b, err := recs.Benchmarks.Benchmark(ctx, pipeline.PlatformWorkspace, "tb2")
	if err != nil || b.Status != records.SyncReady {
		t.Fatalf("tb2 = %+v, %v; want ready", b, err)
	}
	m, _, err := recs.Benchmarks.Manifest(ctx, pipeline.PlatformWorkspace, "tb2", b.ReadyVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range m.Tasks {
		if !task.Available() {
			log := ""
			if task.Environment != nil && task.Environment.BuildLog != "" {
				if rc, err := p.Blobs().Get(ctx, task.Environment.BuildLog); err == nil {
					data, _ := io.ReadAll(rc)
					rc.Close()
					log = string(data)
				}
			}
			t.Fatalf("task %s unavailable: %s\n%s", task.Name, task.UnavailableReason(), log)
		}
		if task.Environment.Source != "build" || task.Environment.BuildKey == "" {
			t.Errorf("task %s: %+v, want a forced build", task.Name, task.Environment)
		}
	}
	if err := recs.Workspaces.PutBilling(ctx, "ws1", records.Billing{Status: records.BillingActive, Plan: "local"}); err != nil {
		t.Fatal(err)
	}
	res, err := p.Service().Submit(ctx, pipeline.SubmitRequest{Workspace: "ws1", User: "u1", Document: []byte(`
[experiment]
benchmark = "tb2"
[execution]
attempts_per_task = 1
max_concurrent_attempts = 2
[[agents]]
harness = "oracle"
[[agents]]
harness = "nop"
`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Wait for the run's terminal state, re-reading it on a ticker.
	deadline := time.After(10 * time.Minute)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var r run.Run
	for {
		if r, err = recs.Runs.Run(ctx, res.Run.ID); err != nil {
			t.Fatal(err)
		}
		if r.Status.Terminal() {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("run still %s after 10 minutes", r.Status)
		case <-tick.C:
		}
	}
	results, err := recs.Runs.AllResults(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, res := range results {
		if res.Final() {
			got[fmt.Sprintf("%d/%s", res.Agent, res.Task)] = string(res.Outcome) + " " + res.Message
		}
	}
	want := map[string]string{
		"0/fix-git": "passed", "0/log-summary-date-ranges": "passed",
		"1/fix-git": "failed", "1/log-summary-date-ranges": "failed",
	}
	for k, w := range want {
		if !strings.HasPrefix(got[k], w) {
			t.Errorf("%s (agent 0 = oracle, 1 = nop): %q, want %s", k, got[k], w)
		}
	}
	t.Logf("results: %v (run %s)", got, r.Status)
}

// adaptOffline replaces the verifier with an offline one and turns the
// network off (see the test's doc comment).
func adaptOffline(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "tests", "test.sh"), `#!/bin/bash
# Offline adaptation of the published verifier (which installs curl and uv
# from the internet, then runs pytest with uvx): pytest from the image.
if [ "$PWD" = "/" ]; then
    echo "Error: No working directory set. Please set a WORKDIR in your Dockerfile before running this script."
    exit 1
fi
mkdir -p /logs/verifier
python3 -m pytest /tests/test_outputs.py -rA -p no:cacheprovider
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
`)
	edit(t, filepath.Join(dir, "task.toml"), "[environment]\n", "[environment]\nnetwork_mode = \"no-network\"\n")
}

// adaptFixGit makes fix-git's build offline: git from the base, and a
// stand-in of the personal-site repository in the build context.
func adaptFixGit(t *testing.T, dir string) {
	t.Helper()
	env := filepath.Join(dir, "environment")
	edit(t, filepath.Join(env, "Dockerfile"), "RUN apt-get update && apt-get install -y git\n", "")
	repo := filepath.Join(t.TempDir(), "personal-site")
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_AUTHOR_DATE=2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2025-01-01T00:00:00Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "master")
	writeFile(t, filepath.Join(repo, "_includes", "about.md"), "I study at MIT.\n")
	writeFile(t, filepath.Join(repo, "_layouts", "default.html"), "<html><body>{{ content }}</body></html>\n")
	writeFile(t, filepath.Join(repo, "README.md"), "personal site\n")
	git("add", "-A")
	git("commit", "-q", "-m", "first")
	writeFile(t, filepath.Join(repo, "README.md"), "personal site, built with Jekyll\n")
	git("commit", "-q", "-am", "second")
	second := git("rev-parse", "HEAD")
	bare := filepath.Join(env, "resources", "personal-site.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", repo, bare).CombinedOutput(); err != nil {
		t.Fatalf("git clone --bare: %v\n%s", err, out)
	}
	// The clone's origin names this run's temp dir: without it the build
	// context is the same every run, so the build key is, and a second run
	// imports the image built before instead of building it again.
	if out, err := exec.Command("git", "-C", bare, "remote", "remove", "origin").CombinedOutput(); err != nil {
		t.Fatalf("git remote remove origin: %v\n%s", err, out)
	}
	setup := filepath.Join(env, "setup.sh")
	edit(t, setup, "git clone https://github.com/TheMikeMerrill/personal-site.git", "git clone /app/resources/personal-site.git")
	edit(t, setup, "git reset --hard d7d3e4b", "git reset --hard "+second)
}

func edit(t *testing.T, path, old, repl string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not contain %q (fixture changed?)", path, old)
	}
	writeFile(t, path, strings.Replace(string(data), old, repl, 1))
}

func writeFile(t testing.TB, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}
