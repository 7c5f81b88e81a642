package main

import (
	"github.com/gauntlet-bench/gauntlet/internal/syncbuf"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLocalHonoursTheMakeRunVariables starts `gauntlet local` with only
// the variables README's overrides table names (no flags): it listens on
// $GAUNTLET_ADDR, keeps its data in $GAUNTLET_DATA, runs the sandbox
// $GAUNTLET_SANDBOX names and writes the credentials to
// $GAUNTLET_CREDENTIALS, which the CLI then reads to reach it.
func TestLocalHonoursTheMakeRunVariables(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	data, creds := filepath.Join(dir, "data"), filepath.Join(dir, "creds", "credentials")
	env := []string{"GAUNTLET_ADDR=" + addr, "GAUNTLET_DATA=" + data, "GAUNTLET_SANDBOX=process",
		"GAUNTLET_CREDENTIALS=" + creds, "GAUNTLET_URL=", "GAUNTLET_TOKEN=", "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"XDG_DATA_HOME=" + filepath.Join(dir, "xdg-data")}
	runner := filepath.Join(dir, "sandbox-runner")
	if out, err := exec.Command("go", "build", "-o", runner, "github.com/gauntlet-bench/gauntlet/cmd/sandbox-runner").CombinedOutput(); err != nil {
		t.Fatalf("build sandbox-runner: %v\n%s", err, out)
	}
	cmd := exec.Command(binary, "local", "--catalog", "", "--registry", "", "--runner", runner)
	cmd.Env = append(os.Environ(), env...)
	var stderr syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	cli := cliRun{t: t, env: env}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Minute)
	for {
		if _, err := os.Stat(creds); err == nil {
			if _, _, code := cli.run("", "benchmark", "list"); code == exitOK {
				break
			}
		}
		select {
		case <-exited:
			t.Fatalf("gauntlet local exited (%v) before serving:\n%s", waitErr, stderr.String())
		case <-deadline:
			t.Fatalf("gauntlet local did not serve on $GAUNTLET_ADDR %s with credentials in $GAUNTLET_CREDENTIALS within 2 min:\n%s", addr, stderr.String())
		case <-tick.C:
		}
	}
	if _, err := os.Stat(filepath.Join(data, "token")); err != nil {
		t.Errorf("no token in $GAUNTLET_DATA: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "xdg-data", "gauntlet")); err == nil {
		t.Error("the default data dir was used although $GAUNTLET_DATA is set")
	}
	if !strings.Contains(stderr.String(), "--sandbox=process") {
		t.Errorf("$GAUNTLET_SANDBOX=process did not take effect (no isolation-off warning):\n%s", stderr.String())
	}
}
