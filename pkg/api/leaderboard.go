package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
)

// LeaderboardView is the answer of GET /v1/benchmarks/{key}/leaderboard:
// one independently ranked group per (task set, manifest version).
type LeaderboardView struct {
	Benchmark string       `json:"benchmark"`
	Metric    string       `json:"metric"`
	Groups    []BoardGroup `json:"groups"`
}

// BoardGroup is the ranked rows of one task set of one manifest version.
type BoardGroup struct {
	TaskSet         string `json:"task_set"`
	ManifestVersion string `json:"manifest_version"`
	ManifestDigest  string `json:"manifest_digest"`
	// K is the pass@k depth every row of the group reached.
	K    int        `json:"k"`
	Rows []BoardRow `json:"rows"`
}

// BoardRow is one entrant's place.
type BoardRow struct {
	Rank int `json:"rank"`
	// Tied marks a row that shares rank 1 only because the paired t-test
	// cannot separate it from the best.
	Tied    bool          `json:"tied"`
	Best    bool          `json:"best"`
	Label   string        `json:"label"`
	Harness string        `json:"harness"`
	Model   string        `json:"model"`
	TaskSet string        `json:"task_set"`
	Value   *float64      `json:"value"`
	Pass1   *Estimate     `json:"pass1"`
	PassAtK *PassAtKPoint `json:"pass_at_k"`
	// CostPerTask (USD), TimePerTask (seconds), TokensPerTask.
	CostPerTask   *Estimate `json:"cost_per_task"`
	TimePerTask   *Estimate `json:"time_per_task"`
	TokensPerTask *Estimate `json:"tokens_per_task"`
	RunID         string    `json:"run_id"`
	FinishedAt    time.Time `json:"finished_at"`
	// VsBest compares the row with the best row (null for the best row).
	VsBest *Comparison `json:"vs_best"`
}

// Comparison is a row's paired difference from the best row: its mean over
// shared tasks, the 95% interval and the two-sided p-value (null when
// fewer than two tasks pair up).
type Comparison struct {
	Tasks  int      `json:"tasks"`
	Tested bool     `json:"tested"`
	Diff   float64  `json:"diff"`
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
	PValue *float64 `json:"p_value"`
}

func (h *Handler) leaderboard(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	ws := identity(ctx).Workspace
	metric := leaderboard.MetricPass1
	if s := r.URL.Query().Get("metric"); s != "" {
		var err error
		if metric, err = leaderboard.ParseMetric(s); err != nil {
			return errorf(http.StatusBadRequest, CodeBadRequest, "%s", err.Error())
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
	board, err := pipeline.ReadBoard(ctx, h.cfg.Records, ws, b.Key, metric)
	if err != nil {
		return nil, fmt.Errorf("load leaderboard of %s: %w", b.Key, err)
	}
	out := LeaderboardView{Benchmark: b.Key, Metric: string(metric), Groups: make([]BoardGroup, len(board.Groups))}
	for i, g := range board.Groups {
		out.Groups[i] = boardGroup(g)
	}
	return render(out)
}

func boardGroup(g pipeline.BoardGroup) BoardGroup {
	out := BoardGroup{TaskSet: g.TaskSet, ManifestVersion: g.ManifestVersion, ManifestDigest: g.ManifestDigest, K: g.K,
		Rows: make([]BoardRow, len(g.Rows))}
	for i, row := range g.Rows {
		br := BoardRow{
			Rank: row.Rank, Tied: row.TiedWithBest, Best: row.Best, Label: row.Entrant.String(), Harness: row.Entrant.Harness,
			Model: row.Entrant.Model, TaskSet: row.TaskSet, Value: row.Value, Pass1: estimatePtr(row.Pass1),
			CostPerTask: estimatePtr(row.CostPerTask), TimePerTask: estimatePtr(row.TimePerTask),
			TokensPerTask: estimatePtr(row.TokensPerTask), RunID: row.RunID, FinishedAt: row.FinishedAt,
		}
		if p := row.PassAtK; p != nil {
			br.PassAtK = &PassAtKPoint{K: p.K, Estimate: estimate(p.Estimate)}
		}
		if c := row.VsBest; c != nil {
			br.VsBest = &Comparison{Tasks: c.Tasks, Tested: c.Tested, Diff: c.Diff, PValue: c.P}
			if c.CI != nil {
				lo, hi := c.CI.Lo, c.CI.Hi
				br.VsBest.CILow, br.VsBest.CIHigh = &lo, &hi
			}
		}
		out.Rows[i] = br
	}
	return out
}
