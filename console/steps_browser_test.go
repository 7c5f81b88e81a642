package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// seedStepsRun adds demo-steps (the example multi-step task) from the
// example registry and runs examples/runs/steps/oracle-nop.toml on it, for
// the drawer's Steps section; it returns the run's id.
func seedStepsRun(ctx context.Context, t *testing.T, c apiClient, root string) string {
	t.Helper()
	var added struct{ Key string }
	if err := c.do(ctx, "POST", "/v1/benchmarks", "application/json", []byte(`{"source":"demo-steps@1.0"}`), &added); err != nil {
		t.Fatalf("add demo-steps: %v", err)
	}
	waitFor(ctx, t, "demo-steps to sync", func() (bool, error) {
		var b struct{ Status, SyncError string }
		if err := c.do(ctx, "GET", "/v1/benchmarks/"+added.Key, "", nil, &b); err != nil {
			return false, err
		}
		if b.Status == "failed" {
			return false, fmt.Errorf("demo-steps sync failed: %s", b.SyncError)
		}
		return b.Status == "ready", nil
	})
	cfg, err := os.ReadFile(filepath.Join(root, "examples", "runs", "steps", "oracle-nop.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID string }
	if err := c.do(ctx, "POST", "/v1/runs", "application/toml", cfg, &created); err != nil {
		t.Fatalf("submit the multi-step run: %v", err)
	}
	waitFor(ctx, t, "the multi-step run to finish", func() (bool, error) {
		var r struct{ Status, Reason string }
		if err := c.do(ctx, "GET", "/v1/runs/"+created.ID, "", nil, &r); err != nil {
			return false, err
		}
		if r.Status == "failed" || r.Status == "stopped" {
			return false, fmt.Errorf("multi-step run %s ended %s: %s", created.ID, r.Status, r.Reason)
		}
		return r.Status == "finished", nil
	})
	return created.ID
}
