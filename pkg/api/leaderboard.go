package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/boardview"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func (h *boardsAPI) leaderboard(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	ws := identity(ctx).Workspace
	metric := leaderboard.MetricPass1
	if s := r.URL.Query().Get("metric"); s != "" {
		var err error
		if metric, err = leaderboard.ParseMetric(s); err != nil {
			return errorf(http.StatusBadRequest, v1.CodeBadRequest, "%s", err.Error())
		}
	}
	key := r.PathValue("key")
	body, err := h.answers.answer("leaderboard\x00"+key+"\x00"+string(metric), ws, h.now(), func() ([]byte, time.Time, error) {
		body, err := h.renderLeaderboard(context.WithoutCancel(ctx), ws, key, metric)
		return body, h.now().Add(liveTTL), err
	})
	if err != nil {
		return err
	}
	return writeCached(w, body)
}

func (h *boardsAPI) renderLeaderboard(ctx context.Context, ws, key string, metric leaderboard.Metric) ([]byte, error) {
	b, err := h.scope.visibleBenchmark(ctx, ws, key)
	if err != nil {
		return nil, err
	}
	board, err := h.recs.Board(ctx, ws, b.Key, metric)
	if err != nil {
		return nil, fmt.Errorf("load leaderboard of %s: %w", b.Key, err)
	}
	view := leaderboardView(b.Key, board)
	if err := h.markEstimatedCosts(ctx, view.Rows); err != nil {
		return nil, err
	}
	return render(view)
}

// markEstimatedCosts sets cost_estimated on the rows whose cost came, at
// least in part, from the price table, and usage_self_reported on the rows
// whose tokens or cost are, at least in part, an agent's own report (not
// metered). The stored board keeps no such flag; the tally of the row's run
// agent counts both. Rows without a cost or tokens need no look-up.
func (h *boardsAPI) markEstimatedCosts(ctx context.Context, rows []v1.BoardRow) error {
	agents := map[string][]run.Agent{}
	for i := range rows {
		row := &rows[i]
		if (row.CostPerTask == nil && row.TokensPerTask == nil) || row.RunID == "" {
			continue
		}
		list, ok := agents[row.RunID]
		if !ok {
			var err error
			if list, err = h.recs.Agents(ctx, row.RunID); err != nil {
				return fmt.Errorf("load agents of run %s: %w", row.RunID, err)
			}
			agents[row.RunID] = list
		}
		for _, a := range list {
			if a.Harness != row.Harness || a.RankedModel() != row.Model { // a model-free agent ranks under its name
				continue
			}
			t, err := h.recs.AgentTally(ctx, row.RunID, a.Index)
			if err != nil {
				return fmt.Errorf("load tally of run %s agent %d: %w", row.RunID, a.Index, err)
			}
			row.CostEstimated = row.CostEstimated || t.CostEstimated > 0
			row.UsageSelfReported = row.UsageSelfReported || t.UsageSelfReported > 0
		}
	}
	return nil
}

// leaderboardView is the API's form of a stored board: one list.
func leaderboardView(key string, board records.Board) v1.LeaderboardView {
	out := v1.LeaderboardView{Benchmark: key, Metric: string(board.Metric), K: board.K, Rows: make([]v1.BoardRow, len(board.Rows)),
		MinDetectableDiff: board.MinDetectableDiff}
	for i, row := range board.Rows {
		br := v1.BoardRow{
			Rank: row.Rank, Tied: row.TiedWithBest, Best: row.Best, Label: row.Entrant.String(), Harness: row.Entrant.Harness,
			Model: row.Entrant.Model, TaskSet: row.TaskSet, ManifestVersion: row.ManifestVersion, ManifestDigest: row.ManifestDigest,
			Value: row.Value, Pass1: estimatePtr(row.Pass1),
			CostPerTask: estimatePtr(row.CostPerTask), TimePerTask: estimatePtr(row.TimePerTask),
			TokensPerTask: estimatePtr(row.TokensPerTask), RunID: row.RunID, FinishedAt: row.FinishedAt,
			Pass1ErrorsAsFailures: estimatePtr(row.Pass1ErrorsAsFailures), Errors: boardview.Errors(row.Errors),
			Variance: boardview.Variance(row.Variance),
		}
		br.PassAtK, br.PassHatK, br.VsBest = boardview.PassAtK(row.PassAtK), boardview.PassAtK(row.PassHatK), boardview.Comparison(row.VsBest)
		out.Rows[i] = br
	}
	return out
}
