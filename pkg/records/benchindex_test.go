package records_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/records/recordstest"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

func putReadyBenchmark(t *testing.T, s *records.Store, ws, key string) {
	t.Helper()
	if _, err := s.Benchmarks.CreateBenchmark(context.Background(), records.Benchmark{Workspace: ws, Key: key, Name: key,
		Source: benchmark.Source{Type: benchmark.Harbor, Ref: key + "@1"}, Status: records.SyncReady, CreatedAt: t0, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
}

// markSynced records a sync of ws/key at when.
func markSynced(t *testing.T, s *records.Store, ws, key string, when time.Time) {
	t.Helper()
	if _, err := s.Benchmarks.UpdateSync(context.Background(), ws, key, func(st *records.SyncState) error {
		st.Benchmark.ReadyVersion, st.Refresh.LastSynced = "1", when
		return nil
	}); err != nil {
		t.Fatalf("UpdateSync(%s/%s): %v", ws, key, err)
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
			due, err := s.Benchmarks.SyncedBefore(ctx, tt.cutoff)
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
	if err := s.Benchmarks.DeleteRefreshState(ctx, "ws2", "b"); err != nil {
		t.Fatal(err)
	}
	due, err := s.Benchmarks.SyncedBefore(ctx, t0.Add(time.Hour))
	if err != nil || len(due) != 1 || due[0].Key != "c" {
		t.Errorf("SyncedBefore after moves = %+v, %v; want ws1/c only", due, err)
	}
}

// TestRecordsContract runs the repositories' contract suite on SQLite
// (pkg/awsx/dynamo runs it on DynamoDB Local).
func TestRecordsContract(t *testing.T) {
	recordstest.Run(t, func(t *testing.T) store.Table { return openDB(t).Table() })
}
