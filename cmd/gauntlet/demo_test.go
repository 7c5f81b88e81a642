package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMakeRunFlow runs scripts/demo.sh, the `make run` flow, end to end on
// a temp data dir and a free loopback port: build, start `gauntlet local`,
// show the managed demo-bench (never a second copy of it from the
// registry), submit examples/runs/demo.toml with --watch, print the
// leaderboard, and (GAUNTLET_DEMO_STOP=1) stop the server.
func TestMakeRunFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("the make-run flow runs 52 sandboxes; skipped with -short")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bubblewrap is not installed; run `make deps`")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	data := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../../scripts/demo.sh")
	cmd.Env = append(os.Environ(), "GAUNTLET_DATA="+data, "GAUNTLET_ADDR="+addr, "GAUNTLET_DEMO_STOP=1",
		"GAUNTLET_CREDENTIALS="+filepath.Join(t.TempDir(), "credentials"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		log, _ := os.ReadFile(filepath.Join(data, "server.log"))
		t.Fatalf("scripts/demo.sh: %v\n%s\nserver log:\n%s", err, out.String(), log)
	}
	t.Logf("make-run flow took %s", time.Since(start).Round(time.Second))
	got := out.String()
	if strings.Contains(got, "B/s)") {
		t.Errorf("a progress bar shows a transfer rate (the bundle is hard-linked, not copied):\n%s", got)
	}
	if strings.Contains(got, "demo-bench-1-0") {
		t.Errorf("the demo added a second demo-bench (key demo-bench-1-0) beside the managed one:\n%s", got)
	}
	for _, want := range []string{
		"gauntlet local is up on http://" + addr,
		// The demo's catalog (examples/demo-catalog.toml): four tasks, each
		// image listed as it is prepared while the server starts.
		"demo-bench-mini (demo-bench)",
		"building the image of task ", "task image 1 of 4  build  ", "task image 4 of 4  build  ",
		// demo.toml names demo-bench: the managed benchmark's key.
		"demo-bench@1.0: 4 tasks, 48 attempts in all",
		": finished 48/48",
		"demo-envs-1-0@1.0: 5 tasks, 10 attempts in all", "finished 10/10 (passed 5, failed 5, errored 0)",
		"harness oracle, model (none)", "harness nop, model (none)", "heuristic (command)", "mock/gpt-5 (codex)",
		"demo-bench — ranked by pass@1 (cost, time and tokens per task)",
		// demo-steps, the multi-step example: each attempt's steps.
		"multi-step attempts:", "greeter · attempt 1 · oracle: passed, reward 1", "step document ",
		"console:  http://" + addr + "/",
		"token:    " + data + "/token",
		"the server stops now",
		"gauntlet local (pid",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("demo output lacks %q:\n%s", want, got)
		}
	}
	checkPrivateDataDir(t, data)
	if _, err := os.Stat(filepath.Join(data, "server.pid")); !os.IsNotExist(err) {
		t.Errorf("server.pid left behind (err %v): the server was not stopped", err)
	}
}

// checkPrivateDataDir asserts the data dir is 0700, every file directly in
// it 0600, and the token in none of them but the token file.
func checkPrivateDataDir(t *testing.T, data string) {
	t.Helper()
	if info, err := os.Stat(data); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("data dir %s: mode %v (%v), want 0700", data, info.Mode().Perm(), err)
	}
	token, err := os.ReadFile(filepath.Join(data, "token"))
	if err != nil || len(bytes.TrimSpace(token)) == 0 {
		t.Fatalf("read token: %v", err)
	}
	entries, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", e.Name(), info.Mode().Perm())
		}
		if e.Name() == "token" || strings.HasPrefix(e.Name(), "gauntlet.db") {
			continue
		}
		if content, err := os.ReadFile(filepath.Join(data, e.Name())); err == nil && bytes.Contains(content, bytes.TrimSpace(token)) {
			t.Errorf("%s holds the operator token", e.Name())
		}
	}
}
