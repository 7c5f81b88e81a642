package benchseed_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/server"
	"github.com/gauntlet-bench/gauntlet/pkg/server/benchseed"
)

// TestSeed seeds GAUNTLET_SEED_DIR for scripts/bench-api.sh (50 entrants ×
// 500 tasks × 5 attempts) and writes seeded.json there; without the
// variable it seeds a small benchmark into a temp dir and checks the
// leaderboard ranks every entrant.
func TestSeed(t *testing.T) {
	dir, shape := os.Getenv("GAUNTLET_SEED_DIR"), benchseed.Shape{Entrants: 50, Tasks: 500, Attempts: 5}
	if dir == "" {
		dir, shape = t.TempDir(), benchseed.Shape{Entrants: 4, Tasks: 12, Attempts: 3, Categories: 3}
	}
	ctx := context.Background()
	srv, err := server.Open(ctx, server.Options{DataDir: dir, Addr: "127.0.0.1:0", CredentialsPath: "-",
		Local: local.Options{Isolation: "process", RunnerPath: "/bin/true"}}) // no sandbox ever starts
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	seeded, err := benchseed.Seed(ctx, srv.Platform().Service(), srv.Tenant().Workspace, shape)
	if err != nil {
		t.Fatal(err)
	}
	if len(seeded.Runs) != shape.Entrants || seeded.Results != shape.Entrants*shape.Tasks*shape.Attempts {
		t.Errorf("seeded %d runs, %d results; want %d and %d", len(seeded.Runs), seeded.Results, shape.Entrants, shape.Entrants*shape.Tasks*shape.Attempts)
	}
	var board struct {
		Boards []struct {
			Groups []struct{ Rows []json.RawMessage } `json:"groups"`
		} `json:"boards"`
	}
	if err := srv.Records().Leaderboard(ctx, srv.Tenant().Workspace, seeded.Benchmark, &board); err != nil {
		t.Fatal(err)
	}
	if len(board.Boards) == 0 || len(board.Boards[0].Groups) != 1 || len(board.Boards[0].Groups[0].Rows) != shape.Entrants {
		t.Fatalf("leaderboard = %+v, want one group of %d rows", board, shape.Entrants)
	}
	out, err := json.Marshal(seeded)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "seeded.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
}
