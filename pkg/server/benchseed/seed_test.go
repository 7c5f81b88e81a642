package benchseed_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/client"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/server"
	"github.com/gauntlet-bench/gauntlet/pkg/server/benchseed"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func openServer(t *testing.T, dir string) *server.Server {
	t.Helper()
	srv, err := server.Open(context.Background(), server.Options{DataDir: dir, Addr: "127.0.0.1:0", CredentialsPath: "-",
		Local: local.Options{Isolation: "process", RunnerPath: "/bin/true"}}) // no sandbox ever starts
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// TestSeed seeds GAUNTLET_SEED_DIR for scripts/bench-api.sh (50 entrants ×
// 500 tasks in 10 categories × 5 attempts) and writes seeded.json there; without the
// variable it seeds a small benchmark into a temp dir and checks the
// leaderboard ranks every entrant.
func TestSeed(t *testing.T) {
	dir, shape := os.Getenv("GAUNTLET_SEED_DIR"), benchseed.Shape{Entrants: 50, Tasks: 500, Attempts: 5, Categories: 10}
	if dir == "" {
		dir, shape = t.TempDir(), benchseed.Shape{Entrants: 4, Tasks: 12, Attempts: 3, Categories: 3}
	}
	ctx := context.Background()
	srv := openServer(t, dir)
	seeded, err := benchseed.Seed(ctx, srv.Platform().Service(), srv.Tenant().Workspace, shape)
	if err != nil {
		t.Fatal(err)
	}
	if len(seeded.Runs) != shape.Entrants || seeded.Results != shape.Entrants*shape.Tasks*shape.Attempts {
		t.Errorf("seeded %d runs, %d results; want %d and %d", len(seeded.Runs), seeded.Results, shape.Entrants, shape.Entrants*shape.Tasks*shape.Attempts)
	}
	board := readBoard(t, srv, seeded.Benchmark, leaderboard.MetricPass1)
	if len(board.Rows) != shape.Entrants {
		t.Fatalf("leaderboard = %+v, want %d rows", board, shape.Entrants)
	}
	out, err := json.Marshal(seeded)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "seeded.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTerminalBenchSizedBoard stores the board of a terminal-bench-sized
// benchmark (89 tasks in 10 categories, 5 attempts) with 50 entrants — one
// stored item of it used to be 673 KB, over the 400 KB item limit the
// SQLite adapter enforces — and reads it back through the API: every metric's
// board with every entrant, and a run's per-category scores and pass@k curve.
func TestTerminalBenchSizedBoard(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 22,250 results")
	}
	shape := benchseed.Shape{Entrants: 50, Tasks: 89, Attempts: 5, Categories: 10}
	ctx := context.Background()
	srv := openServer(t, t.TempDir())
	seeded, err := benchseed.Seed(ctx, srv.Platform().Service(), srv.Tenant().Workspace, shape)
	if err != nil {
		t.Fatalf("Seed: %v", err)
	}
	for _, metric := range leaderboard.Metrics {
		board := readBoard(t, srv, seeded.Benchmark, metric)
		g := board
		type shapeOf struct{ Rows, Best, K, WithPass1, WithPassAtK, WithCost, WithVsBest int }
		got := shapeOf{Rows: len(g.Rows), K: g.K}
		var runs []string
		for _, r := range g.Rows {
			runs = append(runs, r.RunID)
			got.Best += count(r.Best)
			got.WithPass1 += count(r.Pass1 != nil && r.Pass1.CILow != nil)
			got.WithPassAtK += count(r.PassAtK != nil && r.PassAtK.K == shape.Attempts)
			got.WithCost += count(r.CostPerTask != nil && r.TimePerTask != nil && r.TokensPerTask != nil)
			got.WithVsBest += count(r.VsBest != nil && r.VsBest.Tested)
		}
		want := shapeOf{Rows: 50, Best: 1, K: 5, WithPass1: 50, WithPassAtK: 50, WithCost: 50, WithVsBest: 49}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s board (-want +got):\n%s", metric, diff)
		}
		slices.Sort(runs)
		if diff := cmp.Diff(seeded.Runs, runs); diff != "" {
			t.Errorf("%s board's runs (-want +got):\n%s", metric, diff)
		}
		if !slices.IsSortedFunc(g.Rows, func(a, b v1.BoardRow) int { return a.Rank - b.Rank }) || g.Rows[0].Rank != 1 {
			t.Errorf("%s board rows are not in rank order from 1", metric)
		}
	}
	c := apiClient(t, srv)
	detail, err := c.Run(ctx, seeded.Runs[0])
	if err != nil {
		t.Fatalf("GET run: %v", err)
	}
	m := detail.AgentsDetail[0].Metrics
	if len(m.Categories) != 10 || len(m.PassAtKCurve) != 5 || m.Tasks != 89 || !detail.MetricsCurrent {
		t.Errorf("run metrics: %d categories, %d curve points, %d tasks, current %v; want 10, 5, 89, true",
			len(m.Categories), len(m.PassAtKCurve), m.Tasks, detail.MetricsCurrent)
	}
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

func apiClient(t *testing.T, srv *server.Server) *client.Client {
	t.Helper()
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	c, err := client.New(hs.URL, srv.Tenant().Token, hs.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readBoard(t *testing.T, srv *server.Server, key string, metric leaderboard.Metric) v1.LeaderboardView {
	t.Helper()
	board, err := apiClient(t, srv).Leaderboard(context.Background(), key, string(metric))
	if err != nil {
		t.Fatalf("GET leaderboard ?metric=%s: %v", metric, err)
	}
	return board
}

// BenchmarkReadBoard reads one metric's stored board of 50 entrants × 500
// tasks × 5 attempts (10 categories) the way GET …/leaderboard does on a
// cache miss, recomputes and stores that board the way a run's finish does,
// and reads a run's metrics the way GET /v1/runs/{id} does.
func BenchmarkReadBoard(b *testing.B) {
	ctx := context.Background()
	srv, seeded := seededServer(b)
	b.Run("store", func(b *testing.B) {
		for b.Loop() {
			board, err := srv.Records().Boards.Board(ctx, srv.Tenant().Workspace, seeded.Benchmark, leaderboard.MetricPass1)
			if err != nil || len(board.Rows) != 50 {
				b.Fatalf("ReadBoard: %v", err)
			}
		}
	})
	b.Run("recompute", func(b *testing.B) {
		for b.Loop() {
			if err := srv.Platform().Service().RecomputeLeaderboard(ctx, srv.Tenant().Workspace, seeded.Benchmark); err != nil {
				b.Fatalf("RecomputeLeaderboard: %v", err)
			}
		}
	})
	b.Run("run-metrics", func(b *testing.B) {
		for b.Loop() {
			if _, err := srv.Records().Runs.RunMetrics(ctx, seeded.Runs[0]); err != nil {
				b.Fatalf("ReadRunMetrics: %v", err)
			}
		}
	})
}
