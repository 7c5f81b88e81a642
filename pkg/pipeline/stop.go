package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// ErrNotStoppable reports a stop request for a run that already ended.
var ErrNotStoppable = errors.New("run is not pending, queued or running")

// Stop moves a pending, queued or running run to stopping: nothing launches
// any more, queued slots are cancelled (as cancelled results, counted), and
// running sandboxes are stopped; the run becomes stopped once no sandbox is
// left. Results ingested before stay. Stopping a stopping or stopped run
// changes nothing; stopping a finished or failed one is ErrNotStoppable.
func (s *Service) Stop(ctx context.Context, runID, by string) (run.Run, error) {
	now := s.now()
	r, err := s.recs.UpdateRun(ctx, runID, func(r *run.Run) error {
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
		return r.SetStatus(run.Stopping, now)
	})
	if err != nil {
		return r, fmt.Errorf("stop run %s: %w", runID, err)
	}
	if r.Status == run.Stopping {
		s.appendLog(ctx, r.ID, "", records.LevelInfo, "stop", r.Reason)
	}
	for i := range r.Agents {
		if _, err := s.recs.UpdateAgent(ctx, r.ID, i, func(a *run.Agent) error {
			if !a.Status.Stoppable() {
				return records.ErrNoChange
			}
			return a.SetStatus(run.Stopping, now)
		}); err != nil {
			return r, fmt.Errorf("stop run %s agent %d: %w", r.ID, i, err)
		}
	}
	if err := s.drainStopping(ctx, r.ID); err != nil {
		return r, err
	}
	return s.recs.Run(ctx, r.ID)
}

// drainStopping does the work of a stopping run; it is idempotent, and the
// planner and the watchdog call it again until the run is stopped. A run not
// yet planned is left to its planner, which creates the slots and cancels
// them (so a stop never races slot creation).
func (s *Service) drainStopping(ctx context.Context, runID string) error {
	r, err := s.recs.Run(ctx, runID)
	if err != nil {
		return fmt.Errorf("drain stopping run %s: %w", runID, err)
	}
	if r.Status != run.Stopping || !r.Planned {
		return nil
	}
	if err := s.cancelQueued(ctx, r.ID); err != nil {
		return err
	}
	if err := s.stopActive(ctx, r.ID); err != nil {
		return err
	}
	t, err := s.recs.RunTally(ctx, r.ID)
	if err != nil {
		return err
	}
	if t.Done >= int64(r.TotalSlots()) {
		for i := range r.Agents {
			if err := s.settleAgent(ctx, r, i); err != nil {
				return err
			}
		}
		return s.endRun(ctx, r.ID, t)
	}
	return nil
}

func (s *Service) cancelQueued(ctx context.Context, runID string) error {
	for {
		// Cancelling removes slots from the queued index, so always read the first page.
		slots, _, err := s.recs.Slots(ctx, runID, records.QueuedSlots, "", 500)
		if err != nil {
			return err
		}
		if len(slots) == 0 {
			return nil
		}
		for _, sl := range slots {
			if err := s.cancelSlot(ctx, sl); err != nil {
				return err
			}
		}
	}
}

// stopActive records the cancel reason on every launching or running slot
// and stops its sandbox.
func (s *Service) stopActive(ctx context.Context, runID string) error {
	cursor := ""
	for {
		slots, next, err := s.recs.Slots(ctx, runID, records.ActiveSlots, cursor, 500)
		if err != nil {
			return err
		}
		for _, sl := range slots {
			if err := s.stopSlot(ctx, sl, run.StopCancel); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// stopSlot records why the slot's sandbox is being stopped, then stops it.
// A launching slot without a sandbox id yet is stopped by the dispatcher
// when it records the sandbox (it sees the reason).
func (s *Service) stopSlot(ctx context.Context, sl run.Slot, reason run.StopReason) error {
	sl, err := s.recs.UpdateSlot(ctx, sl.RunID, sl.ID, func(cur *run.Slot) error {
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
