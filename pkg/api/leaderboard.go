package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/api/v1"
	"github.com/gauntlet-bench/gauntlet/pkg/boardview"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

func (h *Handler) leaderboard(w http.ResponseWriter, r *http.Request) error {
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
	body, err := h.answers.answer("leaderboard\x00"+key+"\x00"+string(metric), ws, h.cfg.Now(), func() ([]byte, time.Time, error) {
		body, err := h.renderLeaderboard(context.WithoutCancel(ctx), ws, key, metric)
		return body, h.cfg.Now().Add(liveTTL), err
	})
	if err != nil {
		return err
	}
	return writeCached(w, body)
}

func (h *Handler) renderLeaderboard(ctx context.Context, ws, key string, metric leaderboard.Metric) ([]byte, error) {
	b, err := h.visibleBenchmark(ctx, ws, key)
	if err != nil {
		return nil, err
	}
	board, err := h.cfg.Records.Board(ctx, ws, b.Key, metric)
	if err != nil {
		return nil, fmt.Errorf("load leaderboard of %s: %w", b.Key, err)
	}
	return render(leaderboardView(b.Key, board))
}

// leaderboardView is the API's form of a stored board: one list.
func leaderboardView(key string, board records.Board) v1.LeaderboardView {
	out := v1.LeaderboardView{Benchmark: key, Metric: string(board.Metric), K: board.K, Rows: make([]v1.BoardRow, len(board.Rows))}
	for i, row := range board.Rows {
		br := v1.BoardRow{
			Rank: row.Rank, Tied: row.TiedWithBest, Best: row.Best, Label: row.Entrant.String(), Harness: row.Entrant.Harness,
			Model: row.Entrant.Model, TaskSet: row.TaskSet, ManifestVersion: row.ManifestVersion, ManifestDigest: row.ManifestDigest,
			Value: row.Value, Pass1: estimatePtr(row.Pass1),
			CostPerTask: estimatePtr(row.CostPerTask), TimePerTask: estimatePtr(row.TimePerTask),
			TokensPerTask: estimatePtr(row.TokensPerTask), RunID: row.RunID, FinishedAt: row.FinishedAt,
		}
		br.PassAtK, br.VsBest = boardview.PassAtK(row.PassAtK), boardview.Comparison(row.VsBest)
		out.Rows[i] = br
	}
	return out
}
