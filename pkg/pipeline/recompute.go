package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// RunMetrics are a run's scores per agent, recomputed from its attempt
// results (stored on the run; see records.Store.RunMetrics).
type RunMetrics struct {
	RunID string `json:"run_id"`
	// Results counts the final attempt results the metrics are computed from.
	Results int            `json:"results"`
	Agents  []AgentMetrics `json:"agents"`
}

// AgentMetrics is one run agent's summary.
type AgentMetrics struct {
	Index   int                 `json:"index"`
	Name    string              `json:"name,omitempty"`
	Harness string              `json:"harness"`
	Model   string              `json:"model,omitempty"`
	Summary leaderboard.Summary `json:"summary"`
}

// Leaderboard is a benchmark's stored leaderboard in one workspace: one
// board per metric (leaderboard.Metrics order), each from the latest eligible
// run of every entrant (see records.Store.Leaderboard).
type Leaderboard struct {
	Workspace string              `json:"workspace"`
	Benchmark string              `json:"benchmark"`
	Boards    []leaderboard.Board `json:"boards"`
}

// Board returns the board ranked by metric.
func (l Leaderboard) Board(metric leaderboard.Metric) (leaderboard.Board, bool) {
	for _, b := range l.Boards {
		if b.Metric == metric {
			return b, true
		}
	}
	return leaderboard.Board{}, false
}

// Recompute consumes change-stream records: a created attempt result
// refreshes its run's metrics (while the run is going, at most once per
// MetricsInterval per process); a run that ended refreshes its metrics, and
// a run that finished its benchmark's leaderboard too. Both are recomputed
// from the stored state, never incrementally, so redelivered and
// out-of-order changes give the same result. Each run and board is
// recomputed at most once per batch.
func (s *Service) Recompute(ctx context.Context, changes []store.Change) error {
	type boardKey struct{ ws, key string }
	metrics := map[string]bool{} // run id → forced (the run ended)
	boards := map[boardKey]bool{}
	for _, c := range changes {
		ev, ok, err := records.DescribeChange(c)
		if err != nil {
			s.log.ErrorContext(ctx, "undecodable change skipped", "change", c.ID, "err", err)
			continue
		}
		if !ok {
			continue
		}
		if ev.ResultInserted && !metrics[ev.RunID] {
			metrics[ev.RunID] = false
		}
		if ev.Run != nil && ev.Run.Status.Terminal() && ev.OldStatus != ev.Run.Status {
			metrics[ev.RunID] = true
			if ev.Run.Status == run.Finished {
				boards[boardKey{ev.Run.Workspace, ev.Run.Benchmark}] = true
			}
		}
	}
	var errs []error
	for _, id := range sortedKeys(metrics) {
		if !metrics[id] && !s.metricsDue(id) {
			continue
		}
		if err := s.RecomputeRun(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	for b := range boards {
		if err := s.RecomputeLeaderboard(ctx, b.ws, b.key); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// metricsDue reports whether a running run's metrics were last recomputed
// (by this process) at least MetricsInterval ago, and if so notes now.
func (s *Service) metricsDue(runID string) bool {
	now := s.now()
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if last, ok := s.metricsAt[runID]; ok && now.Sub(last) < s.opts.MetricsInterval {
		return false
	}
	if len(s.metricsAt) >= maxCached {
		clear(s.metricsAt)
	}
	s.metricsAt[runID] = now
	return true
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// RecomputeRun recomputes and stores a run's metrics.
func (s *Service) RecomputeRun(ctx context.Context, runID string) error {
	r, err := s.recs.Run(ctx, runID)
	if err != nil {
		return fmt.Errorf("recompute run %s: %w", runID, err)
	}
	inputs, agents, n, err := s.entrantInputs(ctx, r)
	if err != nil {
		return err
	}
	opts, err := s.scoringOptions(ctx, r)
	if err != nil {
		return err
	}
	m := RunMetrics{RunID: r.ID, Results: n, Agents: make([]AgentMetrics, len(agents))}
	for i, a := range agents {
		m.Agents[i] = AgentMetrics{Index: a.Index, Name: a.Name, Harness: a.Harness, Model: a.Model,
			Summary: leaderboard.Summarize(inputs[i], opts)}
	}
	if err := s.recs.PutRunMetrics(ctx, r.ID, m); err != nil {
		return fmt.Errorf("recompute run %s: %w", runID, err)
	}
	return nil
}

// RecomputeLeaderboard recomputes and stores the leaderboard of a benchmark
// in a workspace from every finished run's per-attempt results.
func (s *Service) RecomputeLeaderboard(ctx context.Context, ws, key string) error {
	runs, err := s.recs.RunsByBenchmark(ctx, ws, key)
	if err != nil {
		return fmt.Errorf("recompute leaderboard %s/%s: %w", ws, key, err)
	}
	var summaries []leaderboard.Summary
	for _, r := range runs {
		if r.Status != run.Finished {
			continue
		}
		inputs, _, _, err := s.entrantInputs(ctx, r)
		if err != nil {
			return err
		}
		opts, err := s.scoringOptions(ctx, r)
		if err != nil {
			return err
		}
		for _, in := range inputs {
			summaries = append(summaries, leaderboard.Summarize(in, opts))
		}
	}
	board := Leaderboard{Workspace: ws, Benchmark: key, Boards: leaderboard.Boards(leaderboard.LatestEligible(summaries))}
	if err := s.recs.PutLeaderboard(ctx, ws, key, board); err != nil {
		return fmt.Errorf("recompute leaderboard %s/%s: %w", ws, key, err)
	}
	return nil
}

// entrantInputs maps a run's agents and final results to scoring inputs,
// index-aligned with the agents; n counts the final results.
func (s *Service) entrantInputs(ctx context.Context, r run.Run) ([]leaderboard.EntrantInput, []run.Agent, int, error) {
	agents, err := s.recs.Agents(ctx, r.ID)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("agents of run %s: %w", r.ID, err)
	}
	results, err := s.recs.AllResults(ctx, r.ID)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("results of run %s: %w", r.ID, err)
	}
	coverage, taskSet := leaderboard.CoverageSubset, r.TaskSet
	switch {
	case r.FullTaskList:
		coverage, taskSet = leaderboard.CoverageFull, ""
	case r.ParitySet:
		coverage = leaderboard.CoverageParity
	}
	inputs := make([]leaderboard.EntrantInput, len(agents))
	for i, a := range agents {
		inputs[i] = leaderboard.EntrantInput{
			Entrant: leaderboard.Entrant{Harness: a.Harness, Model: a.Model},
			Run: leaderboard.Run{ID: r.ID, FinishedAt: r.EndedAt, TaskSet: taskSet, ManifestVersion: r.ManifestVersion,
				ManifestDigest: r.ManifestDigest, Finished: r.Status == run.Finished, AgentFinished: a.Status == run.Finished,
				Coverage: coverage},
		}
	}
	n := 0
	for _, res := range results {
		if !res.Final() || res.Agent < 0 || res.Agent >= len(inputs) {
			continue
		}
		n++
		inputs[res.Agent].Attempts = append(inputs[res.Agent].Attempts, attemptOf(res))
	}
	perAgent := len(r.Tasks) * r.Settings.AttemptsPerTask
	for i := range inputs {
		inputs[i].Run.AllSlotsReported = len(inputs[i].Attempts) == perAgent
	}
	return inputs, agents, n, nil
}

func attemptOf(res run.Result) leaderboard.Attempt {
	return leaderboard.Attempt{
		Task: res.Task, Outcome: leaderboard.Outcome(res.Outcome),
		CostUSD: res.CostUSD, InputTokens: res.InputTokens, OutputTokens: res.OutputTokens, CacheTokens: res.CacheTokens,
		DurationSec: float64(res.DurationMS) / 1000,
		HasCost:     res.CostReported, HasTokens: res.UsageReported, HasDuration: res.DurationMS > 0,
	}
}

// scoringOptions gives the per-category breakdown of the run's manifest.
func (s *Service) scoringOptions(ctx context.Context, r run.Run) (leaderboard.Options, error) {
	cats := map[string]string{}
	for _, name := range r.Tasks {
		t, err := s.task(ctx, r.ManifestWorkspace, r.Benchmark, r.ManifestVersion, name)
		if err != nil {
			return leaderboard.Options{}, err
		}
		if t.Category != "" {
			cats[name] = t.Category
		}
	}
	return leaderboard.Options{Categories: cats}, nil
}
