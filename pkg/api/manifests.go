package api

import (
	"context"
	"fmt"
	"sync"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
)

// manifestInfo is a loaded manifest version and what the API derives from
// it. Manifest versions are immutable, so they are cached.
type manifestInfo struct {
	m benchmark.Manifest
	// categoryCount is the number of distinct categories.
	categoryCount int
}

// manifestCache holds the manifest versions the API loaded: versions are
// immutable, so one never goes stale.
type manifestCache struct {
	recs BenchmarkReader

	mu sync.Mutex
	m  map[string]*manifestInfo // by ws/key/version
}

func newManifestCache(recs BenchmarkReader) *manifestCache {
	return &manifestCache{recs: recs, m: map[string]*manifestInfo{}}
}

// maxCachedManifests bounds the manifest cache; a full cache is emptied.
const maxCachedManifests = 64

// get returns the manifest version ws/key@version, from the cache when
// it was loaded before.
func (c *manifestCache) get(ctx context.Context, ws, key, version string) (*manifestInfo, error) {
	id := ws + "\x00" + key + "\x00" + version
	c.mu.Lock()
	info, ok := c.m[id]
	c.mu.Unlock()
	if ok {
		return info, nil
	}
	m, _, err := c.recs.Manifest(ctx, ws, key, version)
	if err != nil {
		return nil, fmt.Errorf("load manifest %s@%s: %w", key, version, err)
	}
	info = &manifestInfo{m: m, categoryCount: len(m.Categories())}
	c.mu.Lock()
	if len(c.m) >= maxCachedManifests {
		clear(c.m)
	}
	c.m[id] = info
	c.mu.Unlock()
	return info, nil
}
