package localimages_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/localimages"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
)

// TestPinnedImagesAreTheActiveRunsSelectedTasks: the images eviction must
// keep are those of the tasks each unfinished run selected, from its pinned
// manifest version (real SQLite records); a run that ended pins nothing.
func TestPinnedImagesAreTheActiveRunsSelectedTasks(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	recs := records.New(db.Table())
	env := func(p string) *benchmark.Environment {
		return &benchmark.Environment{Source: benchmark.ImageBuild, Pinned: p}
	}
	m := benchmark.Manifest{Key: "b", Name: "b", Version: "1", Tasks: []benchmark.Task{
		{Name: "t1", Environment: env("gauntlet.local/build@sha256:" + hex64("1"))},
		{Name: "t2", Environment: env("gauntlet.local/build@sha256:" + hex64("2"))},
		{Name: "t3", Environment: env("gauntlet.local/build@sha256:" + hex64("3"))},
	}}
	if err := recs.Benchmarks.PutManifest(ctx, "ws", m, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range []run.Run{
		{ID: "r1", Status: run.Running, Workspace: "ws", Benchmark: "b", ManifestWorkspace: "ws", ManifestVersion: "1", Tasks: []string{"t1", "t2"}},
		{ID: "r2", Status: run.Running, Workspace: "ws", Benchmark: "b", ManifestWorkspace: "ws", ManifestVersion: "1", Tasks: []string{"t3"}},
	} {
		ops, err := records.CreateRunOp(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Table().Transact(ctx, ops); err != nil {
			t.Fatal(err)
		}
	}
	if err := recs.Runs.ClearActiveRun(ctx, "r2"); err != nil { // r2 ended
		t.Fatal(err)
	}
	got, err := localimages.PinnedImages(recs.Runs, recs.Benchmarks)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"gauntlet.local/build@sha256:" + hex64("1"), "gauntlet.local/build@sha256:" + hex64("2")}
	if !slices.Equal(got, want) {
		t.Fatalf("PinnedImages = %v, want %v (r1's two tasks; r2 ended)", got, want)
	}
}

func hex64(c string) string {
	out := ""
	for range 64 {
		out += c
	}
	return out
}
