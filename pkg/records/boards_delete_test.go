package records_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// TestDeleteLeaderboardRemovesEveryPart: deleting a benchmark's leaderboard
// leaves neither its head nor the parts of any generation behind.
func TestDeleteLeaderboardRemovesEveryPart(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	boards := []leaderboard.Board{
		{Metric: leaderboard.MetricPass1},
		{Metric: leaderboard.MetricCost},
	}
	for gen := int64(1); gen <= 2; gen++ {
		counts, err := s.Boards.PutLeaderboardParts(ctx, "ws1", "bench", gen, boards)
		if err != nil {
			t.Fatal(err)
		}
		if counts[string(leaderboard.MetricPass1)] != 1 || counts[string(leaderboard.MetricCost)] != 1 {
			t.Fatalf("PutLeaderboardParts counts = %v, want one part per metric", counts)
		}
	}
	if page, err := s.Table().Query(ctx, store.Query{PK: "BENCH#ws1#bench", Prefix: "BOARD#"}); err != nil || len(page.Items) != 4 {
		t.Fatalf("parts before delete: %d, %v; want 4", len(page.Items), err)
	}
	if _, err := s.Boards.SwapLeaderboardHead(ctx, records.LeaderboardHead{Workspace: "ws1", Benchmark: "bench", Generation: 2, Previous: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Boards.DeleteLeaderboard(ctx, "ws1", "bench"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Boards.LeaderboardHead(ctx, "ws1", "bench"); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("LeaderboardHead after delete = %v, want ErrNotFound", err)
	}
	page, err := s.Table().Query(ctx, store.Query{PK: "BENCH#ws1#bench", Prefix: "BOARD"})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range page.Items {
		t.Errorf("%s left after delete", it.SK)
	}
}
