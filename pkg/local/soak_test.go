package local_test

import (
	"bytes"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// soakSlots is how many attempts the soak runs; make test runs a few
// dozen, `-soak=10000` the full soak.
var soakSlots = flag.Int("soak", 120, "attempts the soak test runs (rounded up to whole attempts of every task)")

// soakConfig is the oracle and nop on demo-bench's smoke set (3 tasks), with
// one retry so a killed sandbox's infrastructure error is run again.
func soakConfig(attempts int) string {
	return fmt.Sprintf(`
[experiment]
benchmark = "demo-bench"
[tasks]
task_set = "smoke"
[execution]
attempts_per_task = %d
max_concurrent_attempts = 4
max_retries = 1
[[agents]]
harness = "oracle"
[[agents]]
harness = "nop"
`, attempts)
}

// faults injects the soak's faults on a ticker until stopped: every few
// ticks it SIGKILLs one running sandbox-runner (a child of this process),
// makes every message a handler holds visible again (a duplicate delivery
// while the first handler still works), and holds the database's write
// lock for a tick from a competing connection.
type faults struct {
	killed, redelivered, locks atomic.Int64
	killedPIDs                 sync.Map
}

func (f *faults) run(ctx context.Context, t *testing.T, dbPath string) {
	db, err := sql.Open("sqlite", dbPath+"?_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		t.Error(err)
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tick := time.NewTicker(150 * time.Millisecond)
	defer tick.Stop()
	var held *sql.Tx
	defer func() {
		if held != nil {
			_ = held.Rollback()
		}
	}()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if held != nil {
			_ = held.Commit()
			held = nil
		}
		switch n % 4 {
		case 0:
			if pid := f.runningRunner(); pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
				f.killedPIDs.Store(pid, true)
				f.killed.Add(1)
			}
		case 1:
			res, err := db.ExecContext(ctx, `UPDATE messages SET visible_at = 0 WHERE receipt IS NOT NULL`)
			if err == nil {
				if k, _ := res.RowsAffected(); k > 0 {
					f.redelivered.Add(k)
				}
			}
		case 2:
			// Hold the write lock (BEGIN IMMEDIATE) until the next tick.
			tx, err := db.BeginTx(ctx, nil)
			if err == nil {
				if _, err := tx.ExecContext(ctx, `UPDATE messages SET visible_at = visible_at WHERE seq = -1`); err != nil {
					_ = tx.Rollback()
				} else {
					held = tx
					f.locks.Add(1)
				}
			}
		}
	}
}

// runningRunner returns the pid of a sandbox-runner child of this process
// not killed before, or 0.
func (f *faults) runningRunner() int {
	ents, _ := os.ReadDir("/proc")
	me := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, done := f.killedPIDs.Load(pid); done {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil || !bytes.Contains(status, []byte("\nPPid:\t"+me+"\n")) {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(cmd), runnerBin+"\x00") {
			return pid
		}
	}
	return 0
}

// TestSoak runs many attempts through the real local platform (SQLite store
// and queue, real sandboxes) while sandboxes are killed, messages delivered
// twice and the database locked by a competing writer, and checks that
// nothing was lost or duplicated: every slot exactly one final result and
// the run's tally equal to the results.
func TestSoak(t *testing.T) {
	// A run has at most 100 attempts of each of the smoke set's 3 tasks
	// for each of its 2 agents: more slots are more runs, run at once.
	const perAttempt, maxAttempts = 6, 100
	attempts := (max(*soakSlots, perAttempt) + perAttempt - 1) / perAttempt
	dir := t.TempDir()
	var runs []run.Run
	for left := attempts; left > 0; left -= maxAttempts {
		runs = append(runs, submit(t, dir, soakConfig(min(left, maxAttempts))))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := testOptions(dir, runnerBin)
	// A write that meets the competing connection's lock early in its
	// 150 ms hold fails with SQLITE_BUSY, so handlers see the error itself,
	// not only a slow write.
	opts.BusyTimeout = 100 * time.Millisecond
	busy := &busyCounter{Handler: opts.Logger.Handler(), n: new(atomic.Int64)}
	opts.Logger = slog.New(busy)
	p, err := local.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var f faults
	injected := make(chan struct{})
	go func() {
		defer close(injected)
		f.run(ctx, t, filepath.Join(dir, "gauntlet.db"))
	}()
	recs := p.Records()
	waitFor(t, time.Duration(attempts)*20*time.Second+time.Minute, "the soak runs to end", func() bool {
		for _, r := range runs {
			got, err := recs.Runs.Run(ctx, r.ID)
			if err != nil || !got.Status.Terminal() {
				return false
			}
		}
		return true
	})
	took := time.Since(start)
	cancel()
	<-injected

	var slots, lost, dup int
	var all run.Tally
	for _, r := range runs {
		got, err := recs.Runs.Run(context.Background(), r.ID)
		if err != nil || got.Status != run.Finished {
			t.Fatalf("run %s ended %s (%s), want finished", r.ID, got.Status, got.Reason)
		}
		results, err := recs.Runs.AllResults(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		finals := map[string]int{}
		var want run.Tally
		for _, res := range results {
			if !res.Final() {
				want.Retries++
				continue
			}
			finals[res.SlotID]++
			want.Done++
			switch res.Outcome {
			case run.Passed:
				want.Passed++
			case run.FailedOut:
				want.Failed++
			case run.Errored:
				want.Errored++
			}
		}
		slots += r.TotalSlots()
		if len(finals) != r.TotalSlots() {
			lost += r.TotalSlots() - len(finals)
			t.Errorf("run %s: %d slots have a final result, want %d", r.ID, len(finals), r.TotalSlots())
		}
		for slot, n := range finals {
			if n != 1 {
				dup++
				t.Errorf("run %s: slot %s has %d final results, want exactly 1", r.ID, slot, n)
			}
		}
		tally, err := recs.Runs.RunTally(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tally.Done != want.Done || tally.Passed != want.Passed || tally.Failed != want.Failed || tally.Errored != want.Errored {
			t.Errorf("run %s: tally done/passed/failed/errored = %d/%d/%d/%d, the results say %d/%d/%d/%d", r.ID,
				tally.Done, tally.Passed, tally.Failed, tally.Errored, want.Done, want.Passed, want.Failed, want.Errored)
		}
		all.Done, all.Passed, all.Failed, all.Errored, all.Retries = all.Done+want.Done, all.Passed+want.Passed,
			all.Failed+want.Failed, all.Errored+want.Errored, all.Retries+want.Retries
	}
	// Only a killed sandbox may cost a slot its outcome (killed twice:
	// errored after its one retry).
	if all.Errored > f.killed.Load() {
		t.Errorf("%d slots errored with only %d sandboxes killed", all.Errored, f.killed.Load())
	}
	if f.locks.Load() >= 10 && busy.n.Load() == 0 {
		t.Errorf("%d write-lock holds and no operation failed with SQLITE_BUSY: the busy fault was not exercised", f.locks.Load())
	}
	t.Logf("soak: %d slots (%d runs) in %.1f s; %d sandboxes killed, %d in-flight messages delivered again, %d write-lock holds (%d operations failed SQLITE_BUSY); %d finals (%d passed, %d failed, %d errored), %d retries; lost %d, duplicated %d",
		slots, len(runs), took.Seconds(), f.killed.Load(), f.redelivered.Load(), f.locks.Load(), busy.n.Load(),
		all.Done, all.Passed, all.Failed, all.Errored, all.Retries, lost, dup)
}

// busyCounter passes log records on and counts those that report a
// database operation failed because the database was locked.
type busyCounter struct {
	slog.Handler
	n *atomic.Int64
}

func (b *busyCounter) Handle(ctx context.Context, r slog.Record) error {
	locked := strings.Contains(r.Message, "SQLITE_BUSY")
	r.Attrs(func(a slog.Attr) bool {
		if v := a.Value.String(); strings.Contains(v, "SQLITE_BUSY") || strings.Contains(v, "database is locked") {
			locked = true
			return false
		}
		return true
	})
	if locked {
		b.n.Add(1)
	}
	return b.Handler.Handle(ctx, r)
}

func (b *busyCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return &busyCounter{Handler: b.Handler.WithAttrs(as), n: b.n}
}

func (b *busyCounter) WithGroup(name string) slog.Handler {
	return &busyCounter{Handler: b.Handler.WithGroup(name), n: b.n}
}
