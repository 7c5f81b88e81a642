package api

import (
	"context"
	"fmt"
	"github.com/gauntlet-bench/gauntlet/pkg/api/v1"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"net/http"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
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
	out := v1.LeaderboardView{Benchmark: b.Key, Metric: string(metric), Groups: make([]v1.BoardGroup, len(board.Groups))}
	for i, g := range board.Groups {
		out.Groups[i] = boardGroup(g)
	}
	return render(out)
}

func boardGroup(g records.BoardGroup) v1.BoardGroup {
	out := v1.BoardGroup{TaskSet: g.TaskSet, ManifestVersion: g.ManifestVersion, ManifestDigest: g.ManifestDigest, K: g.K,
		Rows: make([]v1.BoardRow, len(g.Rows))}
	for i, row := range g.Rows {
		br := v1.BoardRow{
			Rank: row.Rank, Tied: row.TiedWithBest, Best: row.Best, Label: row.Entrant.String(), Harness: row.Entrant.Harness,
			Model: row.Entrant.Model, TaskSet: row.TaskSet, Value: row.Value, Pass1: estimatePtr(row.Pass1),
			CostPerTask: estimatePtr(row.CostPerTask), TimePerTask: estimatePtr(row.TimePerTask),
			TokensPerTask: estimatePtr(row.TokensPerTask), RunID: row.RunID, FinishedAt: row.FinishedAt,
		}
		if p := row.PassAtK; p != nil {
			br.PassAtK = &v1.PassAtKPoint{K: p.K, Estimate: estimate(p.Estimate)}
		}
		if c := row.VsBest; c != nil {
			br.VsBest = &v1.Comparison{Tasks: c.Tasks, Tested: c.Tested, Diff: c.Diff, PValue: c.P}
			if c.CI != nil {
				lo, hi := c.CI.Lo, c.CI.Hi
				br.VsBest.CILow, br.VsBest.CIHigh = &lo, &hi
			}
		}
		out.Rows[i] = br
	}
	return out
}
