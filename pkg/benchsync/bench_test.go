package benchsync

import (
	"context"
	"fmt"
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
		if _, err := e.rec.Benchmarks.UpdateSync(ctx, ws, added.Key, func(st *records.SyncState) error {
			bm := &st.Benchmark
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

// BenchmarkSyncPulledImages measures a re-sync of 15 docker_image tasks,
// each naming its own tag in a loopback registry: the task work of
// BenchmarkSyncDemoBench plus one manifest HEAD per tag and the images
// phase's progress writes (one per task).
func BenchmarkSyncPulledImages(b *testing.B) {
	reg := newTestRegistry(b)
	var tasks []imageTask
	for i := range 15 {
		tag := fmt.Sprintf("app:%d", i)
		reg.push(b, "library/"+tag, "app.txt", tag)
		tasks = append(tasks, imageTask{name: fmt.Sprintf("task-%02d", i), environment: fmt.Sprintf("docker_image = %q\n", tag)})
	}
	e := newEnv(b, writeImageTasks(b, tasks))
	e.svc.envs = &Environments{Resolver: reg}
	ctx := context.Background()
	added, err := e.svc.Add(ctx, ws, "envs")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := e.rec.Benchmarks.UpdateSync(ctx, ws, added.Key, func(st *records.SyncState) error {
			bm := &st.Benchmark
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
