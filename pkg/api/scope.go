package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// scope is what a caller's workspace may see, which every family checks
// the same way: its own runs, and its own benchmarks beside the managed
// ones. Anything else answers 404, as if it did not exist.
type scope struct {
	runs       RunReader
	benchmarks BenchmarkReader
	// managed is the workspace whose benchmarks every workspace sees.
	managed string
}

// ownRun loads a run of the caller's workspace; any other is not found.
func (s scope) ownRun(ctx context.Context, id string) (run.Run, error) {
	if !validRunID(id) {
		return run.Run{}, notFound("run", id)
	}
	r, err := s.runs.Run(ctx, id)
	if errors.Is(err, records.ErrNotFound) || (err == nil && r.Workspace != identity(ctx).Workspace) {
		return run.Run{}, notFound("run", id)
	}
	if err != nil {
		return run.Run{}, fmt.Errorf("load run %s: %w", id, err)
	}
	return r, nil
}

// visibleBenchmark returns the workspace's benchmark, or the managed one
// with the key; another workspace's benchmark is not found.
func (s scope) visibleBenchmark(ctx context.Context, ws, key string) (records.Benchmark, error) {
	if !benchmark.ValidKey(key) {
		return records.Benchmark{}, errorf(http.StatusNotFound, v1.CodeNotFound, "benchmark %q not found: keys are lowercase letters, digits and dashes", key)
	}
	b, err := s.benchmarks.Benchmark(ctx, ws, key)
	if errors.Is(err, records.ErrNotFound) && ws != s.managed {
		b, err = s.benchmarks.Benchmark(ctx, s.managed, key)
	}
	if errors.Is(err, records.ErrNotFound) {
		return b, notFound("benchmark", key)
	}
	if err != nil {
		return b, fmt.Errorf("load benchmark %s: %w", key, err)
	}
	return b, nil
}

// visibleBenchmarks lists the workspace's benchmarks and the managed ones,
// by key; a workspace record wins over a managed one with the same key.
func (s scope) visibleBenchmarks(ctx context.Context, ws string) ([]records.Benchmark, error) {
	own, err := s.benchmarks.Benchmarks(ctx, ws)
	if err != nil {
		return nil, fmt.Errorf("list benchmarks: %w", err)
	}
	if ws == s.managed {
		return own, nil
	}
	managed, err := s.benchmarks.Benchmarks(ctx, s.managed)
	if err != nil {
		return nil, fmt.Errorf("list managed benchmarks: %w", err)
	}
	for _, m := range managed {
		if !slices.ContainsFunc(own, func(b records.Benchmark) bool { return b.Key == m.Key }) {
			own = append(own, m)
		}
	}
	slices.SortFunc(own, func(a, b records.Benchmark) int { return strings.Compare(a.Key, b.Key) })
	return own, nil
}
