package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// errUnplannable marks a planning failure no retry can fix.
var errUnplannable = errors.New("the run cannot be planned")

// Plan fans a run out into slots (see plan). Before the first slot exists
// it checks what planning relies on and a retry cannot change — the run's
// stored shape and its pinned manifest — and fails the run at once when
// that is unusable, with the reason on the run and in its log. Any other
// planning failure is counted on the run (PlanAttempts) and returned, so the
// message is delivered again, until run.MaxPlanAttempts failures fail the
// run. A message for a run that does not exist is dropped.
func (s *Planner) Plan(ctx context.Context, m PlanMessage) error {
	r, err := s.recs.Runs.Run(ctx, m.RunID)
	if errors.Is(err, records.ErrNotFound) {
		s.log.WarnContext(ctx, "plan message for an unknown run dropped", "run_id", m.RunID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("plan run %s: %w", m.RunID, err)
	}
	if !r.Planned && !r.Status.Terminal() {
		if err := s.checkPlannable(ctx, r); err != nil {
			return s.planFailed(ctx, r.ID, err)
		}
	}
	if err := s.plan(ctx, m); err != nil {
		return s.planFailed(ctx, r.ID, err)
	}
	return nil
}

// planningDone reports whether the planner has nothing left to do for r.
func planningDone(r run.Run) bool {
	return r.Status.Terminal() || (r.Planned && (r.Status == run.Stopping || r.SentBatches*planBatch >= r.TotalSlots()))
}

// checkPlannable verifies the run's stored shape (agents, tasks, attempts,
// concurrency) and that its pinned manifest version exists with the pinned
// digest and every task the run selected. A problem wraps errUnplannable;
// any other error is a failure to check.
func (s *Planner) checkPlannable(ctx context.Context, r run.Run) error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch {
	case r.Agents < 1:
		add("the run has no agents")
	case len(r.Tasks) == 0:
		add("the run selects no tasks")
	case r.Settings.AttemptsPerTask < 1:
		add("attempts_per_task is %d; it must be at least 1", r.Settings.AttemptsPerTask)
	case r.Settings.MaxConcurrentAttempts < 1:
		add("max_concurrent_attempts is %d; it must be at least 1", r.Settings.MaxConcurrentAttempts)
	}
	if sorted := slices.Sorted(slices.Values(r.Tasks)); len(slices.Compact(sorted)) != len(r.Tasks) {
		add("the run's task list names a task twice")
	}
	if len(problems) == 0 {
		agents, err := s.recs.Runs.Agents(ctx, r.ID)
		if err != nil {
			return fmt.Errorf("check run %s: %w", r.ID, err)
		}
		if len(agents) != r.Agents {
			add("the run names %d agents but %d agent records are stored", r.Agents, len(agents))
		}
		if err := s.checkPinnedManifest(ctx, r, add); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(problems, "; "), errUnplannable)
	}
	return nil
}

func (s *Planner) checkPinnedManifest(ctx context.Context, r run.Run, add func(string, ...any)) error {
	m, _, err := s.recs.Benchmarks.Manifest(ctx, r.ManifestWorkspace, r.Benchmark, r.ManifestVersion)
	if errors.Is(err, records.ErrNotFound) {
		add("the pinned manifest version %q of benchmark %s is missing", r.ManifestVersion, r.Benchmark)
		return nil
	}
	if err != nil {
		return fmt.Errorf("check run %s: %w", r.ID, err)
	}
	if m.Digest != r.ManifestDigest {
		add("the pinned manifest version %q of benchmark %s has digest %s, the run pinned %s", r.ManifestVersion, r.Benchmark, m.Digest, r.ManifestDigest)
	}
	have := make(map[string]bool, len(m.Tasks))
	for _, t := range m.Tasks {
		have[t.Name] = true
	}
	var missing []string
	for _, name := range r.Tasks {
		if !have[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		shown := missing[:min(len(missing), 10)]
		add("%d of the run's tasks are missing from manifest version %q: %s", len(missing), r.ManifestVersion, strings.Join(shown, ", "))
	}
	return nil
}

// planFailed handles a failed planning attempt (see Plan). It returns nil
// once the run is failed (the message is done), cause otherwise.
func (s *Planner) planFailed(ctx context.Context, runID string, cause error) error {
	if ctx.Err() != nil {
		return cause
	}
	if errors.Is(cause, errUnplannable) {
		return s.failPlanning(ctx, runID, "planning failed: "+cause.Error())
	}
	attempts := 0
	r, err := s.recs.Runs.UpdateRun(ctx, runID, func(r *run.Run) error {
		attempts = 0 // a retried update decides afresh
		if planningDone(*r) {
			return records.ErrNoChange
		}
		r.PlanAttempts++
		attempts = r.PlanAttempts
		return nil
	})
	if err != nil || attempts == 0 {
		return errors.Join(cause, err)
	}
	if attempts >= run.MaxPlanAttempts {
		return s.failPlanning(ctx, r.ID, fmt.Sprintf("planning failed %d times; last error: %v", attempts, cause))
	}
	s.appendLog(ctx, r.ID, "", records.LevelWarn, "planned",
		fmt.Sprintf("planning failed (attempt %d of %d); it will be tried again: %v", attempts, run.MaxPlanAttempts, cause))
	return cause
}

// retryPlanning is the watchdog's part: a run whose planning has not
// completed LaunchTimeout after it was accepted (or last retried) gets its
// plan message again, counted as an attempt; after run.MaxPlanAttempts the
// run fails.
func (s *Watchdog) retryPlanning(ctx context.Context, r run.Run, now time.Time) error {
	since := r.CreatedAt
	if r.Status == run.Queued {
		since = r.QueuedAt
	}
	if r.PlanRetriedAt.After(since) {
		since = r.PlanRetriedAt
	}
	if now.Sub(since) <= s.opts.LaunchTimeout {
		return nil
	}
	attempts := 0
	r, err := s.recs.Runs.UpdateRun(ctx, r.ID, func(r *run.Run) error {
		// A retried update decides afresh.
		attempts = 0
		if planningDone(*r) || r.PlanRetriedAt.After(since) { // done, or retried by another watchdog
			return records.ErrNoChange
		}
		r.PlanAttempts++
		r.PlanRetriedAt = now
		attempts = r.PlanAttempts
		return nil
	})
	if err != nil || attempts == 0 {
		return err
	}
	if attempts >= run.MaxPlanAttempts {
		return s.failPlanning(ctx, r.ID, fmt.Sprintf("planning did not complete after %d attempts", attempts))
	}
	s.appendLog(ctx, r.ID, "", records.LevelWarn, "planned",
		fmt.Sprintf("planning did not complete in time; planning again (attempt %d of %d)", attempts+1, run.MaxPlanAttempts))
	return sendPlan(ctx, s.ports.Plan, r.ID)
}

// failPlanning ends a run whose planning failed: failed with the reason
// (stopped when a stop was already requested), its agents likewise, and a
// log line.
func (s *core) failPlanning(ctx context.Context, runID, reason string) error {
	now := s.now()
	ended := false
	r, err := s.recs.Runs.UpdateRun(ctx, runID, func(r *run.Run) error {
		ended = false // a retried update decides afresh
		if r.Status.Terminal() {
			return records.ErrNoChange
		}
		ended = true
		if r.Status == run.Stopping {
			r.Reason += "; " + reason
			return r.SetStatus(run.Stopped, now)
		}
		r.Reason = reason
		return r.SetStatus(run.Failed, now)
	})
	if err != nil {
		return fmt.Errorf("fail run %s: %w", runID, err)
	}
	for i := range r.Agents {
		if _, err := s.recs.Runs.UpdateAgent(ctx, r.ID, i, func(a *run.Agent) error {
			switch {
			case a.Status.Terminal():
				return records.ErrNoChange
			case a.Status == run.Stopping:
				return a.SetStatus(run.Stopped, now)
			}
			return a.SetStatus(run.Failed, now)
		}); err != nil && !errors.Is(err, records.ErrNotFound) {
			return fmt.Errorf("fail run %s agent %d: %w", r.ID, i, err)
		}
	}
	if ended {
		s.appendLog(ctx, r.ID, "", records.LevelError, string(r.Status), reason)
		s.log.ErrorContext(ctx, "run failed in planning", "run_id", r.ID, "reason", reason)
	}
	return s.recs.Runs.ClearActiveRun(ctx, r.ID)
}
