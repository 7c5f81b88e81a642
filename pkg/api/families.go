package api

import (
	"log/slog"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
)

// The route handlers, one type per resource family. Each holds only what
// its routes use; what several families use is shared as small values: the
// caller's scope (what a workspace may see), the environment checks and the
// cache of rendered answers. Handler routes to them (api.go).

// runsAPI serves runs, their results and artifacts, logs and downloads,
// and what runs may use (harnesses): runs.go, results.go, download.go,
// metrics.go, harnesses.go.
type runsAPI struct {
	recs    Records
	runs    Runs
	blobs   blob.Store
	now     func() time.Time
	log     *slog.Logger
	scope   scope
	checks  checkSource
	answers *answerCache // also holds the leaderboards boardsAPI renders
}

// benchmarksAPI serves benchmarks, their pinned manifests and environment
// checks with their build logs: benchmarks.go, checks.go.
type benchmarksAPI struct {
	recs       Records
	benchmarks Benchmarks
	blobs      blob.Store
	scope      scope
	checks     checkSource
	manifests  *manifestCache
}

// workspacesAPI serves the caller's workspace, its secrets, and the
// operators' administration of workspaces: secrets.go, admin.go.
type workspacesAPI struct {
	recs    Workspaces
	secrets *pipeline.Secrets
	now     func() time.Time
	log     *slog.Logger
	// mintsTokens is set when the handler authenticates its own API tokens
	// (New): adding a user then issues one.
	mintsTokens bool
}

// boardsAPI serves what ranks and contrasts runs: leaderboards and
// comparisons: leaderboard.go, compare.go.
type boardsAPI struct {
	recs    Records
	now     func() time.Time
	scope   scope
	answers *answerCache
}
