// Package recordstest is the contract suite of the records repositories on
// a table: what their read-modify-write needs of every store.Table adapter
// (one transaction over two items, conditions on items it does not write,
// versions that count writes), under concurrent writers. records' tests
// run it on SQLite and pkg/awsx/dynamo's on DynamoDB Local.
package recordstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Run runs the suite; newTable returns a table every test may share (each
// test writes under a workspace of its own).
func Run(t *testing.T, newTable func(t *testing.T) store.Table) {
	tests := []struct {
		name string
		fn   func(*testing.T, *records.Benchmarks, string)
	}{
		{"UpdateSyncOfAMissingBenchmark", testUpdateSyncMissing},
		{"UpdateSyncWritesWhatChanged", testUpdateSyncWritesWhatChanged},
		{"UpdateSyncConcurrentWriters", testUpdateSyncConcurrent},
		{"UpdateSyncRetriesWhenThePartItReadChanged", testUpdateSyncRetriesOnTheOtherPart},
		{"UpdateSyncWritesOnlyFromAConsistentView", testUpdateSyncConsistent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := fmt.Sprintf("rt-%s-%d", tt.name, time.Now().UnixNano())
			tt.fn(t, records.New(newTable(t)).Benchmarks, ws)
		})
	}
}

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func createBenchmark(t *testing.T, b *records.Benchmarks, ws, key string, status records.SyncStatus) records.Benchmark {
	t.Helper()
	created, err := b.CreateBenchmark(context.Background(), records.Benchmark{Workspace: ws, Key: key, Name: key,
		Source: benchmark.Source{Type: benchmark.Harbor, Ref: key + "@1"}, Status: status, CreatedAt: t0, UpdatedAt: t0})
	if err != nil {
		t.Fatalf("CreateBenchmark(%s/%s): %v", ws, key, err)
	}
	return created
}

func testUpdateSyncMissing(t *testing.T, b *records.Benchmarks, ws string) {
	called := false
	_, err := b.UpdateSync(context.Background(), ws, "missing", func(*records.SyncState) error { called = true; return nil })
	if !errors.Is(err, records.ErrNotFound) || called {
		t.Errorf("UpdateSync of a missing benchmark = %v (fn called: %v), want ErrNotFound without calling fn", err, called)
	}
}

// testUpdateSyncWritesWhatChanged: the first write of the refresh state
// creates it; each write reports the versions the table stored; a change
// of one part leaves the other's version alone; ErrNoChange and a closure
// that changes nothing write nothing; a closure's error is returned.
func testUpdateSyncWritesWhatChanged(t *testing.T, b *records.Benchmarks, ws string) {
	ctx := context.Background()
	createBenchmark(t, b, ws, "demo", records.SyncSyncing)
	before, err := b.UpdateSync(ctx, ws, "demo", func(st *records.SyncState) error {
		if st.Refresh.Version != 0 || st.Refresh.Workspace != ws || st.Refresh.Key != "demo" {
			return fmt.Errorf("refresh state before the first sync = %+v, want a new one of %s/demo", st.Refresh, ws)
		}
		st.Benchmark.Status, st.Benchmark.ReadyVersion, st.Refresh.LastSynced = records.SyncReady, "1", t0
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkStored(t, b, ws, "demo", before)
	if before.Benchmark.Version != 2 || before.Refresh.Version != 1 {
		t.Errorf("versions after the first sync = %d, %d; want 2 (created, then written), 1 (created)", before.Benchmark.Version, before.Refresh.Version)
	}

	refreshed, err := b.UpdateSync(ctx, ws, "demo", func(st *records.SyncState) error {
		st.Refresh.RefreshStarted = t0.Add(time.Hour)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkStored(t, b, ws, "demo", refreshed)
	if refreshed.Benchmark.Version != before.Benchmark.Version || refreshed.Refresh.Version != before.Refresh.Version+1 {
		t.Errorf("a refresh-only change wrote versions %d, %d; want %d, %d", refreshed.Benchmark.Version, refreshed.Refresh.Version,
			before.Benchmark.Version, before.Refresh.Version+1)
	}

	for name, fn := range map[string]func(*records.SyncState) error{
		"ErrNoChange":       func(st *records.SyncState) error { st.Benchmark.Name = "dropped"; return records.ErrNoChange },
		"no change":         func(*records.SyncState) error { return nil },
		"the same value":    func(st *records.SyncState) error { st.Benchmark.ReadyVersion = "1"; return nil },
		"a closure's error": func(st *records.SyncState) error { st.Benchmark.Name = "dropped"; return errBoom },
	} {
		_, err := b.UpdateSync(ctx, ws, "demo", fn)
		if name == "a closure's error" && !errors.Is(err, errBoom) {
			t.Errorf("UpdateSync with %s = %v, want it returned", name, err)
		} else if name != "a closure's error" && err != nil {
			t.Errorf("UpdateSync with %s: %v", name, err)
		}
		checkStored(t, b, ws, "demo", refreshed)
	}
}

var errBoom = errors.New("boom")

// checkStored fails unless the table holds want (versions included).
func checkStored(t *testing.T, b *records.Benchmarks, ws, key string, want records.SyncState) {
	t.Helper()
	ctx := context.Background()
	got, err := b.Benchmark(ctx, ws, key)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != want.Benchmark.Version || got.Name != want.Benchmark.Name || got.Status != want.Benchmark.Status || got.ReadyVersion != want.Benchmark.ReadyVersion {
		t.Errorf("stored benchmark = %+v, want %+v", got, want.Benchmark)
	}
	st, err := b.RefreshState(ctx, ws, key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != want.Refresh.Version || !st.LastSynced.Equal(want.Refresh.LastSynced) || !st.RefreshStarted.Equal(want.Refresh.RefreshStarted) {
		t.Errorf("stored refresh state = %+v, want %+v", st, want.Refresh)
	}
}

// writers is how many goroutines of each kind the concurrency tests run.
const writers = 5

// testUpdateSyncConcurrent: writers of the benchmark alone, of the refresh
// state alone and of both, started on a benchmark without a refresh state
// (so they race to create it), all land exactly once.
func testUpdateSyncConcurrent(t *testing.T, b *records.Benchmarks, ws string) {
	ctx := context.Background()
	createBenchmark(t, b, ws, "demo", records.SyncSyncing)
	kinds := []func(*records.SyncState){
		func(st *records.SyncState) { st.Benchmark.Synced++ },
		func(st *records.SyncState) { st.Refresh.RefreshTotal++ },
		func(st *records.SyncState) { st.Benchmark.Total++; st.Refresh.RefreshSynced++ },
	}
	var wg sync.WaitGroup
	for range writers {
		for _, change := range kinds {
			wg.Go(func() {
				if _, err := b.UpdateSync(ctx, ws, "demo", func(st *records.SyncState) error { change(st); return nil }); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	final, err := b.UpdateSync(ctx, ws, "demo", func(*records.SyncState) error { return records.ErrNoChange })
	if err != nil {
		t.Fatal(err)
	}
	bm, st := final.Benchmark, final.Refresh
	if bm.Synced != writers || bm.Total != writers || st.RefreshTotal != writers || st.RefreshSynced != writers {
		t.Errorf("after %d writers of each kind: benchmark synced %d total %d, refresh total %d synced %d; want %d each",
			writers, bm.Synced, bm.Total, st.RefreshTotal, st.RefreshSynced, writers)
	}
	checkStored(t, b, ws, "demo", final)
}

// testUpdateSyncRetriesOnTheOtherPart: a closure writes the benchmark
// alone from what it read of the refresh state; a competitor that changes
// the refresh state after that read (here from inside the closure, so the
// order is certain) makes the write fail its condition, and the closure
// runs again on what the competitor stored. Then the same for the other
// part, on a benchmark whose refresh state is not stored yet.
func testUpdateSyncRetriesOnTheOtherPart(t *testing.T, b *records.Benchmarks, ws string) {
	ctx := context.Background()
	for _, tt := range []struct {
		key   string
		write func(st *records.SyncState) // writes one part from the other
		race  func(st *records.SyncState) // the competitor's change of the other part
		want  func(st records.SyncState) bool
	}{
		{"benchmark-from-refresh",
			func(st *records.SyncState) { st.Benchmark.Total = st.Refresh.RefreshSynced + 100 },
			func(st *records.SyncState) { st.Refresh.RefreshSynced = 7 },
			func(st records.SyncState) bool { return st.Benchmark.Total == 107 && st.Refresh.RefreshSynced == 7 }},
		{"refresh-from-benchmark",
			func(st *records.SyncState) { st.Refresh.RefreshTotal = st.Benchmark.Synced + 100 },
			func(st *records.SyncState) { st.Benchmark.Synced = 7 },
			func(st records.SyncState) bool { return st.Refresh.RefreshTotal == 107 && st.Benchmark.Synced == 7 }},
	} {
		t.Run(tt.key, func(t *testing.T) {
			createBenchmark(t, b, ws, tt.key, records.SyncReady)
			calls := 0
			got, err := b.UpdateSync(ctx, ws, tt.key, func(st *records.SyncState) error {
				calls++
				if calls == 1 {
					if _, err := b.UpdateSync(ctx, ws, tt.key, func(o *records.SyncState) error { tt.race(o); return nil }); err != nil {
						return err
					}
				}
				tt.write(st)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls != 2 || !tt.want(got) {
				t.Errorf("UpdateSync after a competitor's write: %d calls, result %+v; want 2 calls and a write from the competitor's value", calls, got)
			}
			checkStored(t, b, ws, tt.key, got)
		})
	}
}

// testUpdateSyncConsistent: a closure that reads both parts but writes one
// lands only if what it read of the other is still stored. Pair writers
// keep the benchmark's Synced equal to the refresh state's RefreshSynced,
// one transaction at a time; readers write the benchmark alone, counting
// in Total the views where the two agree and in TaskCount those where they
// do not (a view torn by a pair write between its two reads), so no torn
// view's write may land.
func testUpdateSyncConsistent(t *testing.T, b *records.Benchmarks, ws string) {
	ctx := context.Background()
	createBenchmark(t, b, ws, "demo", records.SyncReady)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			if _, err := b.UpdateSync(ctx, ws, "demo", func(st *records.SyncState) error {
				st.Benchmark.Synced++
				st.Refresh.RefreshSynced++
				return nil
			}); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if _, err := b.UpdateSync(ctx, ws, "demo", func(st *records.SyncState) error {
				if st.Benchmark.Synced == st.Refresh.RefreshSynced {
					st.Benchmark.Total++
				} else {
					st.Benchmark.TaskCount++
				}
				return nil
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	bm, err := b.Benchmark(ctx, ws, "demo")
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.RefreshState(ctx, ws, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if bm.TaskCount != 0 || bm.Total != writers || bm.Synced != writers || st.RefreshSynced != writers {
		t.Errorf("benchmark synced %d, total %d, torn views written %d; refresh synced %d; want %d, %d, 0, %d",
			bm.Synced, bm.Total, bm.TaskCount, st.RefreshSynced, writers, writers, writers)
	}
}
