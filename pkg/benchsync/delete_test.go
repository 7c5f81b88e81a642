package benchsync

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// createRun stores a run of the workspace's benchmark key pinned to version,
// with its active marker, in status.
func (e *env) createRun(t *testing.T, id, key, version string, status run.Status) {
	t.Helper()
	ops, err := records.CreateRunOp(run.Run{ID: id, Workspace: ws, Benchmark: key, ManifestWorkspace: ws,
		ManifestVersion: version, Status: status, CreatedAt: e.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.rec.Transact(context.Background(), ops); err != nil {
		t.Fatalf("create run %s: %v", id, err)
	}
}

func (e *env) endRun(t *testing.T, id string, status run.Status) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.rec.Runs.UpdateRun(ctx, id, func(r *run.Run) error {
		r.Status = status
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.rec.Runs.ClearActiveRun(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteKeepsPinnedVersions: Delete refuses while a run of the
// benchmark is in progress; afterwards it removes the benchmark, its sync
// state, sync source, leaderboard and unpinned versions, and keeps every
// version a run pinned readable.
func TestDeleteKeepsPinnedVersions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := newEnv(t, rollingRegistry(t, dir, "word-frequency"))
	first := e.addSynced(t, ws, "rolling")
	key := first.Key
	// Two refreshes with new upstream content: versions head, head+x, head+y.
	rollingRegistry(t, dir, "word-frequency", "csv-summary")
	e.clock.Advance(2 * time.Hour)
	e.refreshAll(t, time.Hour)
	second := e.benchmark(t, key)
	rollingRegistry(t, dir, "word-frequency", "csv-summary", "fix-median")
	e.clock.Advance(2 * time.Hour)
	e.refreshAll(t, time.Hour)
	third := e.benchmark(t, key)
	versions, err := e.rec.Benchmarks.ManifestVersions(ctx, ws, key)
	if err != nil || len(versions) != 3 || third.ReadyVersion == second.ReadyVersion {
		t.Fatalf("versions %v (%v), ready %s then %s; want three", versions, err, second.ReadyVersion, third.ReadyVersion)
	}
	if _, err := e.rec.Boards.SwapLeaderboardHead(ctx, records.LeaderboardHead{Workspace: ws, Benchmark: key, Generation: 1}); err != nil {
		t.Fatal(err)
	}

	e.createRun(t, "run-old", key, "head", run.Finished)
	e.endRun(t, "run-old", run.Finished)
	e.createRun(t, "run-live", key, third.ReadyVersion, run.Running)
	e.createRun(t, "run-stopping", key, third.ReadyVersion, run.Stopping)
	err = e.svc.Delete(ctx, ws, key)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"run-live", "run-stopping"`) {
		t.Fatalf("Delete with runs in progress = %v, want ErrConflict naming them", err)
	}
	if got := e.benchmark(t, key); got.Status != records.SyncReady {
		t.Errorf("benchmark after a refused delete: %+v", got)
	}

	e.endRun(t, "run-live", run.Finished)
	e.endRun(t, "run-stopping", run.Stopped)
	if err := e.svc.Delete(ctx, ws, key); err != nil {
		t.Fatalf("Delete once the runs ended: %v", err)
	}
	if _, err := e.rec.Benchmarks.Benchmark(ctx, ws, key); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("Benchmark after Delete: %v", err)
	}
	if _, err := e.rec.Benchmarks.RefreshState(ctx, ws, key); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("SyncState after Delete: %v", err)
	}
	var src syncSource
	if err := e.rec.Benchmarks.SyncSource(ctx, ws, key, &src); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("SyncSource after Delete: %v", err)
	}
	if _, err := e.rec.Boards.LeaderboardHead(ctx, ws, key); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("Leaderboard after Delete: %v", err)
	}
	kept, err := e.rec.Benchmarks.ManifestVersions(ctx, ws, key)
	if diff := cmp.Diff([]string{"head", third.ReadyVersion}, kept); diff != "" || err != nil {
		t.Errorf("versions kept (-want +got):\n%s%v", diff, err)
	}
	if _, _, err := e.rec.Benchmarks.Manifest(ctx, ws, key, second.ReadyVersion); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("unpinned version %s after Delete: %v", second.ReadyVersion, err)
	}
	for _, v := range []struct {
		version string
		tasks   int
	}{{"head", 1}, {third.ReadyVersion, 3}} {
		m, files, err := e.rec.Benchmarks.Manifest(ctx, ws, key, v.version)
		if err != nil || len(m.Tasks) != v.tasks || len(files) != v.tasks {
			t.Errorf("pinned version %s: %d tasks, %v; want %d", v.version, len(m.Tasks), err, v.tasks)
		}
		if _, err := e.rec.Benchmarks.Task(ctx, ws, key, v.version, "word-frequency"); err != nil {
			t.Errorf("task of pinned version %s: %v", v.version, err)
		}
	}
	if msgs, err := e.svc.Refresh(ctx, e.clock.Now().Add(time.Hour), 0); err != nil || len(msgs) != 0 {
		t.Errorf("Refresh after Delete = %v, %v; want nothing", msgs, err)
	}

	// Added again, it syncs to the stored head content under its new
	// content, and deleting it again keeps the pinned versions.
	e.addSynced(t, ws, "rolling")
	if got := e.benchmark(t, key); got.ReadyVersion != third.ReadyVersion {
		t.Errorf("re-added benchmark ready at %s, want the stored %s", got.ReadyVersion, third.ReadyVersion)
	}
	if err := e.svc.Delete(ctx, ws, key); err != nil {
		t.Fatal(err)
	}
	if kept, err := e.rec.Benchmarks.ManifestVersions(ctx, ws, key); len(kept) != 2 || err != nil {
		t.Errorf("versions after the second delete = %v, %v", kept, err)
	}
}
