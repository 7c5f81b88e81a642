package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// ErrNotStoppable reports a stop request for a run that already ended.
var ErrNotStoppable = errors.New("run is not pending, queued or running")

// Bounds of one drain of a stopping run (see drainStopping).
const (
	// drainChunk is how many queued slots one drain cancels before it hands
	// the rest to a continuation message.
	drainChunk = 2000
	// cancelBatch is how many queued slots one transaction cancels: two ops
	// each, plus the tallies and a log line, within store.MaxTransactOps.
	cancelBatch = 40
	// stopParallel is how many sandboxes a drain stops at once.
	stopParallel = 16
)

// Stop moves a pending, queued or running run to stopping and returns at
// once: the request does a constant amount of work whatever the run's size.
// The drain — agents to stopping, queued slots cancelled (as cancelled
// results, counted), running sandboxes stopped — runs asynchronously on the
// plan queue (a plan message for a stopping run drains it, in bounded
// chunks) and on every watchdog tick; the run becomes stopped once every
// slot has a result and no sandbox is left. Results ingested before stay.
// Stopping a stopping or stopped run changes nothing; stopping a finished or
// failed one is ErrNotStoppable.
func (s *Stopper) Stop(ctx context.Context, runID, by string) (run.Run, error) {
	now := s.now()
	changed := false
	r, err := s.recs.Runs.UpdateRun(ctx, runID, func(r *run.Run) error {
		changed = false // a retried update decides afresh
		switch {
		case r.Status == run.Stopping || r.Status == run.Stopped:
			return records.ErrNoChange
		case !r.Status.Stoppable():
			return fmt.Errorf("stop run %s (%s): %w", r.ID, r.Status, ErrNotStoppable)
		}
		r.Reason = "stopped by " + by
		if by == "" {
			r.Reason = "stopped"
		}
		changed = true
		return r.SetStatus(run.Stopping, now)
	})
	if err != nil {
		return r, fmt.Errorf("stop run %s: %w", runID, err)
	}
	if !changed {
		return r, nil
	}
	s.appendLog(ctx, r.ID, "", records.LevelInfo, "stop", r.Reason)
	if err := sendPlan(ctx, s.ports.Plan, r.ID); err != nil {
		// The run is stopping; the watchdog drains it on its next tick.
		s.log.ErrorContext(ctx, "send drain message of a stopping run", "run_id", r.ID, "err", err)
	}
	return r, nil
}

// drainStopping is the planner's drain of a stopping run (see drain): when
// queued slots remain after one chunk, it sends a plan message that carries
// on.
func (s *drainer) drainStopping(ctx context.Context, runID string) error {
	return s.drain(ctx, runID, true)
}

// drain does a bounded part of the work of a stopping run: its agents move
// to stopping, up to drainChunk queued slots are cancelled, and every active
// slot's sandbox is stopped; once every slot has a result the run and its
// agents become stopped. When queued slots remain and continueLater is set,
// it sends a plan message that carries on. It is idempotent; the planner
// and the watchdog call it until the run is stopped. A run not yet planned
// is left to its planner, which creates the slots and then drains them (so
// a stop never races slot creation).
func (s *drainer) drain(ctx context.Context, runID string, continueLater bool) error {
	r, err := s.recs.Runs.Run(ctx, runID)
	if err != nil {
		return fmt.Errorf("drain stopping run %s: %w", runID, err)
	}
	if r.Status != run.Stopping || !r.Planned {
		return nil
	}
	if err := s.stopAgents(ctx, r); err != nil {
		return err
	}
	more, err := s.cancelQueued(ctx, r.ID, drainChunk)
	if err != nil {
		return err
	}
	if err := s.stopActive(ctx, r.ID); err != nil {
		return err
	}
	if more {
		if !continueLater {
			return nil
		}
		if err := sendPlan(ctx, s.ports.Plan, r.ID); err != nil {
			return fmt.Errorf("drain stopping run %s: continue: %w", r.ID, err)
		}
		return nil
	}
	t, err := s.recs.Runs.RunTally(ctx, r.ID)
	if err != nil {
		return err
	}
	for i := range r.Agents {
		if err := s.settleAgent(ctx, r, i); err != nil {
			return err
		}
	}
	if t.Done >= int64(r.TotalSlots()) {
		return s.endRun(ctx, r.ID, t)
	}
	return nil
}

// stopAgents moves the run's agents that may still launch to stopping.
func (s *drainer) stopAgents(ctx context.Context, r run.Run) error {
	now := s.now()
	for i := range r.Agents {
		if _, err := s.recs.Runs.UpdateAgent(ctx, r.ID, i, func(a *run.Agent) error {
			if !a.Status.Stoppable() {
				return records.ErrNoChange
			}
			return a.SetStatus(run.Stopping, now)
		}); err != nil {
			return fmt.Errorf("stop run %s agent %d: %w", r.ID, i, err)
		}
	}
	return nil
}

// cancelQueued cancels up to limit queued slots of the run, cancelBatch per
// transaction, and reports whether queued slots remain.
func (s *drainer) cancelQueued(ctx context.Context, runID string, limit int) (more bool, err error) {
	for done := 0; done < limit; {
		// Cancelling removes slots from the queued index, so always read the first page.
		slots, _, err := s.recs.Runs.Slots(ctx, runID, records.QueuedSlots, "", min(500, limit-done))
		if err != nil {
			return false, err
		}
		if len(slots) == 0 {
			return false, nil
		}
		for start := 0; start < len(slots); start += cancelBatch {
			if err := s.cancelSlots(ctx, slots[start:min(start+cancelBatch, len(slots))]); err != nil {
				return false, err
			}
		}
		done += len(slots)
	}
	slots, _, err := s.recs.Runs.Slots(ctx, runID, records.QueuedSlots, "", 1)
	return len(slots) > 0, err
}

// cancelSlots records queued slots of a stopping run as cancelled in one
// transaction: a cancelled result and a done slot each, their summed
// counters and one log line. When a slot changed meanwhile (the dispatcher
// cancelled it, say) the batch falls back to one slot at a time.
func (s *drainer) cancelSlots(ctx context.Context, slots []run.Slot) error {
	var ops records.Ops
	var runTally run.Tally
	agentTallies := map[int]run.Tally{}
	names := make([]string, len(slots))
	for i, sl := range slots {
		res := s.cancelledResult(sl)
		next := sl
		if err := next.SetStatus(run.SlotDone); err != nil {
			return err
		}
		next.Outcome = res.Outcome
		ops.Add(records.ResultOp(res))
		ops.Add(records.SlotOp(next))
		d := res.Deltas()
		runTally = addTally(runTally, d)
		agentTallies[sl.Agent] = addTally(agentTallies[sl.Agent], d)
		names[i] = sl.ID
	}
	ops.Append(records.RunTallyOp(slots[0].RunID, runTally))
	for agent, t := range agentTallies {
		ops.Append(records.AgentTallyOp(slots[0].RunID, agent, t))
	}
	ops.Add(records.LogOp(records.LogLine{RunID: slots[0].RunID, At: s.now(), Level: records.LevelInfo, Step: "result",
		Message: fmt.Sprintf("%d queued slots cancelled (the run was stopped): %s", len(slots), strings.Join(names, ", "))}))
	err := ops.Transact(ctx, s.recs)
	if !records.IsConditionFailed(err) {
		if err != nil {
			return fmt.Errorf("cancel %d queued slots of run %s: %w", len(slots), slots[0].RunID, err)
		}
		return nil
	}
	for _, sl := range slots {
		if err := s.cancelSlotOnly(ctx, sl); err != nil {
			return err
		}
	}
	return nil
}

func (s *core) cancelledResult(slot run.Slot) run.Result {
	return run.Result{RunID: slot.RunID, SlotID: slot.ID, Generation: slot.Generation, Agent: slot.Agent,
		Task: slot.Task, Attempt: slot.Attempt, Outcome: run.Cancelled, Message: "the run was stopped", RecordedAt: s.now()}
}

// addTally returns the field-wise sum of two tallies.
func addTally(a, b run.Tally) run.Tally {
	return run.TallyFromCounters(sumCounters(a.Counters(), b.Counters()))
}

func sumCounters(a, b map[string]int64) map[string]int64 {
	for k, v := range b {
		a[k] += v
	}
	return a
}

// stopActive records the cancel reason on every launching or running slot
// and stops their sandboxes, stopParallel at a time.
func (s *drainer) stopActive(ctx context.Context, runID string) error {
	cursor := ""
	for {
		slots, next, err := s.recs.Runs.Slots(ctx, runID, records.ActiveSlots, cursor, 500)
		if err != nil {
			return err
		}
		if err := s.stopSlots(ctx, slots, run.StopCancel); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

func (s *drainer) stopSlots(ctx context.Context, slots []run.Slot, reason run.StopReason) error {
	errs := make([]error, len(slots))
	sem := make(chan struct{}, stopParallel)
	var wg sync.WaitGroup
	for i, sl := range slots {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = s.stopSlot(ctx, sl, reason)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopSlot records why the slot's sandbox is being stopped, then stops it.
// A launching slot without a sandbox id yet is stopped by the dispatcher
// when it records the sandbox (it sees the reason).
func (s *drainer) stopSlot(ctx context.Context, sl run.Slot, reason run.StopReason) error {
	sl, err := s.recs.Runs.UpdateSlot(ctx, sl.RunID, sl.ID, func(cur *run.Slot) error {
		if cur.Generation != sl.Generation || !cur.Status.Active() || cur.StopReason == reason {
			return records.ErrNoChange
		}
		if cur.StopReason == "" {
			cur.StopReason = reason
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("stop slot %s/%s: %w", sl.RunID, sl.ID, err)
	}
	if sl.SandboxID == "" || !sl.Status.Active() {
		return nil
	}
	if err := s.ports.Sandboxes.Stop(ctx, sl.SandboxID); err != nil {
		return fmt.Errorf("stop sandbox %s of %s/%s: %w", sl.SandboxID, sl.RunID, sl.ID, err)
	}
	return nil
}
