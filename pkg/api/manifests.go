package api

import (
	"context"
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
)

// manifestInfo is a loaded manifest version and what the API derives from
// it. Manifest versions are immutable, so they are cached.
type manifestInfo struct {
	m benchmark.Manifest
	// categoryCount is the number of distinct categories.
	categoryCount int
}

// maxCachedManifests bounds the manifest cache; a full cache is emptied.
const maxCachedManifests = 64

// manifest returns the manifest version ws/key@version, from the cache when
// it was loaded before.
func (h *Handler) manifest(ctx context.Context, ws, key, version string) (*manifestInfo, error) {
	id := ws + "\x00" + key + "\x00" + version
	h.manifestMu.Lock()
	info, ok := h.manifests[id]
	h.manifestMu.Unlock()
	if ok {
		return info, nil
	}
	m, _, err := h.cfg.Records.Manifest(ctx, ws, key, version)
	if err != nil {
		return nil, fmt.Errorf("load manifest %s@%s: %w", key, version, err)
	}
	info = &manifestInfo{m: m, categoryCount: len(m.Categories())}
	h.manifestMu.Lock()
	if len(h.manifests) >= maxCachedManifests {
		clear(h.manifests)
	}
	h.manifests[id] = info
	h.manifestMu.Unlock()
	return info, nil
}
