package benchsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// maxListedRuns bounds how many run ids a delete conflict names.
const maxListedRuns = 5

// Delete is Service.Delete.
func (s *remover) Delete(ctx context.Context, ws, key string) error {
	b, err := s.benchmarks.Benchmark(ctx, ws, key)
	if err != nil {
		return err
	}
	if b.Source.Type == benchmark.Managed {
		return fmt.Errorf("%w: benchmark %s is managed by the platform catalog and cannot be removed", ErrConflict, key)
	}
	runs, err := s.runsOf(ctx, ws, key)
	if err != nil {
		return err
	}
	if active := activeRunIDs(runs); len(active) > 0 {
		return fmt.Errorf("%w: benchmark %s has %d run(s) in progress (%s); stop them or wait for them to finish, then remove it",
			ErrConflict, key, len(active), benchmark.QuoteList(active, maxListedRuns))
	}
	if err := s.benchmarks.DeleteBenchmark(ctx, ws, key); err != nil {
		return err
	}
	// A sync or refresh of it in this process stops now: its builds are
	// killed (the builder kills their process group) and Delete waits for
	// it to return, so no version it was storing appears after the
	// unpinned ones are deleted below. Elsewhere (another process, a cloud
	// function) a sync stops at its next progress write, which finds the
	// record gone.
	if n := s.inflight.cancel(ctx, ws, key, errRemoved); n > 0 {
		s.log.InfoContext(ctx, "in-flight sync of a removed benchmark cancelled", "workspace", ws, "key", key, "syncs", n)
	}
	if err := s.benchmarks.DeleteRefreshState(ctx, ws, key); err != nil {
		return err
	}
	if err := s.benchmarks.DeleteSyncSource(ctx, ws, key); err != nil {
		return err
	}
	if err := s.boards.DeleteLeaderboard(ctx, ws, key); err != nil {
		return err
	}
	kept, err := s.deleteUnpinnedVersions(ctx, ws, key)
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "benchmark deleted", "workspace", ws, "key", key, "runs", len(runs), "kept_versions", kept)
	return nil
}

// deleteUnpinnedVersions deletes every stored manifest version of the
// benchmark that no run pins and returns the versions it kept. It reads
// the runs again after the benchmark record is gone, so a run submitted
// while Delete ran keeps its version too.
func (s *remover) deleteUnpinnedVersions(ctx context.Context, ws, key string) ([]string, error) {
	runs, err := s.runsOf(ctx, ws, key)
	if err != nil {
		return nil, err
	}
	pinned := map[string]bool{}
	for _, r := range runs {
		pinned[r.ManifestVersion] = true
	}
	versions, err := s.benchmarks.ManifestVersions(ctx, ws, key)
	if err != nil {
		return nil, err
	}
	var kept []string
	for _, v := range versions {
		if pinned[v] {
			kept = append(kept, v)
			continue
		}
		if err := s.benchmarks.DeleteManifest(ctx, ws, key, v); err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// runsOf returns the runs whose pinned manifest is one of the workspace's
// benchmark key: those of the benchmark's run index, plus any active run
// the index does not show yet.
func (s *remover) runsOf(ctx context.Context, ws, key string) ([]run.Run, error) {
	indexed, err := s.runs.RunsByBenchmark(ctx, ws, key)
	if err != nil {
		return nil, fmt.Errorf("runs of benchmark %s: %w", key, err)
	}
	seen := map[string]bool{}
	var runs []run.Run
	for _, r := range indexed {
		if pinsManifestOf(r, ws, key) {
			runs = append(runs, r)
			seen[r.ID] = true
		}
	}
	active, err := s.runs.ActiveRuns(ctx)
	if err != nil {
		return nil, fmt.Errorf("runs of benchmark %s: %w", key, err)
	}
	for _, id := range active {
		if seen[id] {
			continue
		}
		r, err := s.runs.Run(ctx, id)
		if errors.Is(err, records.ErrNotFound) {
			continue // marker of a run being created or already cleaned up
		}
		if err != nil {
			return nil, fmt.Errorf("runs of benchmark %s: %w", key, err)
		}
		if pinsManifestOf(r, ws, key) {
			runs = append(runs, r)
		}
	}
	return runs, nil
}

// pinsManifestOf reports whether the run pinned a manifest of the
// workspace's benchmark key.
func pinsManifestOf(r run.Run, ws, key string) bool {
	mws := r.ManifestWorkspace
	if mws == "" {
		mws = r.Workspace
	}
	return mws == ws && r.Benchmark == key
}

// activeRunIDs returns the ids of the runs that are not terminal, sorted.
func activeRunIDs(runs []run.Run) []string {
	var ids []string
	for _, r := range runs {
		if !r.Status.Terminal() {
			ids = append(ids, r.ID)
		}
	}
	slices.SortFunc(ids, strings.Compare)
	return ids
}
