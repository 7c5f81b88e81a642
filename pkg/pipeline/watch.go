package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// Watch is the watchdog, run on a schedule. For every run not yet ended it:
//   - re-sends the plan message of a run left pending (or half-sent) longer
//     than LaunchTimeout, at most once per LaunchTimeout, and fails the run
//     after run.MaxPlanAttempts planning attempts;
//   - carries on stopping a stopping run;
//   - stops a sandbox past its deadline after recording the deadline as the
//     stop reason (the grader then errors the slot as infra: retried if
//     retries are left);
//   - re-queues a slot stuck launching longer than LaunchTimeout (same
//     generation and launch id, so a sandbox that did start is adopted), or
//     records the sandbox when the driver does list it;
//   - sends, for a running slot whose sandbox the driver no longer lists
//     but describes as ended, the completion the driver reports (its own
//     was dropped), a tick after it was first found missing;
//   - declares lost a running slot whose sandbox the driver has not listed
//     for LostGrace (the platform crashed under it): a Lost completion,
//     graded as infra.
//
// Errors of one run do not stop the others; they are returned joined.
func (s *Watchdog) Watch(ctx context.Context) error {
	ids, err := s.recs.Runs.ActiveRuns(ctx)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if err := s.watchRun(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("watch run %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Watchdog) watchRun(ctx context.Context, id string) error {
	r, err := s.recs.Runs.Run(ctx, id)
	if errors.Is(err, records.ErrNotFound) {
		return s.recs.Runs.ClearActiveRun(ctx, id)
	}
	if err != nil {
		return err
	}
	now := s.now()
	switch {
	case r.Status.Terminal():
		return s.recs.Runs.ClearActiveRun(ctx, id)
	case r.Status == run.Pending, r.Status == run.Queued && r.SentBatches*planBatch < r.TotalSlots():
		if err := s.retryPlanning(ctx, r, now); err != nil {
			return err
		}
	case r.Status == run.Stopping:
		if err := s.drain(ctx, r.ID, false); err != nil {
			return err
		}
	}
	if !r.Planned {
		return nil
	}
	return s.watchSlots(ctx, r, now)
}

func (s *Watchdog) watchSlots(ctx context.Context, r run.Run, now time.Time) error {
	handles, err := s.ports.Sandboxes.List(ctx, r.ID)
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	live := make(map[string]sandbox.Handle, len(handles))
	for _, h := range handles {
		live[h.LaunchID] = h
	}
	ended := &endedSandboxes{driver: s.ports.Sandboxes, runID: r.ID}
	cursor := ""
	for {
		slots, next, err := s.recs.Runs.Slots(ctx, r.ID, records.ActiveSlots, cursor, 500)
		if err != nil {
			return err
		}
		for _, sl := range slots {
			if err := s.watchSlot(ctx, r, sl, live, ended, now); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// endedSandboxes asks the driver for a run's ended sandboxes once, when a
// slot first needs them.
type endedSandboxes struct {
	driver   SandboxWatcher
	runID    string
	asked    bool
	byLaunch map[string]sandbox.Completion
}

func (e *endedSandboxes) lookup(ctx context.Context, launchID string) (sandbox.Completion, bool, error) {
	if !e.asked {
		cs, err := e.driver.Ended(ctx, e.runID)
		if err != nil {
			return sandbox.Completion{}, false, fmt.Errorf("ended sandboxes: %w", err)
		}
		e.asked, e.byLaunch = true, make(map[string]sandbox.Completion, len(cs))
		for _, c := range cs {
			e.byLaunch[c.LaunchID] = c
		}
	}
	c, ok := e.byLaunch[launchID]
	return c, ok, nil
}

func (s *Watchdog) watchSlot(ctx context.Context, r run.Run, sl run.Slot, live map[string]sandbox.Handle, ended *endedSandboxes, now time.Time) error {
	h, listed := live[sl.LaunchID]
	switch sl.Status {
	case run.SlotLaunching:
		if now.Sub(sl.LaunchedAt) <= s.opts.LaunchTimeout {
			return nil
		}
		if listed {
			return s.adopt(ctx, r, sl, h)
		}
		return s.requeue(ctx, s.ports.Slots, sl)
	case run.SlotRunning:
		if !listed {
			return s.watchMissing(ctx, sl, ended, now)
		}
		if !sl.Deadline.IsZero() && now.After(sl.Deadline) {
			s.appendLog(ctx, r.ID, sl.ID, records.LevelWarn, "watchdog", fmt.Sprintf("slot %s passed its deadline; stopping sandbox %s", sl.ID, sl.SandboxID))
			return s.stopSlot(ctx, sl, run.StopDeadline)
		}
		if sl.StopReason != "" {
			return s.stopSlot(ctx, sl, sl.StopReason) // stop again: the first request may have been lost
		}
	}
	return nil
}

// adopt records a sandbox the driver lists for a slot whose dispatcher did
// not get to record it.
func (s *Watchdog) adopt(ctx context.Context, r run.Run, sl run.Slot, h sandbox.Handle) error {
	deadline, err := s.deadline(ctx, r, sl, h.StartedAt)
	if err != nil {
		return err
	}
	_, err = s.recs.Runs.UpdateSlot(ctx, r.ID, sl.ID, func(cur *run.Slot) error {
		if cur.Generation != sl.Generation || cur.Status != run.SlotLaunching {
			return records.ErrNoChange
		}
		cur.SandboxID, cur.Deadline = h.ID, deadline
		return cur.SetStatus(run.SlotRunning)
	})
	if err != nil {
		return fmt.Errorf("adopt sandbox %s for %s/%s: %w", h.ID, r.ID, sl.ID, err)
	}
	return s.markRunning(ctx, r, sl.Agent)
}

// requeue puts a slot stuck launching back to queued (same generation),
// releasing its gates, and sends its slot message again.
func (s *core) requeue(ctx context.Context, slots Sender, sl run.Slot) error {
	next := sl
	if err := next.SetStatus(run.SlotQueued); err != nil {
		return err
	}
	next.LaunchedAt, next.StopReason = time.Time{}, ""
	var ops records.Ops
	ops.Add(records.SlotOp(next))
	ops.Append(records.RunGateOp(sl.RunID, -1, 0), records.GlobalGateOp(-1, 0))
	ops.Add(records.LogOp(records.LogLine{RunID: sl.RunID, At: s.now(), Level: records.LevelWarn, Step: "watchdog", Slot: sl.ID,
		Message: fmt.Sprintf("slot %s was stuck launching; queued again", sl.ID)}))
	err := ops.Transact(ctx, s.recs)
	if records.IsConditionFailed(err) {
		return nil // the slot moved on meanwhile
	}
	if err != nil {
		return fmt.Errorf("re-queue %s/%s: %w", sl.RunID, sl.ID, err)
	}
	return resendSlot(ctx, slots, SlotMessage{SchemaVersion: SchemaVersion, RunID: sl.RunID, SlotID: sl.ID, Generation: sl.Generation, Deferrals: sl.Deferrals}, 0)
}

// watchMissing handles a running slot whose sandbox the driver does not list:
// the first sighting is recorded; at a later tick, a sandbox the driver
// describes as ended gets its completion sent as the driver reports it (its
// own was dropped: the grader grades what happened, and ignores the copy if
// the original arrives after all); once missing for LostGrace it is
// declared lost.
func (s *Watchdog) watchMissing(ctx context.Context, sl run.Slot, ended *endedSandboxes, now time.Time) error {
	if sl.MissingSince.IsZero() {
		_, err := s.recs.Runs.UpdateSlot(ctx, sl.RunID, sl.ID, func(cur *run.Slot) error {
			if cur.Generation != sl.Generation || cur.Status != run.SlotRunning || !cur.MissingSince.IsZero() {
				return records.ErrNoChange
			}
			cur.MissingSince = now
			return nil
		})
		return err
	}
	// A tick later the completion had its time to arrive through its own
	// path; the driver's description of the ended sandbox stands in for it.
	c, ok, err := ended.lookup(ctx, sl.LaunchID)
	if err != nil {
		return err
	}
	if ok && c.Generation == sl.Generation && c.SlotID == sl.ID {
		s.appendLog(ctx, sl.RunID, sl.ID, records.LevelWarn, "watchdog",
			fmt.Sprintf("sandbox %s of slot %s ended (%s) but its completion never arrived; grading what the sandbox driver reports", sl.SandboxID, sl.ID, c.Reason))
		return sendCompletion(ctx, s.ports.Completions, c)
	}
	// Missing for LostGrace is lost: with a watchdog period that divides
	// LostGrace, the tick LostGrace after the first sighting decides, not
	// the one after it.
	if now.Sub(sl.MissingSince) < s.opts.LostGrace {
		return nil
	}
	s.appendLog(ctx, sl.RunID, sl.ID, records.LevelWarn, "watchdog", fmt.Sprintf("sandbox %s of slot %s is gone; declaring it lost", sl.SandboxID, sl.ID))
	return sendCompletion(ctx, s.ports.Completions, sandbox.Completion{
		SandboxID: sl.SandboxID, LaunchID: sl.LaunchID, RunID: sl.RunID, SlotID: sl.ID, Generation: sl.Generation,
		Reason: sandbox.Lost, Message: fmt.Sprintf("the sandbox driver has not listed sandbox %s since %s", sl.SandboxID, sl.MissingSince.Format(time.RFC3339)),
		StartedAt: sl.LaunchedAt, StoppedAt: now,
	})
}

// deadline is when the sandbox of a slot started at start must be stopped.
func (s *Watchdog) deadline(ctx context.Context, r run.Run, sl run.Slot, start time.Time) (time.Time, error) {
	task, err := s.facts.task(ctx, r.ManifestWorkspace, r.Benchmark, r.ManifestVersion, sl.Task)
	if err != nil {
		return time.Time{}, err
	}
	return start.Add(s.lifetime(task, r.Settings.TimeoutMultiplier)), nil
}

// lifetime is a sandbox's allowed lifetime: (agent + verifier timeout,
// summed over a multi-step task's steps) × multiplier + grace, or
// MaxSandboxLifetime when the task (or a step) sets no agent timeout.
func (s *core) lifetime(task *records.Task, mult float64) time.Duration {
	if mult <= 0 {
		mult = 1
	}
	agent, verifier := task.Timeouts() // a multi-step task's: its steps' sums
	if agent == nil {
		return s.opts.MaxSandboxLifetime
	}
	return scaled(*agent+verifier, mult) + s.opts.DeadlineGrace
}
