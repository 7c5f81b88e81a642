package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
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

// TestBenchmarkListImageStates: a benchmark whose images are being
// prepared is listed with "preparing images k / n" and every task's state,
// in full (wrapped at 120 columns, no name clipped).
func TestBenchmarkListImageStates(t *testing.T) {
	var tasks []v1.TaskImage
	var names []string
	for i := range 40 {
		name := fmt.Sprintf("a-rather-long-task-name-%02d", i)
		state := "ready"
		if i%3 == 0 {
			state = "preparing"
		}
		tasks = append(tasks, v1.TaskImage{Name: name, State: state})
		names = append(names, name)
	}
	tasks = append(tasks, v1.TaskImage{Name: "broken-build", State: "unavailable", Reason: "build failed"})
	list := []v1.BenchmarkView{{Key: "tb2", Name: "tb2", Source: v1.Source{Type: "harbor", Ref: "terminal-bench@2.0"}, Status: "syncing",
		Progress: v1.SyncProgress{Phase: "images", Synced: 27, Total: 41},
		Images:   &v1.ImageProgress{Version: "2.0", Ready: 26, Preparing: 14, Unavailable: 1, Total: 41, Label: "preparing images 27 / 41", Tasks: tasks}}}
	var out bytes.Buffer
	if err := writeBenchmarkList(&out, list); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if n := len([]rune(line)); n > 120 {
			t.Errorf("line of %d columns (> 120): %q", n, line)
		}
	}
	for _, want := range append(names, "tb2: preparing images 27 / 41 (version 2.0)", "  ready: ", "  preparing: ", "  unavailable: broken-build") {
		if !strings.Contains(text, want) {
			t.Errorf("the list lacks %q:\n%s", want, text)
		}
	}
}
