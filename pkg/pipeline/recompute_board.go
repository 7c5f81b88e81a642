package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// Leaderboard is a benchmark's stored leaderboard in one workspace: one
// board per metric (leaderboard.Metrics order), each from the latest eligible
// run of every entrant. It is stored as a head and small parts (see
// records/boards.go); ReadLeaderboard and ReadBoard reassemble it.
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

// Board is a stored leaderboard ranked by one metric: one independently
// ranked group per (task set, manifest version), as leaderboard.Board.
type Board struct {
	Metric leaderboard.Metric `json:"metric"`
	Groups []BoardGroup       `json:"groups"`
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

// BoardRow is one entrant's place on a stored board: what the leaderboard
// shows of it. Its per-category scores and pass@k curve are in the run
// metrics of RunID.
type BoardRow struct {
	Rank         int                 `json:"rank"`
	Best         bool                `json:"best,omitempty"`
	TiedWithBest bool                `json:"tied_with_best,omitempty"`
	Value        *float64            `json:"value,omitempty"`
	Entrant      leaderboard.Entrant `json:"entrant"`
	RunID        string              `json:"run_id"`
	FinishedAt   time.Time           `json:"finished_at"`
	TaskSet      string              `json:"task_set,omitempty"`
	// Pass1 and PassAtK (pass@K of the group) with their intervals; cost
	// (USD), time (seconds) and tokens per task.
	Pass1         *leaderboard.Estimate   `json:"pass1,omitempty"`
	PassAtK       *leaderboard.PassAtK    `json:"pass_at_k,omitempty"`
	CostPerTask   *leaderboard.Estimate   `json:"cost_per_task,omitempty"`
	TimePerTask   *leaderboard.Estimate   `json:"time_per_task,omitempty"`
	TokensPerTask *leaderboard.Estimate   `json:"tokens_per_task,omitempty"`
	VsBest        *leaderboard.Comparison `json:"vs_best,omitempty"`
}

// boardPart is one stored part: a group's header and some of its rows.
type boardPart struct {
	Group BoardGroup `json:"group"`
	Index int        `json:"index"`
}

// boardReadHook, when set (by tests), runs after a leaderboard recompute
// has read the runs and before it stores its board.
var boardReadHook func(ws, key string, watermark int64)

// RecomputeLeaderboard recomputes and stores the leaderboard of a benchmark
// in a workspace from its finished runs (see finishedSummaries).
//
// Concurrent recomputes (two runs finishing on different stream shards)
// cannot leave a stale board: each takes a new watermark before it reads the
// runs, and the head moves to its board only while the stored board has a
// smaller watermark. The board of the largest watermark read every run
// whose finish triggered a recompute, and no smaller one can replace it.
func (s *Service) RecomputeLeaderboard(ctx context.Context, ws, key string) error {
	watermark, err := s.recs.NextLeaderboardWatermark(ctx, ws, key)
	if err != nil {
		return fmt.Errorf("recompute leaderboard %s/%s: %w", ws, key, err)
	}
	summaries, err := s.finishedSummaries(ctx, ws, key)
	if err != nil {
		return fmt.Errorf("recompute leaderboard %s/%s: %w", ws, key, err)
	}
	if boardReadHook != nil {
		boardReadHook(ws, key, watermark)
	}
	parts, counts, err := boardParts(leaderboard.Boards(leaderboard.LatestEligible(summaries)))
	if err != nil {
		return fmt.Errorf("recompute leaderboard %s/%s: %w", ws, key, err)
	}
	if err := s.recs.PutLeaderboardParts(ctx, ws, key, watermark, parts); err != nil {
		return fmt.Errorf("recompute leaderboard %s/%s: %w", ws, key, err)
	}
	if err := s.swapBoard(ctx, ws, key, watermark, counts); err != nil {
		return fmt.Errorf("recompute leaderboard %s/%s: %w", ws, key, err)
	}
	return nil
}

// swapAttempts bounds the head swaps a recompute tries against concurrent ones.
const swapAttempts = 32

// swapBoard points the head at generation watermark unless a board of a
// later watermark is stored, then deletes the parts no head can name.
func (s *Service) swapBoard(ctx context.Context, ws, key string, watermark int64, counts map[string]int) error {
	for range swapAttempts {
		head, err := s.recs.LeaderboardHead(ctx, ws, key)
		if errors.Is(err, records.ErrNotFound) {
			head, err = records.LeaderboardHead{Workspace: ws, Benchmark: key}, nil
		}
		if err != nil {
			return err
		}
		if head.Generation >= watermark {
			s.log.InfoContext(ctx, "leaderboard superseded by a later recompute", "benchmark", key, "watermark", watermark, "stored", head.Generation)
			return nil // a later swap deletes this generation's parts
		}
		next := records.LeaderboardHead{Workspace: ws, Benchmark: key, Generation: watermark, Previous: head.Generation,
			Parts: counts, ComputedAt: s.now(), Version: head.Version}
		_, err = s.recs.SwapLeaderboardHead(ctx, next)
		if records.IsConditionFailed(err) {
			continue
		}
		if err != nil {
			return err
		}
		return s.recs.DeleteLeaderboardParts(ctx, ws, key, head.Generation)
	}
	return records.ErrContention
}

// finishedSummaries summarizes every agent of the finished runs of the
// benchmark that make its board: the latest eligible run of each entrant
// (leaderboard.LatestEligible). The run list comes from an index that may
// lag behind the table, so a run it shows as not yet ended is read again
// from the table.
//
// A finished run's stored metrics carry its agents' summaries and per-task
// tallies, so eligibility is decided from the metrics heads alone and only
// the tallies of the runs on the board are read, never a result. A finished
// run whose metrics keep no tallies, or do not cover all its results, has
// them recomputed first.
func (s *Service) finishedSummaries(ctx context.Context, ws, key string) ([]leaderboard.Summary, error) {
	runs, err := s.recs.RunsByBenchmark(ctx, ws, key)
	if err != nil {
		return nil, err
	}
	var (
		summaries []leaderboard.Summary
		// from[i] names the run, metrics head and agent index of
		// summaries[i] when it was read from stored metrics and still lacks
		// its per-task values.
		from = map[int]storedAgent{}
	)
	for _, r := range runs {
		if !r.Status.Terminal() {
			if r, err = s.recs.Run(ctx, r.ID); err != nil {
				return nil, err
			}
		}
		if r.Status != run.Finished {
			continue
		}
		head, ok, err := s.storedSummaries(ctx, r)
		if err == nil && !ok {
			// Metrics from before the run finished, or from a version that
			// kept no tallies: recompute them once, here, so later boards
			// read the tallies.
			if err = s.RecomputeRun(ctx, r.ID); err == nil {
				head, ok, err = s.storedSummaries(ctx, r)
			}
		}
		if err != nil {
			return nil, err
		}
		if ok {
			for _, a := range head.Agents {
				from[len(summaries)] = storedAgent{run: r, head: head, agent: a.Index}
				summaries = append(summaries, a.Summary)
			}
			continue
		}
		fresh, err := s.summariesFromResults(ctx, r)
		if err != nil {
			return nil, err
		}
		summaries = append(summaries, fresh...)
	}
	kept := leaderboard.LatestEligibleIndices(summaries)
	out := make([]leaderboard.Summary, 0, len(kept))
	tallies := map[string]map[int][]leaderboard.TaskTally{} // by run id
	for _, i := range kept {
		src, ok := from[i]
		if !ok {
			out = append(out, summaries[i])
			continue
		}
		byAgent, read := tallies[src.run.ID]
		if !read {
			if byAgent, err = s.taskTallies(ctx, src.run, src.head); err != nil {
				return nil, err
			}
			tallies[src.run.ID] = byAgent
		}
		sum := summaries[i]
		out = append(out, leaderboard.SummarizeTallies(
			leaderboard.EntrantTallies{Entrant: sum.Entrant, Run: sum.Run, Tasks: byAgent[src.agent]}, leaderboard.Options{}))
	}
	return out, nil
}

// storedAgent names one agent of a finished run and the run's current
// metrics head.
type storedAgent struct {
	run   run.Run
	head  *RunMetrics
	agent int
}

// storedSummaries returns a finished run's stored metrics head, whose
// agents' summaries lack their per-task values, and whether it keeps
// per-task tallies and is current: it covers every result of the run and
// every agent in its present status.
func (s *Service) storedSummaries(ctx context.Context, r run.Run) (*RunMetrics, bool, error) {
	var m RunMetrics
	err := s.recs.RunMetrics(ctx, r.ID, &m)
	if errors.Is(err, records.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("metrics of run %s: %w", r.ID, err)
	}
	if m.TaskParts == 0 {
		return nil, false, nil
	}
	t, err := s.recs.RunTally(ctx, r.ID)
	if err != nil {
		return nil, false, fmt.Errorf("tally of run %s: %w", r.ID, err)
	}
	if int64(m.Results) < t.Done {
		return nil, false, nil
	}
	// An agent's status is part of its eligibility, and an agent's own
	// change never triggers a recompute: metrics that saw an agent still
	// going while it has ended since are stale.
	agents, err := s.recs.Agents(ctx, r.ID)
	if err != nil {
		return nil, false, fmt.Errorf("agents of run %s: %w", r.ID, err)
	}
	finished := make(map[int]bool, len(agents))
	for _, a := range agents {
		finished[a.Index] = a.Status == run.Finished
	}
	for _, a := range m.Agents {
		if a.Summary.Run.AgentFinished != finished[a.Index] {
			return nil, false, nil
		}
	}
	return &m, len(m.Agents) == len(agents), nil
}

// taskTallies reads the per-task tallies by agent index that a finished
// run's metrics head names. Tallies that cannot be read (missing or
// unreadable parts) are recomputed once, and the run's results tallied when
// even that fails, so one run's damaged metrics cannot hold up its
// benchmark's board.
func (s *Service) taskTallies(ctx context.Context, r run.Run, head *RunMetrics) (map[int][]leaderboard.TaskTally, error) {
	byAgent, err := readTallies(ctx, s.recs, *head)
	if err == nil {
		return byAgent, nil
	}
	s.log.WarnContext(ctx, "stored task tallies unusable; recomputing the run's metrics", "run_id", r.ID, "err", err)
	var ok bool
	if err = s.RecomputeRun(ctx, r.ID); err == nil {
		if byAgent, ok, err = ReadRunTallies(ctx, s.recs, r.ID); err == nil && ok {
			return byAgent, nil
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	inputs, agents, _, err := s.entrantInputs(ctx, r)
	if err != nil {
		return nil, err
	}
	byAgent = make(map[int][]leaderboard.TaskTally, len(agents))
	for i, a := range agents {
		byAgent[a.Index] = leaderboard.Tally(inputs[i]).Tasks
	}
	return byAgent, nil
}

// summariesFromResults summarizes a finished run's agents from its results.
// Boards show no per-category scores, so none are computed.
func (s *Service) summariesFromResults(ctx context.Context, r run.Run) ([]leaderboard.Summary, error) {
	inputs, _, _, err := s.entrantInputs(ctx, r)
	if err != nil {
		return nil, err
	}
	out := make([]leaderboard.Summary, len(inputs))
	for i := range inputs {
		out[i] = leaderboard.Summarize(inputs[i], leaderboard.Options{})
	}
	return out, nil
}

// boardParts renders the boards as stored parts (rows chunked by size) and
// counts the parts of each metric.
func boardParts(boards []leaderboard.Board) ([]records.LeaderboardPart, map[string]int, error) {
	var parts []records.LeaderboardPart
	counts := map[string]int{}
	for _, b := range boards {
		counts[string(b.Metric)] = 0
		for gi, g := range b.Groups {
			head := BoardGroup{TaskSet: g.TaskSet, ManifestVersion: g.ManifestVersion, ManifestDigest: g.ManifestDigest, K: g.K}
			rows := make([]BoardRow, len(g.Rows))
			for i := range g.Rows {
				rows[i] = boardRow(g.Rows[i], g.K)
			}
			chunks, err := chunkBySize(rows, partBytes)
			if err != nil {
				return nil, nil, err
			}
			if len(chunks) == 0 {
				chunks = [][]BoardRow{nil}
			}
			for i, c := range chunks {
				group := head
				group.Rows = c
				data, err := json.Marshal(boardPart{Group: group, Index: i})
				if err != nil {
					return nil, nil, fmt.Errorf("encode leaderboard part: %w", err)
				}
				parts = append(parts, records.LeaderboardPart{Metric: string(b.Metric), Group: gi, Index: i, Data: data})
				counts[string(b.Metric)]++
			}
		}
	}
	return parts, counts, nil
}

func boardRow(r leaderboard.Row, k int) BoardRow {
	s := r.Summary
	row := BoardRow{Rank: r.Rank, Best: r.Best, TiedWithBest: r.TiedWithBest, Value: r.Value, Entrant: s.Entrant,
		RunID: s.Run.ID, FinishedAt: s.Run.FinishedAt, TaskSet: s.Run.TaskSet, Pass1: s.Pass1,
		CostPerTask: s.CostPerTask, TimePerTask: s.TimePerTask, TokensPerTask: s.TokensPerTask, VsBest: r.VsBest}
	if k >= 1 && k <= len(s.PassAtK) {
		p := s.PassAtK[k-1]
		row.PassAtK = &p
	}
	return row
}

// ReadBoard returns the stored board of one metric of a benchmark: one
// read of the head and one query of that metric's parts. Before the first
// recompute the board has no groups.
func ReadBoard(ctx context.Context, recs *records.Store, ws, key string, metric leaderboard.Metric) (Board, error) {
	b, _, err := readBoard(ctx, recs, ws, key, metric)
	return b, err
}

func readBoard(ctx context.Context, recs *records.Store, ws, key string, metric leaderboard.Metric) (Board, records.LeaderboardHead, error) {
	out := Board{Metric: metric, Groups: []BoardGroup{}}
	for range readAttempts {
		head, err := recs.LeaderboardHead(ctx, ws, key)
		if errors.Is(err, records.ErrNotFound) {
			return out, head, nil
		}
		if err != nil {
			return out, head, err
		}
		raw, err := recs.LeaderboardParts(ctx, ws, key, head.Generation, string(metric))
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
			if p.Index > 0 && len(out.Groups) > 0 {
				last := &out.Groups[len(out.Groups)-1]
				last.Rows = append(last.Rows, p.Group.Rows...)
				continue
			}
			if p.Group.Rows == nil {
				p.Group.Rows = []BoardRow{}
			}
			out.Groups = append(out.Groups, p.Group)
		}
		return out, head, nil
	}
	return out, records.LeaderboardHead{}, fmt.Errorf("leaderboard of %s: %w", key, records.ErrContention)
}

// ReadLeaderboard returns every board of a benchmark's stored leaderboard
// (ErrNotFound of records before the first recompute).
func ReadLeaderboard(ctx context.Context, recs *records.Store, ws, key string) (Leaderboard, error) {
	l := Leaderboard{Workspace: ws, Benchmark: key}
	for _, m := range leaderboard.Metrics {
		b, head, err := readBoard(ctx, recs, ws, key, m)
		if err != nil {
			return l, err
		}
		if head.Version == 0 {
			return l, fmt.Errorf("leaderboard of %s: %w", key, records.ErrNotFound)
		}
		l.Generation, l.ComputedAt = head.Generation, head.ComputedAt
		l.Boards = append(l.Boards, b)
	}
	return l, nil
}
