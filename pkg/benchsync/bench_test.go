package benchsync

import (
	"context"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// BenchmarkSyncDemoBench measures a full sync of the 15-task example
// (fetch, load, digest, bundle, manifest) on SQLite and files; bundles
// already stored are skipped after the first iteration, as on a re-sync.
func BenchmarkSyncDemoBench(b *testing.B) {
	e := newEnv(b, exampleRegistry)
	ctx := context.Background()
	added, err := e.svc.Add(ctx, ws, "demo-bench")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := e.rec.UpdateBenchmark(ctx, ws, added.Key, func(bm *records.Benchmark) error {
			bm.Status = records.SyncPending
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if err := e.svc.Sync(ctx, NewSyncMessage(ws, added.Key)); err != nil {
			b.Fatal(err)
		}
	}
}
