package records

import (
	"context"
	"fmt"
	"math"

	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Items of the registry sync (added to the key scheme above):
//
//	WS#<ws>                     | SYNCSRC#<key>            where a benchmark syncs from (registry location, spec, catalog policy)

func syncSourceSK(key string) string { return "SYNCSRC#" + key }

// PutSyncSource stores where the workspace's benchmark key syncs its task
// list from (any JSON value; the sync service owns its shape), replacing
// what was there.
func (s *Benchmarks) PutSyncSource(ctx context.Context, ws, key string, src any) error {
	return s.putJSON(ctx, wsPK(ws), syncSourceSK(key), src)
}

// SyncSource decodes the benchmark's sync source into out; ErrNotFound when
// none is stored.
func (s *Benchmarks) SyncSource(ctx context.Context, ws, key string, out any) error {
	return s.getJSON(ctx, wsPK(ws), syncSourceSK(key), out)
}

// DeleteSyncSource removes the benchmark's sync source; a missing one is not
// an error.
func (s *Benchmarks) DeleteSyncSource(ctx context.Context, ws, key string) error {
	if err := s.tbl.Delete(ctx, wsPK(ws), syncSourceSK(key), store.Cond{}); err != nil {
		return fmt.Errorf("delete sync source of %s: %w", key, err)
	}
	return nil
}

// ManifestVersions returns the versions of the benchmark's stored
// manifests, in sort-key order.
func (s *Benchmarks) ManifestVersions(ctx context.Context, ws, key string) ([]string, error) {
	q := store.Query{PK: benchPK(ws, key), Prefix: "VER#"}
	var versions []string
	for {
		page, err := s.tbl.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("query manifest versions of %s: %w", key, err)
		}
		for _, it := range page.Items {
			versions = append(versions, it.SK[len("VER#"):])
		}
		if page.Cursor == "" {
			return versions, nil
		}
		q.Cursor = page.Cursor
	}
}

// DeleteManifest removes one manifest version: its header first (so no
// reader finds a partial version), then its tasks. Deleting a missing
// version is not an error.
func (s *Benchmarks) DeleteManifest(ctx context.Context, ws, key, version string) error {
	if err := s.tbl.Delete(ctx, benchPK(ws, key), "VER#"+version, store.Cond{}); err != nil {
		return fmt.Errorf("delete manifest %s@%s: %w", key, version, err)
	}
	q := store.Query{PK: tasksPK(ws, key, version), Prefix: "TASK#"}
	for {
		page, err := s.tbl.Query(ctx, q)
		if err != nil {
			return fmt.Errorf("query tasks of %s@%s: %w", key, version, err)
		}
		for _, it := range page.Items {
			if err := s.tbl.Delete(ctx, it.PK, it.SK, store.Cond{}); err != nil {
				return fmt.Errorf("delete task %s of %s@%s: %w", it.SK, key, version, err)
			}
		}
		if page.Cursor == "" {
			return nil
		}
		q.Cursor = page.Cursor
	}
}

// DeleteLeaderboard removes the benchmark's leaderboard item; a missing one
// is not an error.
func (s *Boards) DeleteLeaderboard(ctx context.Context, ws, key string) error {
	if err := s.tbl.Delete(ctx, benchPK(ws, key), boardSK, store.Cond{}); err != nil {
		return fmt.Errorf("delete leaderboard of %s: %w", key, err)
	}
	// The head is gone, so no reader reaches a part; remove every generation.
	if err := s.DeleteLeaderboardParts(ctx, ws, key, math.MaxInt64); err != nil {
		return fmt.Errorf("delete leaderboard of %s: %w", key, err)
	}
	return nil
}

// ManifestDigest returns the digest of a stored manifest version, reading
// only its header; ErrNotFound when the version is not stored.
func (s *Benchmarks) ManifestDigest(ctx context.Context, ws, key, version string) (string, error) {
	var h manifestHeader
	if err := s.getJSON(ctx, benchPK(ws, key), "VER#"+version, &h); err != nil {
		return "", fmt.Errorf("manifest %s@%s: %w", key, version, err)
	}
	return h.Digest, nil
}
