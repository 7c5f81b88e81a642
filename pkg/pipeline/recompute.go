package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Recompute consumes change-stream records: created attempt results
// refresh their run's metrics while the run is going (see metricsDue); a
// run that ended refreshes its metrics, and a run that finished its
// benchmark's leaderboard too. Both are recomputed from the stored state,
// never incrementally, so redelivered and out-of-order changes give the same
// result. Each run and board is recomputed at most once per batch.
func (s *Recomputer) Recompute(ctx context.Context, changes []store.Change) error {
	type boardKey struct{ ws, key string }
	metrics := map[string]bool{} // run id → forced (the run ended)
	inserted := map[string]int{} // run id → results created in the batch
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
		if ev.ResultInserted {
			inserted[ev.RunID]++
			if !metrics[ev.RunID] {
				metrics[ev.RunID] = false
			}
		}
		if ev.Run != nil && ev.Run.Status.Terminal() && ev.OldStatus != ev.Run.Status {
			metrics[ev.RunID] = true
			if ev.Run.Status == run.Finished {
				boards[boardKey{ev.Run.Workspace, ev.Run.Benchmark}] = true
			}
		}
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(metrics)) {
		if !metrics[id] && !s.metricsDue(id, inserted[id]) {
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

// metricsGrowth bounds how often a going run's metrics are recomputed by its
// size: only once the run has 1/metricsGrowth more results than the last
// recompute covered. A recompute reads every result of the run, so this
// keeps the results read per attempt below metricsGrowth + 1 however large
// the run, while small runs still refresh every MetricsInterval.
const metricsGrowth = 16

// metricsMark is what this process knows of a going run's last metrics
// recompute.
type metricsMark struct {
	at      time.Time
	results int // results the recompute covered
	pending int // results created since
}

// metricsDue reports whether a going run's metrics should be recomputed now
// that created more results were seen: at least MetricsInterval after the
// last recompute by this process, and once the run grew by 1/metricsGrowth
// since. A run this process has not recomputed yet is due. (In the cloud
// every result of a run arrives on the same stream shard, so the one
// process reading the shard sees them all.)
func (s *Recomputer) metricsDue(runID string, created int) bool {
	now := s.now()
	s.metricsMu.Lock()
	defer s.metricsMu.Unlock()
	m, ok := s.metricsAt[runID]
	m.pending += created
	if ok && (now.Sub(m.at) < s.opts.MetricsInterval || m.pending*metricsGrowth < m.results) {
		s.metricsAt[runID] = m
		return false
	}
	return true
}

// markMetrics notes a recompute of a run's metrics that covered results.
func (s *Recomputer) markMetrics(runID string, results int) {
	s.metricsMu.Lock()
	defer s.metricsMu.Unlock()
	if len(s.metricsAt) >= maxCached {
		clear(s.metricsAt)
	}
	s.metricsAt[runID] = metricsMark{at: s.now(), results: results}
}

// RecomputeRun recomputes and stores a run's metrics. A finished run's
// metrics also keep every agent's per-task tallies, from which leaderboard
// recomputes summarize it without reading its results again.
func (s *Recomputer) RecomputeRun(ctx context.Context, runID string) error {
	r, err := s.recs.Runs.Run(ctx, runID)
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
	m := records.RunMetrics{RunID: r.ID, Results: n, Agents: make([]records.AgentMetrics, len(agents)), Generation: s.now().UnixNano()}
	var tallies []records.AgentTallies
	for i, a := range agents {
		t := leaderboard.Tally(inputs[i])
		m.Agents[i] = records.AgentMetrics{Index: a.Index, Name: a.Name, Harness: a.Harness, Model: a.Model,
			Summary: leaderboard.SummarizeTallies(t, opts)}
		if r.Status == run.Finished {
			tallies = append(tallies, records.AgentTallies{Agent: a.Index, Tasks: t.Tasks})
		}
	}
	if err := s.recs.Runs.PutRunMetrics(ctx, m, tallies); err != nil {
		return fmt.Errorf("recompute run %s: %w", runID, err)
	}
	s.markMetrics(runID, n)
	return nil
}

// entrantInputs maps a run's agents and final results to scoring inputs,
// index-aligned with the agents; n counts the final results.
func (s *Recomputer) entrantInputs(ctx context.Context, r run.Run) ([]leaderboard.EntrantInput, []run.Agent, int, error) {
	agents, err := s.recs.Runs.Agents(ctx, r.ID)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("agents of run %s: %w", r.ID, err)
	}
	results, err := s.recs.Runs.AllResults(ctx, r.ID)
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
			Entrant: leaderboard.Entrant{Harness: a.Harness, Model: a.RankedModel()},
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
		// A cancelled attempt never ran (a stop): it scores nothing, and its
		// task counted without a scored attempt would leave pass@1 undefined,
		// so a stopped run's metrics of what ran would vanish at the stop.
		if res.Outcome == run.Cancelled {
			continue
		}
		inputs[res.Agent].Attempts = append(inputs[res.Agent].Attempts, attemptOf(res))
	}
	perAgent := len(r.Tasks) * r.Settings.AttemptsPerTask
	for i := range inputs {
		inputs[i].Run.AllSlotsReported = len(inputs[i].Attempts) == perAgent
	}
	return inputs, agents, n, nil
}

func attemptOf(res run.Result) leaderboard.Attempt {
	class := leaderboard.AgentError
	if res.ErrorClass == run.Infra {
		class = leaderboard.PlatformError
	}
	return leaderboard.Attempt{
		Task: res.Task, Outcome: leaderboard.Outcome(res.Outcome), ErrorClass: class,
		CostUSD: res.CostUSD, InputTokens: res.InputTokens, OutputTokens: res.OutputTokens, CacheTokens: res.CacheTokens,
		DurationSec: float64(res.DurationMS) / 1000,
		HasCost:     res.CostReported, HasTokens: res.UsageReported, HasDuration: res.DurationMS > 0,
	}
}

// scoringOptions gives the per-category breakdown of the run's manifest.
func (s *Recomputer) scoringOptions(ctx context.Context, r run.Run) (leaderboard.Options, error) {
	cats := map[string]string{}
	for _, name := range r.Tasks {
		t, err := s.facts.task(ctx, r.ManifestWorkspace, r.Benchmark, r.ManifestVersion, name)
		if err != nil {
			return leaderboard.Options{}, err
		}
		if t.Category != "" {
			cats[name] = t.Category
		}
	}
	return leaderboard.Options{Categories: cats}, nil
}
