package benchsync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// managedPolicy is what the catalog says about a managed benchmark beyond
// its source; it is carried into every manifest the benchmark syncs.
type managedPolicy struct {
	Name               string                       `json:"name"`
	Description        string                       `json:"description,omitempty"`
	SourceURL          string                       `json:"source_url,omitempty"`
	HarnessRequirement benchmark.HarnessRequirement `json:"harness_requirement"`
	DefaultHarness     string                       `json:"default_harness,omitempty"`
	Judge              benchmark.Judge              `json:"judge"`
	PassThreshold      float64                      `json:"pass_threshold"`
	RequiredSecrets    []string                     `json:"required_secrets,omitempty"`
	TaskSets           map[string]benchmark.TaskSet `json:"task_sets,omitempty"`
}

func policyOf(e benchmark.CatalogEntry) *managedPolicy {
	return &managedPolicy{
		Name: e.Name, Description: e.Description, SourceURL: e.SourceURL,
		HarnessRequirement: e.HarnessRequirement, DefaultHarness: e.DefaultHarness,
		Judge: e.Judge, PassThreshold: e.PassThreshold, RequiredSecrets: e.RequiredSecrets,
		TaskSets: e.TaskSets,
	}
}

// entry rebuilds the catalog entry the policy came from.
func (p *managedPolicy) entry(key string, src syncSource) benchmark.CatalogEntry {
	e := benchmark.CatalogEntry{
		Key: key, Name: p.Name, Description: p.Description, SourceURL: p.SourceURL,
		Registry: src.Registry, Dir: src.Dir,
		HarnessRequirement: p.HarnessRequirement, DefaultHarness: p.DefaultHarness,
		Judge: p.Judge, PassThreshold: p.PassThreshold, RequiredSecrets: p.RequiredSecrets,
		TaskSets: p.TaskSets,
	}
	if src.Dir == "" {
		e.Source = src.Spec
	}
	return e
}

// InstallCatalog is Service.InstallCatalog.
func (s *cataloger) InstallCatalog(ctx context.Context, ws string, cat benchmark.Catalog, catalogDir string) ([]SyncMessage, error) {
	var msgs []SyncMessage
	var errs []error
	for _, e := range cat.Benchmarks {
		src, err := catalogSource(e, catalogDir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		enqueue, err := s.installEntry(ctx, ws, e, src)
		if err != nil {
			errs = append(errs, fmt.Errorf("install managed benchmark %s: %w", e.Key, err))
			continue
		}
		if enqueue {
			msgs = append(msgs, NewSyncMessage(ws, e.Key))
		}
	}
	return msgs, errors.Join(errs...)
}

// catalogSource turns a catalog entry's source into absolute locations.
func catalogSource(e benchmark.CatalogEntry, catalogDir string) (syncSource, error) {
	src := syncSource{Managed: policyOf(e)}
	var err error
	if e.Dir != "" {
		src.Dir, err = absUnder(catalogDir, e.Dir)
		src.Spec = filepath.Base(src.Dir) + "@local"
	} else {
		src.Spec = e.Source
		if e.Registry != "" {
			src.Registry, err = absUnder(catalogDir, e.Registry)
		}
	}
	if err != nil {
		return syncSource{}, fmt.Errorf("managed benchmark %s: %w", e.Key, err)
	}
	return src, nil
}

// absUnder makes a relative path absolute against base; URLs are returned
// unchanged.
func absUnder(base, p string) (string, error) {
	if strings.Contains(p, "://") || filepath.IsAbs(p) {
		return p, nil
	}
	return filepath.Abs(filepath.Join(base, p))
}

// installEntry creates or updates one managed benchmark and reports whether
// it needs a sync message.
func (s *cataloger) installEntry(ctx context.Context, ws string, e benchmark.CatalogEntry, src syncSource) (bool, error) {
	var stored syncSource
	err := s.benchmarks.SyncSource(ctx, ws, e.Key, &stored)
	if err != nil && !errors.Is(err, records.ErrNotFound) {
		return false, err
	}
	changed := err != nil || !sameJSON(stored, src)
	now := s.now().UTC()
	b, err := s.benchmarks.Benchmark(ctx, ws, e.Key)
	switch {
	case errors.Is(err, records.ErrNotFound):
		b = records.Benchmark{
			Workspace: ws, Key: e.Key, Name: e.Name, Description: e.Description,
			Source: benchmark.Source{Type: benchmark.Managed, Ref: e.Ref(), URL: e.SourceURL},
			Status: records.SyncPending, CreatedAt: now, UpdatedAt: now,
		}
		if _, err := s.benchmarks.CreateBenchmark(ctx, b); err != nil && !records.IsConditionFailed(err) {
			return false, err
		} else if err != nil {
			return s.installEntry(ctx, ws, e, src) // created concurrently: reconcile with it
		}
		return true, s.benchmarks.PutSyncSource(ctx, ws, e.Key, src)
	case err != nil:
		return false, err
	case b.Source.Type != benchmark.Managed:
		return false, fmt.Errorf("%w: key %q is used by %s benchmark %s", ErrConflict, e.Key, b.Source.Type, b.Source.Ref)
	}
	if changed {
		if err := s.benchmarks.PutSyncSource(ctx, ws, e.Key, src); err != nil {
			return false, err
		}
	}
	return s.reconcile(ctx, ws, e, changed)
}

// reconcile refreshes a stored managed benchmark's record from its entry
// and reports whether it needs a sync message.
func (s *cataloger) reconcile(ctx context.Context, ws string, e benchmark.CatalogEntry, changed bool) (bool, error) {
	now := s.now().UTC()
	enqueue := false
	_, err := s.benchmarks.UpdateSync(ctx, ws, e.Key, func(st *records.SyncState) error {
		b := &st.Benchmark
		source := benchmark.Source{Type: benchmark.Managed, Ref: e.Ref(), URL: e.SourceURL}
		stale := b.Status == records.SyncPending || (b.Status == records.SyncSyncing && s.leaseExpired(*b, now))
		enqueue = changed || stale
		if !changed && b.Name == e.Name && b.Description == e.Description && b.Source == source {
			return records.ErrNoChange
		}
		b.Name, b.Description, b.Source, b.UpdatedAt = e.Name, e.Description, source, now
		if changed {
			b.Status, b.SyncError, b.Synced = records.SyncPending, "", 0
		}
		return nil
	})
	return enqueue, err
}

// sameJSON reports whether a and b encode to the same JSON (how a stored
// value compares with a fresh one: JSON drops what omitempty drops).
func sameJSON(a, b any) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && bytes.Equal(x, y)
}
