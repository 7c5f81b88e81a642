package main

import (
	"bytes"
	"strings"
	"testing"

	v1 "github.com/gauntlet-bench/gauntlet/pkg/api/v1"
)

// TestBenchmarkListFits120Columns: a failed sync's long error, a long
// source and a long run name are clipped so every row fits 120 columns,
// and the list says where the whole error is.
func TestBenchmarkListFits120Columns(t *testing.T) {
	long := strings.Repeat("very long words ", 20)
	list := []v1.BenchmarkView{
		{Key: "terminal-bench-2-0", Name: "terminal-bench", Source: v1.Source{Type: "harbor", Ref: "terminal-bench@2.0"}, Status: "ready",
			TaskCount: 89, CategoryCount: 9, RunCount: 3, LastRun: &v1.RunBrief{Name: "terminal-bench-" + long, Status: "finished"}},
		{Key: "broken", Name: "broken", Source: v1.Source{Type: "managed", Ref: "/srv/benchmarks/" + long}, Status: "failed",
			SyncError: "fetch tasks: git clone https://example.com/" + long + ": exit status 128"},
	}
	var out bytes.Buffer
	if err := writeBenchmarkList(&out, list); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if n := len([]rune(line)); n > 120 {
			t.Errorf("line of %d columns (> 120): %q", n, line)
		}
	}
	if !strings.Contains(out.String(), "broken: sync failed: fetch tasks: git clone https://example.com/very") || !strings.Contains(out.String(), "…") {
		t.Errorf("the failed sync's error is not shown, clipped:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "gauntlet benchmark info KEY prints a sync's whole error") {
		t.Errorf("no pointer to the whole error:\n%s", out.String())
	}
}
