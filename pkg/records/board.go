package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Leaderboard is a benchmark's stored leaderboard in one workspace: one
// board per metric (leaderboard.Metrics order), each from the latest eligible
// run of every entrant. It is stored as a head and small parts (boards.go);
// Store.Leaderboard and Store.Board reassemble it.
type Leaderboard struct {
	Workspace string `json:"workspace"`
	Benchmark string `json:"benchmark"`
	// Generation is the watermark the boards were computed under.
	Generation int64     `json:"generation"`
	ComputedAt time.Time `json:"computed_at"`
	Boards     []Board   `json:"boards"`
}

// Board returns the board ranked by metric.
func (l Leaderboard) Board(metric leaderboard.Metric) (Board, bool) {
	for _, b := range l.Boards {
		if b.Metric == metric {
			return b, true
		}
	}
	return Board{}, false
}

// Board is a stored leaderboard ranked by one metric: every entrant in one
// list, as leaderboard.Board.
type Board struct {
	Metric leaderboard.Metric `json:"metric"`
	// K is the pass@k depth every row reached.
	K    int        `json:"k"`
	Rows []BoardRow `json:"rows"`
	// MinDetectableDiff is leaderboard.Board's.
	MinDetectableDiff *float64 `json:"min_detectable_diff,omitempty"`
}

// BoardRow is one entrant's place on a stored board: what the leaderboard
// shows of a leaderboard.Row, without the summary's per-task values. Its
// per-category scores and pass@k curve are in the run metrics of RunID.
type BoardRow struct {
	Rank         int                 `json:"rank"`
	Best         bool                `json:"best,omitempty"`
	TiedWithBest bool                `json:"tied_with_best,omitempty"`
	Value        *float64            `json:"value,omitempty"`
	Entrant      leaderboard.Entrant `json:"entrant"`
	RunID        string              `json:"run_id"`
	FinishedAt   time.Time           `json:"finished_at"`
	// TaskSet, ManifestVersion and ManifestDigest name the measurement the
	// row's run made: only rows of the best's measurement are tie-tested.
	TaskSet         string `json:"task_set,omitempty"`
	ManifestVersion string `json:"manifest_version,omitempty"`
	ManifestDigest  string `json:"manifest_digest,omitempty"`
	// Pass1 and PassAtK (pass@K of the board) with their intervals; cost
	// (USD), time (seconds) and tokens per task.
	Pass1   *leaderboard.Estimate `json:"pass1,omitempty"`
	PassAtK *leaderboard.PassAtK  `json:"pass_at_k,omitempty"`
	// PassHatK is pass^K of the board; Pass1ErrorsAsFailures pass@1 with
	// every error a failure; Errors the attempts each error rule touched;
	// Variance pass@1's between- and within-task variance.
	PassHatK              *leaderboard.PassAtK    `json:"pass_hat_k,omitempty"`
	Pass1ErrorsAsFailures *leaderboard.Estimate   `json:"pass1_errors_as_failures,omitempty"`
	Errors                leaderboard.ErrorCounts `json:"errors"`
	// Attempts is the most scored attempts of a task in the row's run
	// (0 on rows stored before it was kept).
	Attempts      int                     `json:"attempts,omitempty"`
	Variance      *leaderboard.Variance   `json:"variance,omitempty"`
	CostPerTask   *leaderboard.Estimate   `json:"cost_per_task,omitempty"`
	TimePerTask   *leaderboard.Estimate   `json:"time_per_task,omitempty"`
	TokensPerTask *leaderboard.Estimate   `json:"tokens_per_task,omitempty"`
	VsBest        *leaderboard.Comparison `json:"vs_best,omitempty"`
}

// boardRow is the stored form of a ranked row of a board of depth k.
func boardRow(r leaderboard.Row, k int) BoardRow {
	s := r.Summary
	row := BoardRow{Rank: r.Rank, Best: r.Best, TiedWithBest: r.TiedWithBest, Value: r.Value, Entrant: s.Entrant,
		RunID: s.Run.ID, FinishedAt: s.Run.FinishedAt, TaskSet: s.Run.TaskSet,
		ManifestVersion: s.Run.ManifestVersion, ManifestDigest: s.Run.ManifestDigest, Pass1: s.Pass1,
		CostPerTask: s.CostPerTask, TimePerTask: s.TimePerTask, TokensPerTask: s.TokensPerTask, VsBest: r.VsBest,
		Pass1ErrorsAsFailures: s.Pass1ErrorsAsFailures, Errors: s.Errors, Variance: s.Variance, Attempts: s.MaxAttempts}
	if k >= 1 && k <= len(s.PassAtK) {
		p := s.PassAtK[k-1]
		row.PassAtK = &p
	}
	if k >= 1 && k <= len(s.PassHatK) {
		p := s.PassHatK[k-1]
		row.PassHatK = &p
	}
	return row
}

// boardPart is one stored part: the board's depth and some of its rows,
// in rank order.
type boardPart struct {
	K     int        `json:"k"`
	MDD   *float64   `json:"mdd,omitempty"`
	Rows  []BoardRow `json:"rows"`
	Index int        `json:"index"`
	// Group is the part shape written before boards were one list (one
	// ranked group per task set and version): its rows are read in place,
	// ranked as they were, until the benchmark's next recompute rewrites
	// the board.
	Group *struct {
		K    int        `json:"k"`
		Rows []BoardRow `json:"rows"`
	} `json:"group,omitempty"`
}

// PutLeaderboardParts writes the boards as the parts of leaderboard
// generation gen (rows chunked by size) and returns the count of parts of
// each metric, which the head that names the generation records.
func (s *Boards) PutLeaderboardParts(ctx context.Context, ws, key string, gen int64, boards []leaderboard.Board) (map[string]int, error) {
	counts := map[string]int{}
	for _, b := range boards {
		rows := make([]BoardRow, len(b.Rows))
		for i := range b.Rows {
			rows[i] = boardRow(b.Rows[i], b.K)
		}
		chunks, err := chunkBySize(rows, partBytes)
		if err != nil {
			return nil, err
		}
		if len(chunks) == 0 {
			chunks = [][]BoardRow{nil}
		}
		for i, c := range chunks {
			data, err := json.Marshal(boardPart{K: b.K, MDD: b.MinDetectableDiff, Rows: c, Index: i})
			if err != nil {
				return nil, fmt.Errorf("encode leaderboard part: %w", err)
			}
			sk := fmt.Sprintf("%s%05d", boardPartPrefix(gen, string(b.Metric)), i)
			if _, err := s.tbl.Put(ctx, store.Item{PK: benchPK(ws, key), SK: sk, Data: data}, store.Cond{}); err != nil {
				return nil, fmt.Errorf("put leaderboard part %s of %s: %w", sk, key, err)
			}
		}
		counts[string(b.Metric)] = len(chunks)
	}
	return counts, nil
}

// Board returns the stored board of one metric of a benchmark: one read of
// the head and one query of that metric's parts. Before the first recompute
// the board has no rows.
func (s *Boards) Board(ctx context.Context, ws, key string, metric leaderboard.Metric) (Board, error) {
	b, _, err := s.board(ctx, ws, key, metric)
	return b, err
}

func (s *Boards) board(ctx context.Context, ws, key string, metric leaderboard.Metric) (Board, LeaderboardHead, error) {
	out := Board{Metric: metric, Rows: []BoardRow{}}
	for range readAttempts {
		head, err := s.LeaderboardHead(ctx, ws, key)
		if errors.Is(err, ErrNotFound) {
			return out, head, nil
		}
		if err != nil {
			return out, head, err
		}
		raw, err := s.dataItems(ctx, store.Query{PK: benchPK(ws, key), Prefix: boardPartPrefix(head.Generation, string(metric))})
		if err != nil {
			return out, head, err
		}
		if len(raw) != head.Parts[string(metric)] {
			continue // superseded twice while reading: its parts are gone
		}
		for _, data := range raw {
			var p boardPart
			if err := json.Unmarshal(data, &p); err != nil {
				return out, head, fmt.Errorf("decode leaderboard part of %s: %w", key, err)
			}
			if p.Group != nil {
				p.K, p.Rows = p.Group.K, p.Group.Rows
			}
			out.K, out.MinDetectableDiff = p.K, p.MDD
			out.Rows = append(out.Rows, p.Rows...)
		}
		return out, head, nil
	}
	return out, LeaderboardHead{}, fmt.Errorf("leaderboard of %s: %w", key, ErrContention)
}

// Leaderboard returns every board of a benchmark's stored leaderboard
// (ErrNotFound before the first recompute).
func (s *Boards) Leaderboard(ctx context.Context, ws, key string) (Leaderboard, error) {
	l := Leaderboard{Workspace: ws, Benchmark: key}
	for _, m := range leaderboard.Metrics {
		b, head, err := s.board(ctx, ws, key, m)
		if err != nil {
			return l, err
		}
		if head.Version == 0 {
			return l, fmt.Errorf("leaderboard of %s: %w", key, ErrNotFound)
		}
		l.Generation, l.ComputedAt = head.Generation, head.ComputedAt
		l.Boards = append(l.Boards, b)
	}
	return l, nil
}
