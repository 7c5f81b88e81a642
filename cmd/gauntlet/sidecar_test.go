package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSidecarAndHealthcheckThroughGauntletLocal runs the examples'
// sidecar-orders (an api service beside main, built at sync, reached as
// api:8000) and ready-server (an [environment.healthcheck] gating the
// agent) through `gauntlet local` end to end, as `make run` does: images
// served on loopback, the benchmark added and synced (the sidecar's image
// built and pinned), the oracle and nop submitted and watched. The oracle
// passes both, nop fails both, and nothing of the services is left.
func TestSidecarAndHealthcheckThroughGauntletLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a sidecar image and runs 4 image sandboxes; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("image sandboxes and buildah builds need root here; run the tests as root")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	for _, b := range []string{"gauntlet", "sandbox-runner"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s: run `make build` first: %v", b, err)
		}
	}
	dir := t.TempDir()
	// A registry of the two example tasks.
	for _, task := range []string{"sidecar-orders", "ready-server"} {
		if out, err := exec.Command("cp", "-r", filepath.Join(root, "examples", "demo-envs", task), filepath.Join(dir, task)).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v: %s", task, err, out)
		}
	}
	registry := `[{"name": "services-demo", "version": "1.0", "description": "sidecar and healthcheck examples", "tasks": [
  {"name": "sidecar-orders", "git_url": "", "git_commit_id": "", "path": "sidecar-orders"},
  {"name": "ready-server", "git_url": "", "git_commit_id": "", "path": "ready-server"}]}]`
	svcWriteFile(t, filepath.Join(dir, "registry.json"), registry)
	svcWriteFile(t, filepath.Join(dir, "run.toml"), `[experiment]
benchmark = "services-demo-1-0"
[execution]
attempts_per_task = 1
max_concurrent_attempts = 2
max_retries = 0
[[agents]]
harness = "oracle"
[[agents]]
harness = "nop"
`)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	settings := filepath.Join(dir, "image-settings.toml")
	serve := exec.CommandContext(ctx, filepath.Join(bin, "gauntlet"), "images", "serve", "--addr", svcFreeAddr(t), "--write-settings", settings)
	var serveLog bytes.Buffer
	serve.Stdout, serve.Stderr = &serveLog, &serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = serve.Process.Signal(syscall.SIGTERM); _ = serve.Wait() })
	svcWaitFor(t, 5*time.Minute, "the image settings", func() bool { info, err := os.Stat(settings); return err == nil && info.Size() > 0 })

	data, addr := filepath.Join(dir, "data"), svcFreeAddr(t)
	server := exec.CommandContext(ctx, filepath.Join(bin, "gauntlet"), "local", "--data", data, "--addr", addr,
		"--registry", filepath.Join(dir, "registry.json"), "--catalog", "", "--runner", filepath.Join(bin, "sandbox-runner"),
		"--sandbox", "bwrap", "--image-settings", settings, "--credentials", "-")
	var serverLog bytes.Buffer
	server.Stdout, server.Stderr = &serverLog, &serverLog
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = server.Process.Signal(syscall.SIGTERM)
			_ = server.Wait()
		}
	}
	t.Cleanup(stop)
	env := append(os.Environ(), "GAUNTLET_URL=http://"+addr)
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "gauntlet"), args...)
		cmd.Env, cmd.Dir = env, dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gauntlet %s: %v\n%s\nserver log:\n%s", strings.Join(args, " "), err, out, svcTail(serverLog.String(), 4000))
		}
		return string(out)
	}
	svcWaitFor(t, 2*time.Minute, "the server's token", func() bool {
		token, err := os.ReadFile(filepath.Join(data, "token"))
		if err != nil || len(bytes.TrimSpace(token)) == 0 {
			return false
		}
		env = append(env, "GAUNTLET_TOKEN="+string(bytes.TrimSpace(token)))
		return true
	})
	svcWaitFor(t, 2*time.Minute, "the server", func() bool {
		cmd := exec.Command(filepath.Join(bin, "gauntlet"), "benchmark", "list")
		cmd.Env = env
		return cmd.Run() == nil
	})
	cli("benchmark", "add", "services-demo@1.0", "--wait")
	info := cli("benchmark", "info", "services-demo-1-0")
	t.Logf("benchmark info:\n%s", info)
	if strings.Contains(info, "unavailable") {
		t.Fatalf("a task is unavailable:\n%s", info)
	}
	out := cli("submit", "run.toml", "--yes", "--watch")
	t.Logf("submit:\n%s", out)
	// Both tasks: the oracle passes each (100% of 2), nop fails each (0%
	// of 2), and no attempt is an infra error.
	for _, want := range []string{"finished 4/4 (passed 2, failed 2, errored 0)", "oracle  finished  2/2   100.0%", "nop     finished  2/2   0.0%"} {
		if !strings.Contains(out, want) {
			t.Errorf("the run's output lacks %q", want)
		}
	}
	stop()
	// Nothing of the services is left: no server process, no mount.
	if pids := svcProcessesWith(t, "/srv/server.py"); len(pids) > 0 {
		t.Errorf("sidecar processes left after the run: %v", pids)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), data) {
		t.Errorf("mounts under the data dir left after the run")
	}
}

func svcWriteFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func svcFreeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitFor polls cond on a ticker until it holds, failing after limit.
func svcWaitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not ready within %s", what, limit)
		}
		<-tick.C
	}
}

func svcTail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// processesWith lists the pids whose command line holds arg.
func svcProcessesWith(t *testing.T, arg string) []string {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), arg) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
