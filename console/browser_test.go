package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/server"
	"github.com/gauntlet-bench/gauntlet/pkg/server/benchseed"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// chromiumPath is Debian's chromium, which the browser test drives.
const chromiumPath = "/usr/bin/chromium"

// seedRun is the run the browser test looks at: two agents with opposite
// outcomes on the demo-bench parity set (a published task set, so both
// enter the leaderboard), two attempts each so the pass@k curve has k = 1..2.
var seedRun = pipelinetest.OracleNopConfig(2, 8)

// fullNopRun is a nop agent under another model name on every task once: an
// entrant of the full task list beside the parity set's two.
const fullNopRun = `
[experiment]
benchmark = "demo-bench"

[execution]
attempts_per_task = 1
max_concurrent_attempts = 8

[[agents]]
name = "nop-full-list"
harness = "nop"
`

// TestConsoleInBrowser starts the real local platform (pkg/server: SQLite,
// queues, sandboxes, API and this console) on a temp dir, seeds a finished
// run through the API, and runs console/test/console.test.mjs in Debian's
// chromium through npm playwright-core. It fails, not skips, when the
// browser or node_modules are missing, naming the command that installs
// them. Screenshots go to $GAUNTLET_CONSOLE_SCREENSHOTS, else a temp dir.
func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the platform and a browser; skipped with -short")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	node := requireBrowserTooling(t, root)
	// One deadline for the whole test; the browser's waits share what is
	// left of it (GAUNTLET_WAIT_MS), so under load the test waits longer for
	// each state instead of failing at a fixed step timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	judge := modelmock.NewServer(modelmock.Script{APIKey: judgeKey, Usage: modelmock.Usage{Input: 410, Cached: 400, Output: 12},
		Turns: []modelmock.Turn{{Text: "PASS"}}})
	defer judge.Close()
	srv := startPlatform(ctx, t, root, judge.URL)
	tenant := srv.Tenant()
	c := apiClient{base: srv.URL(), token: tenant.Token}
	waitFor(ctx, t, "demo-bench to sync", func() (bool, error) {
		var b struct{ Status, SyncError string }
		if err := c.do(ctx, "GET", "/v1/benchmarks/demo-bench", "", nil, &b); err != nil {
			return false, err
		}
		if b.Status == "failed" {
			return false, fmt.Errorf("demo-bench sync failed: %s", b.SyncError)
		}
		return b.Status == "ready", nil
	})
	var created struct{ ID string }
	if err := c.do(ctx, "POST", "/v1/runs", "application/toml", []byte(seedRun), &created); err != nil {
		t.Fatalf("submit the seed run: %v", err)
	}
	waitFor(ctx, t, "the seed run to finish", func() (bool, error) {
		var r struct{ Status, Reason string }
		if err := c.do(ctx, "GET", "/v1/runs/"+created.ID, "", nil, &r); err != nil {
			return false, err
		}
		if r.Status == "failed" || r.Status == "stopped" {
			return false, fmt.Errorf("seed run %s ended %s: %s", created.ID, r.Status, r.Reason)
		}
		return r.Status == "finished", nil
	})
	// A second entrant measured on the full task list, not the parity set:
	// it ranks in the same list but is never tested against the best.
	var full struct{ ID string }
	if err := c.do(ctx, "POST", "/v1/runs", "application/toml", []byte(fullNopRun), &full); err != nil {
		t.Fatalf("submit the full-list run: %v", err)
	}
	waitFor(ctx, t, "the full-list run to finish", func() (bool, error) {
		var r struct{ Status, Reason string }
		if err := c.do(ctx, "GET", "/v1/runs/"+full.ID, "", nil, &r); err != nil {
			return false, err
		}
		if r.Status == "failed" || r.Status == "stopped" {
			return false, fmt.Errorf("full-list run %s ended %s: %s", full.ID, r.Status, r.Reason)
		}
		return r.Status == "finished", nil
	})
	judgeRun := seedJudgeRun(ctx, t, c)
	stepsRun := seedStepsRun(ctx, t, c, root) // steps_browser_test.go
	waitFor(ctx, t, "the leaderboard to rank all three entrants", func() (bool, error) {
		var lb struct {
			Rows []json.RawMessage
		}
		if err := c.do(ctx, "GET", "/v1/benchmarks/demo-bench/leaderboard", "", nil, &lb); err != nil {
			return false, err
		}
		return len(lb.Rows) == 3, nil
	})

	costBench := seedCostBenchmark(ctx, t, srv)
	flaggedBench, flaggedTask := seedFlaggedCheck(ctx, t, srv, judgeRun)
	unstarted := seedUnstartedRun(ctx, t, srv, created.ID)

	shots := os.Getenv("GAUNTLET_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", filepath.Join(root, "console", "test", "console.test.mjs"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"GAUNTLET_URL="+srv.URL(), "GAUNTLET_TOKEN="+tenant.Token, "GAUNTLET_RUN_ID="+created.ID, "GAUNTLET_JUDGE_RUN_ID="+judgeRun, "GAUNTLET_STEPS_RUN_ID="+stepsRun,
		"GAUNTLET_COST_BENCH="+costBench, "GAUNTLET_UNSTARTED_RUN_ID="+unstarted,
		"GAUNTLET_FLAGGED_BENCH="+flaggedBench, "GAUNTLET_FLAGGED_TASK="+flaggedTask,
		"GAUNTLET_SCREENSHOTS="+shots, "GAUNTLET_CHROMIUM="+chromiumPath, "GAUNTLET_WAIT_MS="+waitBudget(ctx))
	out, err := cmd.CombinedOutput()
	t.Logf("screenshots in %s", shots)
	if err != nil {
		t.Fatalf("browser test failed (%v):\n%s", err, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
}

// seedCostBenchmark writes a finished benchmark whose entrants report a
// cost per task (the demo's oracle and nop report none, so demo-bench shows
// no cost plot): benchseed's synthetic entrants, stored and scored as the
// pipeline stores them. One entrant's cost is marked as estimated from the
// price table. It returns the benchmark's key.
func seedCostBenchmark(ctx context.Context, t *testing.T, srv *server.Server) string {
	t.Helper()
	seeded, err := benchseed.Seed(ctx, srv.Platform().Service(), srv.Tenant().Workspace,
		benchseed.Shape{Entrants: 6, Tasks: 12, Attempts: 2, Categories: 3})
	if err != nil {
		t.Fatalf("seed the cost benchmark: %v", err)
	}
	est := seeded.Runs[len(seeded.Runs)-1]
	if err := srv.Records().Transact(ctx, []store.Op{records.AgentTallyOp(est, 0, run.Tally{CostEstimated: 1})}); err != nil {
		t.Fatalf("mark run %s's cost estimated: %v", est, err)
	}
	// One entrant's usage is its agent's own report (usage.json), as a
	// model-free command agent's is: the console marks it and keeps it off
	// the metered Pareto frontier.
	self := seeded.Runs[0]
	if err := srv.Records().Transact(ctx, []store.Op{records.AgentTallyOp(self, 0, run.Tally{UsageSelfReported: 1})}); err != nil {
		t.Fatalf("mark run %s's usage self-reported: %v", self, err)
	}
	return seeded.Benchmark
}

// flaggedDetail is the reason the seeded environment check gives for the
// task it flags broken.
const flaggedDetail = "the oracle (the task's own solution) does not pass: failed"

// seedFlaggedCheck stores a done environment check that flags the one task
// of the judge run's benchmark broken (true of judged-essay: its task has
// no solution for the oracle to run), as the pipeline stores a finished
// check. A real check cannot be had there (it grades with a judge whose key
// a check run does not name) nor one that flags anything on demo-bench
// (every oracle passes). The check's run is the judge run itself, so its
// "its attempts" link lands on results that carry the flag and have a
// detail to open. It returns the benchmark and the flagged task.
func seedFlaggedCheck(ctx context.Context, t *testing.T, srv *server.Server, runID string) (string, string) {
	t.Helper()
	r, err := srv.Records().Runs.Run(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	c := records.EnvCheck{Workspace: srv.Tenant().Workspace, Key: r.Benchmark, Version: r.ManifestVersion, Status: records.CheckDone,
		Run: r.ID, StartedAt: r.CreatedAt, EndedAt: r.CreatedAt.Add(time.Minute)}
	for _, task := range r.Tasks {
		c.Tasks = append(c.Tasks, records.TaskCheck{Task: task, Verdict: records.CheckBroken, Oracle: "failed", Nop: "failed", Detail: flaggedDetail})
	}
	if err := srv.Records().Benchmarks.PutEnvCheck(ctx, c); err != nil {
		t.Fatalf("store the environment check of %s: %v", r.Benchmark, err)
	}
	return r.Benchmark, r.Tasks[0]
}

// seedUnstartedRun stores a run as the pipeline leaves one that was stopped
// while queued, before any slot ran: every slot a cancelled result, the
// agent stopped without ever starting, the metrics recomputed by the
// pipeline. (Stopping a live run that early is a race the test cannot win
// every time.) It pins what the seed run like pinned. It returns the run's id.
func seedUnstartedRun(ctx context.Context, t *testing.T, srv *server.Server, like string) string {
	t.Helper()
	seed, err := srv.Records().Runs.Run(ctx, like)
	if err != nil {
		t.Fatal(err)
	}
	// Created before the seed run, so demo-bench's last run stays the
	// finished seed run the benchmark list test expects.
	now := seed.CreatedAt.Add(-time.Minute)
	tasks := seed.Tasks[:3]
	r := run.Run{ID: "r-stopped-while-queued", Workspace: srv.Tenant().Workspace, Name: "stopped-while-queued", Benchmark: seed.Benchmark,
		BenchmarkName: seed.BenchmarkName, ManifestWorkspace: seed.ManifestWorkspace, ManifestVersion: seed.ManifestVersion,
		ManifestDigest: seed.ManifestDigest, Tasks: tasks, Agents: 1, Planned: true, Reason: "stopped by the browser test",
		Settings: run.Settings{AttemptsPerTask: 1, MaxConcurrentAttempts: 1, TimeoutMultiplier: 1, PassThreshold: 1},
		Status:   run.Stopped, CreatedAt: now, QueuedAt: now, StoppingAt: now, EndedAt: now}
	ops, err := records.CreateRunOp(r)
	if err != nil {
		t.Fatal(err)
	}
	ops = ops[:1] // no active marker: the run is over
	agent, err := records.CreateAgentOp(run.Agent{RunID: r.ID, Index: 0, Harness: "oracle", Status: run.Stopped, EndedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	ops = append(ops, agent)
	var tally run.Tally
	for _, task := range tasks {
		res := run.Result{RunID: r.ID, SlotID: run.SlotID(0, task, 1), Agent: 0, Task: task, Attempt: 1, Outcome: run.Cancelled,
			Message: "the run was stopped before this attempt started", StartedAt: now, EndedAt: now, RecordedAt: now}
		op, err := records.ResultOp(res)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
		d := res.Deltas()
		tally.Done, tally.Cancelled = tally.Done+d.Done, tally.Cancelled+d.Cancelled
	}
	ops = append(ops, records.RunTallyOp(r.ID, tally), records.AgentTallyOp(r.ID, 0, tally))
	if err := srv.Records().Transact(ctx, ops); err != nil {
		t.Fatalf("store the unstarted run: %v", err)
	}
	if err := srv.Platform().Service().RecomputeRun(ctx, r.ID); err != nil {
		t.Fatalf("recompute the unstarted run: %v", err)
	}
	return r.ID
}

// requireBrowserTooling fails the test with the install command when
// chromium, node or playwright-core is missing, and returns node's path.
func requireBrowserTooling(t *testing.T, root string) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s is missing (%v); install it with: apt-get install -y chromium", chromiumPath, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (%v); install it with: apt-get install -y nodejs", err)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "playwright-core", "package.json")); err != nil {
		t.Fatalf("npm playwright-core is missing (%v); install it with: (cd %s && npm ci)", err, root)
	}
	return node
}

// judgeKey is the key of the judge the browser test's judge-graded run
// reaches through the verifier's model gateway (a mock on loopback).
const judgeKey = "sk-console-judge-REAL-0d1e2f3a4b"

// judgeBenchmark is a benchmark graded by an LLM judge, added to the
// example catalog: the runner's judge fixture task, whose verifier asks the
// judge (provider judgemock, the mock) whether the essay passes.
const judgeBenchmark = `
[[benchmarks]]
key = "judged-essay"
name = "judged-essay"
description = "One essay graded by an LLM judge."
dir = %q
harness_requirement = "optional"
judge_required = true
judge_model = "judgemock/gpt-5"
pass_threshold = 1.0
`

// seedJudgeRun submits a run of the judge benchmark through the API, waits
// for it to finish and returns its id.
func seedJudgeRun(ctx context.Context, t *testing.T, c apiClient) string {
	t.Helper()
	waitFor(ctx, t, "judged-essay to sync", func() (bool, error) {
		var b struct{ Status, SyncError string }
		if err := c.do(ctx, "GET", "/v1/benchmarks/judged-essay", "", nil, &b); err != nil {
			return false, err
		}
		if b.Status == "failed" {
			return false, fmt.Errorf("judged-essay sync failed: %s", b.SyncError)
		}
		return b.Status == "ready", nil
	})
	var set map[string]any
	if err := c.do(ctx, "PUT", "/v1/secrets/JUDGE_KEY?scope=workspace", "application/octet-stream", []byte(judgeKey), &set); err != nil {
		t.Fatalf("set the judge key: %v", err)
	}
	var created struct{ ID string }
	cfg := "[experiment]\nbenchmark = \"judged-essay\"\n[execution]\njudge_api_key_secret = \"JUDGE_KEY\"\nmax_retries = 0\n" +
		"[[agents]]\nharness = \"command\"\ncommand = \"echo The sea is wide. > /app/essay.txt\"\n"
	if err := c.do(ctx, "POST", "/v1/runs", "application/toml", []byte(cfg), &created); err != nil {
		t.Fatalf("submit the judge run: %v", err)
	}
	waitFor(ctx, t, "the judge run to finish", func() (bool, error) {
		var r struct{ Status, Reason string }
		if err := c.do(ctx, "GET", "/v1/runs/"+created.ID, "", nil, &r); err != nil {
			return false, err
		}
		if r.Status == "failed" || r.Status == "stopped" {
			return false, fmt.Errorf("judge run %s ended %s: %s", created.ID, r.Status, r.Reason)
		}
		return r.Status == "finished", nil
	})
	return created.ID
}

// startPlatform serves `gauntlet local` on a free loopback port with the
// example registry and catalog (plus judgeBenchmark, its judge routed to
// judgeURL), until the test ends.
func startPlatform(ctx context.Context, t *testing.T, root, judgeURL string) *server.Server {
	t.Helper()
	runner := filepath.Join(t.TempDir(), "sandbox-runner")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", runner, filepath.Join(root, "cmd", "sandbox-runner")).CombinedOutput(); err != nil {
		t.Fatalf("build sandbox-runner: %v\n%s", err, out)
	}
	examples, err := os.ReadFile(filepath.Join(root, "examples", "catalog.toml"))
	if err != nil {
		t.Fatal(err)
	}
	tasks := t.TempDir()
	if err := os.CopyFS(filepath.Join(tasks, "essay"), os.DirFS(filepath.Join(root, "pkg", "runner", "testdata", "judge-task"))); err != nil {
		t.Fatal(err)
	}
	// The copy lives elsewhere, so the example's relative registry path is made absolute.
	catalogText := strings.ReplaceAll(string(examples), `registry = "registry.json"`, fmt.Sprintf("registry = %q", filepath.Join(root, "examples", "registry.json"))) +
		fmt.Sprintf(judgeBenchmark, tasks)
	catalog := filepath.Join(t.TempDir(), "catalog.toml")
	gatewayCfg := filepath.Join(t.TempDir(), "gateway.toml")
	for path, text := range map[string]string{catalog: catalogText,
		// The operator hosts models (no run here calls the endpoint): the
		// New Run form offers the hosted model type.
		gatewayCfg: "[providers.judgemock]\nbase_urls = { openai-chat = \"" + judgeURL + "/v1\" }\nprices = \"openai\"\n" +
			"[hosted]\nbase_url = \"http://127.0.0.1:9/v1\"\napis = [\"openai-chat\"]\n"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.Open(ctx, server.Options{
		DataDir:         t.TempDir(),
		Addr:            "127.0.0.1:0",
		CredentialsPath: "-",
		Local: local.Options{Registry: filepath.Join(root, "examples", "registry.json"), RunnerPath: runner, Catalog: catalog, Isolation: "bwrap-host", // the example tasks run on the host rootfs (development mode) until they carry images
			ModelGatewayConfig: gatewayCfg},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("open the local platform: %v", err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(serveCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := srv.Close(); err != nil {
			t.Errorf("close the platform: %v", err)
		}
	})
	return srv
}

// waitFor polls cond every 200ms until it holds, fails, or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// apiClient calls the platform's HTTP API as the console does.
type apiClient struct {
	base, token string
}

func (c apiClient) do(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, res.Status, strings.TrimSpace(string(data)))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode %q: %w", method, path, data, err)
	}
	return nil
}

// waitBudget is the time left before ctx's deadline, less a margin for the
// node process to report, in milliseconds.
func waitBudget(ctx context.Context) string {
	left := time.Minute
	if deadline, ok := ctx.Deadline(); ok {
		left = time.Until(deadline) - 10*time.Second
	}
	return strconv.FormatInt(max(left.Milliseconds(), 1000), 10)
}
