package api

import (
	"context"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// What the API reads and writes of the stored records, one interface per
// aggregate with only the methods its handlers call: the API writes
// nothing of runs and benchmarks (the pipeline and the sync do), and of a
// workspace only its users, tokens, billing and the workspace itself.
// The repositories of a records.Store satisfy them (RecordsOf); a test may
// fake any.

// RunReader is what the API reads of runs: the run, its agents, slots,
// results, tallies, metrics and logs.
type RunReader interface {
	Run(ctx context.Context, id string) (run.Run, error)
	RunsByWorkspace(ctx context.Context, ws, cursor string, limit int) ([]run.Run, string, error)
	RunsByBenchmark(ctx context.Context, ws, key string) ([]run.Run, error)
	Agents(ctx context.Context, runID string) ([]run.Agent, error)
	Slot(ctx context.Context, runID, slotID string) (run.Slot, error)
	Result(ctx context.Context, runID, slotID string, gen int) (run.Result, error)
	Results(ctx context.Context, runID, cursor string, limit int) ([]run.Result, string, error)
	AllResults(ctx context.Context, runID string) ([]run.Result, error)
	RunTally(ctx context.Context, runID string) (run.Tally, error)
	AgentTally(ctx context.Context, runID string, idx int) (run.Tally, error)
	RunTallies(ctx context.Context, runID string) (map[int][]leaderboard.TaskTally, bool, error)
	RunMetrics(ctx context.Context, runID string) (records.RunMetrics, error)
	Logs(ctx context.Context, runID, cursor string, limit int) ([]records.LogLine, string, error)
}

// BenchmarkReader is what the API reads of benchmarks: their records,
// pinned manifests and leaderboards.
type BenchmarkReader interface {
	Benchmark(ctx context.Context, ws, key string) (records.Benchmark, error)
	Benchmarks(ctx context.Context, ws string) ([]records.Benchmark, error)
	Manifest(ctx context.Context, ws, key, version string) (benchmark.Manifest, map[string]records.TaskFiles, error)
	Task(ctx context.Context, ws, key, version, name string) (records.Task, error)
	Board(ctx context.Context, ws, key string, metric leaderboard.Metric) (records.Board, error)
}

// Workspaces is what the API reads and writes of workspaces: the
// workspace, its users and their tokens, billing and secret records.
type Workspaces interface {
	Workspace(ctx context.Context, id string) (records.Workspace, error)
	Workspaces(ctx context.Context, cursor string, limit int) ([]records.Workspace, string, error)
	CreateWorkspace(ctx context.Context, w records.Workspace) (records.Workspace, bool, error)
	User(ctx context.Context, ws, id string) (records.User, error)
	PutUser(ctx context.Context, u records.User) error
	PutToken(ctx context.Context, t records.Token) error
	Billing(ctx context.Context, ws string) (records.Billing, error)
	PutBilling(ctx context.Context, ws string, b records.Billing) error
	SecretRecords(ctx context.Context, ws, user string) ([]records.SecretRecord, error)
	pipeline.SecretRecords
	tokenStore
}

// Records is every record the API touches.
type Records interface {
	RunReader
	BenchmarkReader
	Workspaces
}

// RecordsOf returns the Records of a store: each of its repositories
// behind the interface the handlers read it through.
func RecordsOf(s *records.Store) Records {
	return repositories{RunReader: s.Runs, BenchmarkReader: benchmarksAndBoards{s.Benchmarks, s.Boards}, workspaceRepository: s.Workspaces}
}

// repositories is Records made of one value per aggregate.
type repositories struct {
	RunReader
	BenchmarkReader
	workspaceRepository
}

// workspaceRepository names the embedded Workspaces apart from its
// Workspaces method.
type workspaceRepository = Workspaces

// benchmarksAndBoards is the BenchmarkReader of two repositories: the
// benchmarks' (records.Benchmarks) and their leaderboards'
// (records.Boards).
type benchmarksAndBoards struct {
	benchmarkRecords
	boardReader
}

type benchmarkRecords interface {
	Benchmark(ctx context.Context, ws, key string) (records.Benchmark, error)
	Benchmarks(ctx context.Context, ws string) ([]records.Benchmark, error)
	Manifest(ctx context.Context, ws, key, version string) (benchmark.Manifest, map[string]records.TaskFiles, error)
	Task(ctx context.Context, ws, key, version, name string) (records.Task, error)
}

type boardReader interface {
	Board(ctx context.Context, ws, key string, metric leaderboard.Metric) (records.Board, error)
}
