package benchsync

import (
	"context"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// What the service reads and writes of the stored records, one small
// interface per concern with only the methods it calls; a records.Store's
// repositories satisfy them (StoreRecords).

// BenchmarkRecords is what the service keeps of a benchmark: its record and
// sync state (changed together through UpdateSync), the refresh index, and
// where it syncs from.
type BenchmarkRecords interface {
	Benchmark(ctx context.Context, ws, key string) (records.Benchmark, error)
	CreateBenchmark(ctx context.Context, b records.Benchmark) (records.Benchmark, error)
	DeleteBenchmark(ctx context.Context, ws, key string) error
	UpdateSync(ctx context.Context, ws, key string, fn func(*records.SyncState) error) (records.SyncState, error)
	SyncedBefore(ctx context.Context, cutoff time.Time) ([]records.RefreshState, error)
	DeleteRefreshState(ctx context.Context, ws, key string) error
	PutSyncSource(ctx context.Context, ws, key string, src any) error
	SyncSource(ctx context.Context, ws, key string, out any) error
	DeleteSyncSource(ctx context.Context, ws, key string) error
}

// Manifests are a benchmark's stored manifest versions and their tasks.
type Manifests interface {
	Manifest(ctx context.Context, ws, key, version string) (benchmark.Manifest, map[string]records.TaskFiles, error)
	ManifestDigest(ctx context.Context, ws, key, version string) (string, error)
	ManifestVersions(ctx context.Context, ws, key string) ([]string, error)
	PutManifest(ctx context.Context, ws string, m benchmark.Manifest, files map[string]records.TaskFiles) error
	PutTask(ctx context.Context, ws, key, version string, t benchmark.Task, files records.TaskFiles) error
	DeleteManifest(ctx context.Context, ws, key, version string) error
}

// ImageBuilds are the records of task images built from Dockerfiles.
type ImageBuilds interface {
	ImageBuild(ctx context.Context, key string) (records.ImageBuild, error)
	PutImageBuild(ctx context.Context, b records.ImageBuild) error
}

// Benchmarks is all the service keeps of benchmarks (*records.Benchmarks).
type Benchmarks interface {
	BenchmarkRecords
	Manifests
	ImageBuilds
}

// RunPins finds the runs that pin a benchmark's manifest versions, which a
// delete keeps (*records.Runs).
type RunPins interface {
	RunsByBenchmark(ctx context.Context, ws, key string) ([]run.Run, error)
	ActiveRuns(ctx context.Context) ([]string, error)
	Run(ctx context.Context, id string) (run.Run, error)
}

// Leaderboards removes a deleted benchmark's leaderboard (*records.Boards).
type Leaderboards interface {
	DeleteLeaderboard(ctx context.Context, ws, key string) error
}

// SecretRecords looks up the workspace secret records that benchmarks name
// as registry credentials (*records.Workspaces).
type SecretRecords interface {
	SecretRecord(ctx context.Context, ref secret.Ref) (records.SecretRecord, error)
}

// Records are the stored records a Service reads and writes.
type Records struct {
	Benchmarks    Benchmarks
	Runs          RunPins
	Boards        Leaderboards
	SecretRecords SecretRecords
}

// StoreRecords returns the Records of a store: its repositories.
func StoreRecords(s *records.Store) Records {
	return Records{Benchmarks: s.Benchmarks, Runs: s.Runs, Boards: s.Boards, SecretRecords: s.Workspaces}
}

func (r Records) complete() bool {
	return r.Benchmarks != nil && r.Runs != nil && r.Boards != nil && r.SecretRecords != nil
}
