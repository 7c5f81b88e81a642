package records_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// TestDeleteLeaderboardRemovesEveryPart: deleting a benchmark's leaderboard
// leaves neither its head nor the parts of any generation behind.
func TestDeleteLeaderboardRemovesEveryPart(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	part := func(metric string) records.LeaderboardPart {
		return records.LeaderboardPart{Metric: metric, Data: json.RawMessage(`{"rows":[]}`)}
	}
	for gen := int64(1); gen <= 2; gen++ {
		if err := s.PutLeaderboardParts(ctx, "ws1", "bench", gen, []records.LeaderboardPart{part("pass@1"), part("cost")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SwapLeaderboardHead(ctx, records.LeaderboardHead{Workspace: "ws1", Benchmark: "bench", Generation: 2, Previous: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteLeaderboard(ctx, "ws1", "bench"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LeaderboardHead(ctx, "ws1", "bench"); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("LeaderboardHead after delete = %v, want ErrNotFound", err)
	}
	for gen := int64(1); gen <= 2; gen++ {
		for _, metric := range []string{"pass@1", "cost"} {
			parts, err := s.LeaderboardParts(ctx, "ws1", "bench", gen, metric)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != 0 {
				t.Errorf("generation %d %s: %d parts left after delete", gen, metric, len(parts))
			}
		}
	}
}
