package pipeline_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// interval is one agent's run, in Unix nanoseconds.
type interval struct{ start, end int64 }

// readIntervals reads the start/end files the gate test's agents write.
func readIntervals(t *testing.T, dir string) []interval {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []interval
	for _, ent := range entries {
		read := func(name string) int64 {
			b, err := os.ReadFile(filepath.Join(dir, ent.Name(), name))
			if err != nil {
				t.Fatalf("agent %s: %v", ent.Name(), err)
			}
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				t.Fatalf("agent %s %s: %v", ent.Name(), name, err)
			}
			return n
		}
		out = append(out, interval{read("start"), read("end")})
	}
	return out
}

// peakOverlap is the largest number of intervals open at one instant.
func peakOverlap(ivs []interval) int {
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, iv := range ivs {
		edges = append(edges, edge{iv.start, 1}, edge{iv.end, -1})
	}
	// Ends sort before starts at the same instant: touching is not overlapping.
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.delta - b.delta
	})
	peak, open := 0, 0
	for _, e := range edges {
		open += e.delta
		peak = max(peak, open)
	}
	return peak
}

func TestConcurrencyGates(t *testing.T) {
	const perRun, global = 3, 4
	e := newEnv(t, envOptions{isolation: sandbox.IsolationProcess, opts: pipeline.Options{MaxSandboxes: global}})
	e.workers = 4
	tasks := t.TempDir()
	for i := range 4 {
		writeTask(t, tasks, fmt.Sprintf("task-%d", i), 60)
	}
	e.importTasks("gate-bench", tasks)

	var runs []run.Run
	var marks []string
	for range 2 {
		dir := t.TempDir()
		marks = append(marks, dir)
		runs = append(runs, e.submit(fmt.Sprintf(`
[experiment]
benchmark = "gate-bench"
[execution]
attempts_per_task = 3
max_concurrent_attempts = %d
[[agents]]
harness = "command"
command = '''d=$(mktemp -d %s/agent.XXXXXX); date +%%s%%N > "$d/start"; sleep 1; date +%%s%%N > "$d/end"; touch "$GAUNTLET_APP_DIR/done"'''
`, perRun, dir)))
	}

	// Sample the driver's live sandboxes while the runs go.
	var mu sync.Mutex
	sampledPerRun, sampledTotal := 0, 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			total := 0
			for _, r := range runs {
				live, err := e.driver.List(e.ctx, r.ID)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				sampledPerRun = max(sampledPerRun, len(live))
				mu.Unlock()
				total += len(live)
			}
			mu.Lock()
			sampledTotal = max(sampledTotal, total)
			mu.Unlock()
		}
	})
	for _, r := range runs {
		if got := e.pumpUntil(r.ID, 3*time.Minute); got.Status != run.Finished {
			t.Errorf("run %s ended %s (%s), want finished", r.ID, got.Status, got.Reason)
		}
	}
	close(stop)
	wg.Wait()

	var all []interval
	for i, dir := range marks {
		ivs := readIntervals(t, dir)
		if len(ivs) != runs[i].TotalSlots() {
			t.Errorf("run %d: %d agents ran, want %d", i, len(ivs), runs[i].TotalSlots())
		}
		if peak := peakOverlap(ivs); peak > perRun {
			t.Errorf("run %d: %d agents ran at once, want at most max_concurrent_attempts = %d", i, peak, perRun)
		}
		all = append(all, ivs...)
	}
	peak := peakOverlap(all)
	if peak > global {
		t.Errorf("%d agents ran at once across runs, want at most MaxSandboxes = %d", peak, global)
	}
	if peak < 2 {
		t.Errorf("at most %d agent ran at a time; the gates were never exercised", peak)
	}
	if sampledPerRun > perRun || sampledTotal > global {
		t.Errorf("the driver listed up to %d sandboxes of one run and %d in all, want ≤ %d and ≤ %d", sampledPerRun, sampledTotal, perRun, global)
	}
	t.Logf("peak agents at once: %d overall; driver samples: %d per run, %d overall", peak, sampledPerRun, sampledTotal)
	for _, r := range runs {
		if gate, err := e.recs.Runs.RunGate(e.ctx, r.ID); err != nil || gate != 0 {
			t.Errorf("run %s gate counter = %d (%v) after the run, want 0", r.ID, gate, err)
		}
	}
	if g, err := e.recs.Runs.GlobalGate(e.ctx); err != nil || g != 0 {
		t.Errorf("global gate counter = %d (%v) after the runs, want 0", g, err)
	}
}
