package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

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
func (s *Recomputer) RecomputeLeaderboard(ctx context.Context, ws, key string) error {
	watermark, err := s.recs.Boards.NextLeaderboardWatermark(ctx, ws, key)
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
	counts, err := s.recs.Boards.PutLeaderboardParts(ctx, ws, key, watermark, leaderboard.Boards(leaderboard.LatestEligible(summaries)))
	if err != nil {
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
func (s *Recomputer) swapBoard(ctx context.Context, ws, key string, watermark int64, counts map[string]int) error {
	for range swapAttempts {
		head, err := s.recs.Boards.LeaderboardHead(ctx, ws, key)
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
		_, err = s.recs.Boards.SwapLeaderboardHead(ctx, next)
		if records.IsConditionFailed(err) {
			continue
		}
		if err != nil {
			return err
		}
		return s.recs.Boards.DeleteLeaderboardParts(ctx, ws, key, head.Generation)
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
func (s *Recomputer) finishedSummaries(ctx context.Context, ws, key string) ([]leaderboard.Summary, error) {
	runs, err := s.recs.Runs.RunsByBenchmark(ctx, ws, key)
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
			if r, err = s.recs.Runs.Run(ctx, r.ID); err != nil {
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
	head  *records.RunMetrics
	agent int
}

// storedSummaries returns a finished run's stored metrics head, whose
// agents' summaries lack their per-task values, and whether it keeps
// per-task tallies and is current: it covers every result of the run and
// every agent in its present status.
func (s *Recomputer) storedSummaries(ctx context.Context, r run.Run) (*records.RunMetrics, bool, error) {
	m, err := s.recs.Runs.RunMetricsHead(ctx, r.ID)
	if errors.Is(err, records.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("metrics of run %s: %w", r.ID, err)
	}
	if m.TaskParts == 0 {
		return nil, false, nil
	}
	t, err := s.recs.Runs.RunTally(ctx, r.ID)
	if err != nil {
		return nil, false, fmt.Errorf("tally of run %s: %w", r.ID, err)
	}
	if int64(m.Results) < t.Done {
		return nil, false, nil
	}
	// An agent's status is part of its eligibility, and an agent's own
	// change never triggers a recompute: metrics that saw an agent still
	// going while it has ended since are stale.
	agents, err := s.recs.Runs.Agents(ctx, r.ID)
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
func (s *Recomputer) taskTallies(ctx context.Context, r run.Run, head *records.RunMetrics) (map[int][]leaderboard.TaskTally, error) {
	byAgent, err := s.recs.Runs.HeadTallies(ctx, *head)
	if err == nil {
		return byAgent, nil
	}
	s.log.WarnContext(ctx, "stored task tallies unusable; recomputing the run's metrics", "run_id", r.ID, "err", err)
	var ok bool
	if err = s.RecomputeRun(ctx, r.ID); err == nil {
		if byAgent, ok, err = s.recs.Runs.RunTallies(ctx, r.ID); err == nil && ok {
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
func (s *Recomputer) summariesFromResults(ctx context.Context, r run.Run) ([]leaderboard.Summary, error) {
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
