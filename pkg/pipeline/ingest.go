package pipeline

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// ingestAttempts bounds how often Ingest re-reads a slot that changed under it.
const ingestAttempts = 16

// Ingest records an attempt result exactly once. In one transaction it
// creates the result (conditional on no result for the same run, slot and
// generation), moves the slot (done, or back to queued as the next
// generation when the grader decided on a retry), adds the result to the run
// and agent counters, releases the concurrency gates the launch held, and
// writes a run log line. A redelivered or stale result changes nothing. After
// the transaction it sends the retry's slot message and, when the last slot
// has finished, ends the agent and the run.
func (s *Ingester) Ingest(ctx context.Context, m ResultMessage) error {
	res := m.Result
	for range ingestAttempts {
		slot, err := s.recs.Runs.Slot(ctx, res.RunID, res.SlotID)
		if err != nil {
			return fmt.Errorf("ingest %s/%s: %w", res.RunID, res.SlotID, err)
		}
		if slot.Generation != res.Generation || slot.Status == run.SlotDone || slot.Status == run.SlotQueued {
			// Applied before, or stale. Finish what a crash may have cut short.
			if res.Retried && slot.Generation == res.Generation+1 && slot.Status == run.SlotQueued {
				if err := s.sendRetry(ctx, slot, res.PlatformRetry); err != nil {
					return err
				}
			}
			return s.settle(ctx, res.RunID, res.Agent)
		}
		err = s.applyResult(ctx, slot, res)
		if records.IsConditionFailed(err) {
			continue
		}
		if err != nil {
			return err
		}
		if res.Retried {
			slot.Generation++
			if err := s.sendRetry(ctx, slot, res.PlatformRetry); err != nil {
				return err
			}
		} else if slot.Status.Active() {
			if err := s.wakeQueued(ctx, res.RunID); err != nil {
				return err
			}
		}
		return s.settle(ctx, res.RunID, res.Agent)
	}
	return fmt.Errorf("ingest %s/%s: slot kept changing: %w", res.RunID, res.SlotID, records.ErrContention)
}

// applyResult is the ingestion transaction (see Ingest).
func (s *core) applyResult(ctx context.Context, slot run.Slot, res run.Result) error {
	next := slot
	if res.Retried {
		if err := next.SetStatus(run.SlotQueued); err != nil {
			return err
		}
		next.Generation++
		switch {
		case res.OutOfSpace:
			next.SpaceRetries++
		case res.PlatformRetry:
			next.PlatformRetries++
		}
		next.Deferrals = 0
		next.LaunchID, next.SandboxID, next.StopReason = "", "", ""
		next.LaunchedAt, next.Deadline, next.MissingSince = time.Time{}, time.Time{}, time.Time{}
	} else {
		if err := next.SetStatus(run.SlotDone); err != nil {
			return err
		}
		next.Outcome = res.Outcome
	}
	deltas := res.Deltas()
	var ops records.Ops
	ops.Add(records.ResultOp(res))
	ops.Add(records.SlotOp(next))
	ops.Append(records.RunTallyOp(res.RunID, deltas), records.AgentTallyOp(res.RunID, res.Agent, deltas))
	if slot.Status.Active() {
		ops.Append(records.RunGateOp(res.RunID, -1, 0), records.GlobalGateOp(-1, 0))
	}
	now := s.now()
	ops.Add(records.LogOp(resultLog(res, now)))
	if l, ok := limitsLog(res, now); ok {
		ops.Add(records.LogOp(l))
	}
	if err := ops.Transact(ctx, s.recs); err != nil {
		return fmt.Errorf("ingest %s/%s generation %d: %w", res.RunID, res.SlotID, res.Generation, err)
	}
	return nil
}

// limitsLog is the run log's line saying what a task's sandbox enforced,
// once per task: from its first agent's first attempt, when final (a
// retried generation's sandbox may not have got that far).
func limitsLog(res run.Result, at time.Time) (records.LogLine, bool) {
	if res.Retried || res.Agent != 0 || res.Attempt != 1 || len(res.Limits) == 0 {
		return records.LogLine{}, false
	}
	return records.LogLine{RunID: res.RunID, At: at, Level: records.LevelInfo, Step: "limits", Slot: res.SlotID,
		Message: fmt.Sprintf("task %s: the sandbox enforced: %s", res.Task, strings.Join(res.Limits, "; "))}, true
}

func resultLog(res run.Result, at time.Time) records.LogLine {
	l := records.LogLine{RunID: res.RunID, At: at, Level: records.LevelInfo, Step: "result", Slot: res.SlotID}
	switch {
	case res.OutOfSpace:
		l.Level, l.Step = records.LevelWarn, "retry"
		l.Message = fmt.Sprintf("slot %s generation %d: the platform's storage was full; running it again once space returns (not counted against max_retries): %s", res.SlotID, res.Generation, res.Message)
		return l
	case res.PlatformRetry:
		l.Level, l.Step = records.LevelWarn, "retry"
		l.Message = fmt.Sprintf("slot %s generation %d: the platform lost this attempt; running it again (not counted against max_retries): %s", res.SlotID, res.Generation, res.Message)
		return l
	case res.Retried:
		what := "infrastructure error"
		if res.Outcome == run.JudgeFailed {
			what = "the LLM judge failed"
		}
		l.Level, l.Step = records.LevelWarn, "retry"
		l.Message = fmt.Sprintf("slot %s generation %d: %s, retrying: %s", res.SlotID, res.Generation, what, res.Message)
		return l
	case res.Outcome == run.Errored:
		l.Level = records.LevelWarn
	case res.Outcome == run.JudgeFailed:
		l.Level = records.LevelWarn
		l.Message = fmt.Sprintf("slot %s generation %d: %s (not scored) %s", res.SlotID, res.Generation, res.Outcome, res.Message)
		return l
	}
	l.Message = fmt.Sprintf("slot %s generation %d: %s", res.SlotID, res.Generation, res.Outcome)
	if res.Reward != nil {
		l.Message += fmt.Sprintf(" (reward %g)", *res.Reward)
	}
	if res.ErrorClass != "" {
		l.Message += fmt.Sprintf(" [%s] %s", res.ErrorClass, res.Message)
	}
	return l
}

// sendRetry queues the slot's next generation. An infrastructure retry
// backs off (retryDelay); a platform retry — the platform lost the attempt
// (a restart, a lost sandbox) or never started it — goes out at once: its
// cause is not the attempt's, PlatformRetryLimit bounds how often it
// repeats, and the restart reconcile's target (every in-flight slot running
// again within seconds) is missed by a backoff of 5 s doubling per
// generation (the crash suite measured 5–20 s with it).
func (s *Ingester) sendRetry(ctx context.Context, slot run.Slot, platform bool) error {
	body, err := encodeMessage(SlotMessage{SchemaVersion: SchemaVersion, RunID: slot.RunID, SlotID: slot.ID, Generation: slot.Generation})
	if err != nil {
		return err
	}
	delay := s.retryDelay(slot.Generation - 1)
	if platform {
		delay = 0
	}
	if err := s.ports.Slots.Send(ctx, outgoing(body, delay)); err != nil {
		return fmt.Errorf("send retry of %s/%s: %w", slot.RunID, slot.ID, err)
	}
	return nil
}

// wakeQueued sends a message for one waiting slot of the run right away,
// after a result released a gate, so waiting slots need not poll fast.
func (s *Ingester) wakeQueued(ctx context.Context, runID string) error {
	slots, _, err := s.recs.Runs.Slots(ctx, runID, records.QueuedSlots, "", 1)
	if err != nil || len(slots) == 0 {
		return err
	}
	sl := slots[0]
	if sl.Deferrals == 0 {
		return nil // no slot of the run is waiting for a gate: every queued one has its message pending
	}
	return resendSlot(ctx, s.ports.Slots, SlotMessage{SchemaVersion: SchemaVersion, RunID: runID, SlotID: sl.ID, Generation: sl.Generation, Deferrals: sl.Deferrals}, 0)
}

// cancelSlot records a queued slot of a stopping run as cancelled and ends
// the agent and the run when it was their last slot.
func (s *core) cancelSlot(ctx context.Context, slot run.Slot) error {
	if err := s.cancelSlotOnly(ctx, slot); err != nil {
		return err
	}
	return s.settle(ctx, slot.RunID, slot.Agent)
}

// cancelSlotOnly records a queued slot of a stopping run as cancelled; a
// slot no longer queued is left alone.
func (s *core) cancelSlotOnly(ctx context.Context, slot run.Slot) error {
	for range ingestAttempts {
		if slot.Status != run.SlotQueued {
			return nil
		}
		err := s.applyResult(ctx, slot, s.cancelledResult(slot))
		if err == nil {
			return nil
		}
		if !records.IsConditionFailed(err) {
			return err
		}
		if slot, err = s.recs.Runs.Slot(ctx, slot.RunID, slot.ID); err != nil {
			return fmt.Errorf("cancel %s/%s: %w", slot.RunID, slot.ID, err)
		}
	}
	return fmt.Errorf("cancel %s/%s: %w", slot.RunID, slot.ID, records.ErrContention)
}

// settle ends the agent and the run once all their slots have a final
// result: stopped when the run is stopping, failed when every scored attempt
// errored for infrastructure reasons, finished otherwise. The run ends only
// after every agent did. It is idempotent.
func (s *core) settle(ctx context.Context, runID string, agent int) error {
	shape, err := s.facts.runInfo(ctx, runID)
	if err != nil {
		return fmt.Errorf("settle run %s: %w", runID, err)
	}
	if err := s.settleAgent(ctx, *shape, agent); err != nil {
		return err
	}
	t, err := s.recs.Runs.RunTally(ctx, runID)
	if err != nil {
		return err
	}
	if t.Done < int64(shape.TotalSlots()) {
		return nil
	}
	r, err := s.recs.Runs.Run(ctx, runID)
	if err != nil {
		return fmt.Errorf("settle run %s: %w", runID, err)
	}
	if r.Status.Terminal() {
		return s.recs.Runs.ClearActiveRun(ctx, runID)
	}
	// Every agent ends before the run does, so a finished run's agents are
	// final when its finish reaches the recompute: another agent's last
	// result may have been counted while its own settle has not run yet.
	for i := range shape.Agents {
		if i == agent {
			continue // settled above
		}
		if err := s.settleAgent(ctx, *shape, i); err != nil {
			return err
		}
	}
	return s.endRun(ctx, r.ID, t)
}

func (s *core) settleAgent(ctx context.Context, r run.Run, idx int) error {
	t, err := s.recs.Runs.AgentTally(ctx, r.ID, idx)
	if err != nil {
		return err
	}
	if t.Done < int64(len(r.Tasks)*r.Settings.AttemptsPerTask) {
		return nil
	}
	// An agent of a stopping run ends stopped, even when its slots settle
	// before the stop's drain moved it to stopping.
	status, err := s.recs.Runs.RunStatus(ctx, r.ID)
	if err != nil {
		return fmt.Errorf("end run %s agent %d: %w", r.ID, idx, err)
	}
	stopping := status == run.Stopping || status == run.Stopped
	now := s.now()
	_, err = s.recs.Runs.UpdateAgent(ctx, r.ID, idx, func(a *run.Agent) error {
		if stopping && a.Status.Stoppable() {
			if err := a.SetStatus(run.Stopping, now); err != nil {
				return err
			}
		}
		return endStatus(&a.Status, t, now, a.SetStatus)
	})
	if err != nil {
		return fmt.Errorf("end run %s agent %d: %w", r.ID, idx, err)
	}
	return nil
}

func (s *core) endRun(ctx context.Context, runID string, t run.Tally) error {
	now := s.now()
	var ended bool
	r, err := s.recs.Runs.UpdateRun(ctx, runID, func(r *run.Run) error {
		ended = false // a retried update decides afresh
		if err := endStatus(&r.Status, t, now, r.SetStatus); err != nil {
			return err
		}
		ended = true
		if r.Status == run.Failed {
			r.Reason = "every attempt errored for infrastructure reasons"
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("end run %s: %w", runID, err)
	}
	if ended {
		s.appendLog(ctx, runID, "", records.LevelInfo, string(r.Status),
			fmt.Sprintf("run %s: %d passed, %d failed, %d errored, %d judge failed, %d cancelled, %d retries", r.Status, t.Passed, t.Failed, t.Errored, t.JudgeFailed, t.Cancelled, t.Retries))
		s.log.InfoContext(ctx, "run ended", "run_id", runID, "status", r.Status)
	}
	return s.recs.Runs.ClearActiveRun(ctx, runID)
}

// endStatus applies the end transition for a run or an agent whose slots all
// have final results; it returns records.ErrNoChange when already terminal.
func endStatus(status *run.Status, t run.Tally, now time.Time, set func(run.Status, time.Time) error) error {
	switch *status {
	case run.Finished, run.Failed, run.Stopped:
		return records.ErrNoChange
	case run.Stopping:
		return set(run.Stopped, now)
	case run.Pending:
		if err := set(run.Queued, now); err != nil {
			return err
		}
	}
	end := t.EndStatus()
	if *status == run.Queued && end == run.Finished {
		// A sandbox ran (some attempt was scored by a verifier) even though
		// the dispatcher did not get to record the run as running.
		if err := set(run.Running, now); err != nil {
			return err
		}
	}
	return set(end, now)
}
