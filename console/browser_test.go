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
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/server"
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

	srv := startPlatform(ctx, t, root)
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
	waitFor(ctx, t, "the leaderboard to rank all three entrants", func() (bool, error) {
		var lb struct {
			Rows []json.RawMessage
		}
		if err := c.do(ctx, "GET", "/v1/benchmarks/demo-bench/leaderboard", "", nil, &lb); err != nil {
			return false, err
		}
		return len(lb.Rows) == 3, nil
	})

	shots := os.Getenv("GAUNTLET_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", filepath.Join(root, "console", "test", "console.test.mjs"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"GAUNTLET_URL="+srv.URL(), "GAUNTLET_TOKEN="+tenant.Token, "GAUNTLET_RUN_ID="+created.ID,
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

// startPlatform serves `gauntlet local` on a free loopback port with the
// example registry and catalog, until the test ends.
func startPlatform(ctx context.Context, t *testing.T, root string) *server.Server {
	t.Helper()
	runner := filepath.Join(t.TempDir(), "sandbox-runner")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", runner, filepath.Join(root, "cmd", "sandbox-runner")).CombinedOutput(); err != nil {
		t.Fatalf("build sandbox-runner: %v\n%s", err, out)
	}
	catalog := filepath.Join(root, "examples", "catalog.toml")
	srv, err := server.Open(ctx, server.Options{
		DataDir:         t.TempDir(),
		Addr:            "127.0.0.1:0",
		Registry:        filepath.Join(root, "examples", "registry.json"),
		CredentialsPath: "-",
		Local:           local.Options{RunnerPath: runner, Catalog: catalog, Isolation: "bwrap-host"}, // the example tasks run on the host rootfs (development mode) until they carry images
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
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
