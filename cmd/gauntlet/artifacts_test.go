package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/client"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// runsArtifactsCLI checks `runs artifacts` on a finished run: the
// listing names an attempt's stored files, a path downloads one (to a
// file, or stdout with -o -), and bad input is a usage error or a 404.
func runsArtifactsCLI(t *testing.T, c cliRun, url, token, runID string) {
	t.Helper()
	cl, err := client.New(url, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.Results(context.Background(), runID, client.ResultFilter{})
	if err != nil || len(res.Results) == 0 {
		t.Fatalf("results: %v, %v", res, err)
	}
	resultID := res.Results[0].ID
	out := c.ok("", "runs", "artifacts", runID, resultID)
	if !strings.Contains(out, "PATH") || !strings.Contains(out, "artifacts/verifier/test-stdout.txt") {
		t.Errorf("runs artifacts listing:\n%s", out)
	}
	var list []v1.ArtifactView
	if err := json.Unmarshal([]byte(c.ok("", "runs", "artifacts", runID, resultID, "--json")), &list); err != nil || len(list) == 0 {
		t.Fatalf("runs artifacts --json: %v, %v", list, err)
	}
	dst := filepath.Join(t.TempDir(), "sub", "reward.txt")
	c.ok("", "runs", "artifacts", runID, resultID, "artifacts/verifier/reward.txt", "-o", dst)
	if data, err := os.ReadFile(dst); err != nil || strings.TrimSpace(string(data)) != "1" {
		t.Errorf("downloaded reward.txt = %q, %v; want 1", data, err)
	}
	if out := c.ok("", "runs", "artifacts", runID, resultID, "artifacts/verifier/reward.txt", "-o", "-"); strings.TrimSpace(out) != "1" {
		t.Errorf("runs artifacts -o - = %q, want the reward", out)
	}
	if _, stderr, code := c.run("", "runs", "artifacts", runID); code != exitUsage || !strings.Contains(stderr, "want a run id, a result id") {
		t.Errorf("runs artifacts RUN: exit %d %q, want a usage error", code, stderr)
	}
	if _, stderr, code := c.run("", "runs", "artifacts", runID, resultID, "artifacts/nope.txt", "-o", "-"); code != exitFailure || !strings.Contains(stderr, "404") {
		t.Errorf("runs artifacts missing path: exit %d %q, want 404", code, stderr)
	}
}
