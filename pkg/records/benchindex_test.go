package records_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

func putReadyBenchmark(t *testing.T, s *records.Store, ws, key string) {
	t.Helper()
	if _, err := s.CreateBenchmark(context.Background(), records.Benchmark{Workspace: ws, Key: key, Name: key,
		Source: benchmark.Source{Type: benchmark.Harbor, Ref: key + "@1"}, Status: records.SyncReady, CreatedAt: t0, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
}

// markSynced records a sync of ws/key at when.
func markSynced(t *testing.T, s *records.Store, ws, key string, when time.Time) {
	t.Helper()
	if _, _, err := s.UpdateBenchmarkSynced(context.Background(), ws, key, func(b *records.Benchmark, st *records.SyncState) error {
		b.ReadyVersion, st.LastSynced = "1", when
		return nil
	}); err != nil {
		t.Fatalf("UpdateBenchmarkSynced(%s/%s): %v", ws, key, err)
	}
}

func TestSyncedBeforeReadsTheIndexAcrossWorkspaces(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	for _, b := range []struct {
		ws, key string
		synced  time.Duration // after t0
	}{
		{"ws2", "b", 0}, {"ws1", "a", 0}, {"ws1", "c", 30 * time.Minute}, {"ws3", "d", time.Hour}, {"ws1", "late", 2 * time.Hour},
	} {
		putReadyBenchmark(t, s, b.ws, b.key)
		markSynced(t, s, b.ws, b.key, t0.Add(b.synced))
	}
	putReadyBenchmark(t, s, "ws1", "never-synced")

	tests := []struct {
		name   string
		cutoff time.Time
		want   []string
	}{
		{"before everything", t0, nil},
		{"strictly older than the cutoff", t0.Add(time.Hour), []string{"ws1/a", "ws2/b", "ws1/c"}},
		{"all", t0.Add(3 * time.Hour), []string{"ws1/a", "ws2/b", "ws1/c", "ws3/d", "ws1/late"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, err := s.SyncedBefore(ctx, tt.cutoff)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, st := range due {
				got = append(got, st.Workspace+"/"+st.Key)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SyncedBefore(%s) (-want +got):\n%s", tt.cutoff, diff)
			}
		})
	}
	// Moving the last sync moves the benchmark in the index; deleting the
	// state takes it out.
	markSynced(t, s, "ws1", "a", t0.Add(4*time.Hour))
	if err := s.DeleteSyncState(ctx, "ws2", "b"); err != nil {
		t.Fatal(err)
	}
	due, err := s.SyncedBefore(ctx, t0.Add(time.Hour))
	if err != nil || len(due) != 1 || due[0].Key != "c" {
		t.Errorf("SyncedBefore after moves = %+v, %v; want ws1/c only", due, err)
	}
}

func TestUpdateBenchmarkSynced(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	if _, _, err := s.UpdateBenchmarkSynced(ctx, "ws1", "missing", func(*records.Benchmark, *records.SyncState) error { return nil }); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("UpdateBenchmarkSynced of a missing benchmark = %v, want ErrNotFound", err)
	}
	putReadyBenchmark(t, s, "ws1", "demo")
	b, st, err := s.UpdateBenchmarkSynced(ctx, "ws1", "demo", func(b *records.Benchmark, st *records.SyncState) error {
		b.ReadyVersion, st.LastSynced, st.RefreshError = "2", t0, "boom"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := records.SyncState{Workspace: "ws1", Key: "demo", LastSynced: t0, RefreshError: "boom", Version: 1}
	if diff := cmp.Diff(want, st); diff != "" || b.ReadyVersion != "2" || b.Version != 2 {
		t.Errorf("UpdateBenchmarkSynced = %+v, %+v (-want +got state):\n%s", b, st, diff)
	}
	// ErrNoChange writes nothing.
	if _, got, err := s.UpdateBenchmarkSynced(ctx, "ws1", "demo", func(*records.Benchmark, *records.SyncState) error { return records.ErrNoChange }); err != nil || got.Version != 1 {
		t.Errorf("ErrNoChange: state %+v, %v", got, err)
	}
	// Concurrent writers of the pair and of the state alone all land.
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, _, err := s.UpdateBenchmarkSynced(ctx, "ws1", "demo", func(b *records.Benchmark, st *records.SyncState) error {
				b.Synced++
				st.RefreshSynced++
				return nil
			}); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := s.UpdateSyncState(ctx, "ws1", "demo", func(st *records.SyncState) error {
				st.RefreshTotal++
				return nil
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	b, err = s.Benchmark(ctx, "ws1", "demo")
	if err != nil {
		t.Fatal(err)
	}
	st, err = s.SyncState(ctx, "ws1", "demo")
	if err != nil || b.Synced != 10 || st.RefreshSynced != 10 || st.RefreshTotal != 10 {
		t.Errorf("after concurrent updates: benchmark synced %d, state %+v (%v); want 10, 10, 10", b.Synced, st, err)
	}
}
