package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// runSummaries returns the run's per-agent summaries, index-aligned with
// agents, as the pipeline last recomputed them, and how many final results
// they cover. Before the first recompute every summary is empty.
func (h *runsAPI) runSummaries(ctx context.Context, r run.Run, agents []run.Agent) ([]leaderboard.Summary, int, error) {
	m, err := h.recs.RunMetrics(ctx, r.ID)
	if err != nil && !errors.Is(err, records.ErrNotFound) {
		return nil, 0, fmt.Errorf("load metrics of run %s: %w", r.ID, err)
	}
	out := make([]leaderboard.Summary, len(agents))
	for i, a := range agents {
		out[i] = leaderboard.Summary{Entrant: leaderboard.Entrant{Harness: a.Harness, Model: a.RankedModel()}}
		for _, am := range m.Agents {
			if am.Index == a.Index {
				out[i] = am.Summary
			}
		}
	}
	return out, m.Results, nil
}
