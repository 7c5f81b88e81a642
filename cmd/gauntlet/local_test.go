package main

import (
	"context"
	"github.com/gauntlet-bench/gauntlet/internal/syncbuf"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLocalNeverPrintsTheToken: the banner says where the token is, not
// what it is, and the data dir is private.
func TestLocalNeverPrintsTheToken(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- serveLocal(ctx, &stdout, &stderr, []string{"--data", data, "--addr", "127.0.0.1:0",
			"--catalog", "", "--registry", "../../examples/registry.json", "--credentials", "-", "--sandbox", "process", "--runner", "/bin/true"})
	}()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(stdout.String(), "stop with Ctrl-C") {
		select {
		case err := <-done:
			t.Fatalf("gauntlet local ended early: %v\n%s%s", err, stdout.String(), stderr.String())
		case <-deadline:
			t.Fatalf("no banner within 60 s:\n%s%s", stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("gauntlet local: %v", err)
	}
	token, err := os.ReadFile(filepath.Join(data, "token"))
	if err != nil {
		t.Fatal(err)
	}
	out := stdout.String() + stderr.String()
	if tok := strings.TrimSpace(string(token)); tok == "" || strings.Contains(out, tok) {
		t.Errorf("the output holds the token %q:\n%s", tok, out)
	}
	if !strings.Contains(out, "token:   in "+filepath.Join(data, "token")) {
		t.Errorf("the banner does not say where the token is:\n%s", out)
	}
	checkPrivateDataDir(t, data)
}
