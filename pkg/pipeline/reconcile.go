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

// Reconciled counts what Reconcile did.
type Reconciled struct {
	// Lost is the running slots declared lost (re-run with a new
	// generation once the grader sees the Lost completion).
	Lost int
	// Requeued is the slots stuck launching that were queued again.
	Requeued int
}

// Reconcile is called once at start, before any loop runs, by a platform
// whose sandbox driver knows that no sandbox of an earlier process survives
// — the local driver, whose sandboxes are child processes that die with
// their parent (Pdeathsig). Instead of waiting LostGrace for the watchdog,
// every slot of an active run that the driver does not list is settled at
// once: a running slot gets a Lost completion (graded as the platform's
// loss: its gates are released and it runs again with a new generation,
// not counted against max_retries), a launching one is queued again (same
// generation: nothing started). Redelivery is harmless: the grader and the
// re-queue are conditional on the slot's generation and status.
//
// In the cloud sandboxes outlive the dispatcher, so this is not called
// there; the scheduled watchdog's reconcile against the driver's list
// (ECS DescribeTasks) does the same on its schedule.
func (s *Reconciler) Reconcile(ctx context.Context) (Reconciled, error) {
	var done Reconciled
	ids, err := s.recs.Runs.ActiveRuns(ctx)
	if err != nil {
		return done, fmt.Errorf("reconcile: %w", err)
	}
	now := s.now()
	var errs []error
	for _, id := range ids {
		if err := s.reconcileRun(ctx, id, now, &done); err != nil {
			errs = append(errs, fmt.Errorf("reconcile run %s: %w", id, err))
		}
	}
	return done, errors.Join(errs...)
}

func (s *Reconciler) reconcileRun(ctx context.Context, id string, now time.Time, done *Reconciled) error {
	handles, err := s.ports.Sandboxes.List(ctx, id)
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	live := make(map[string]bool, len(handles))
	for _, h := range handles {
		live[h.LaunchID] = true
	}
	cursor := ""
	for {
		slots, next, err := s.recs.Runs.Slots(ctx, id, records.ActiveSlots, cursor, 500)
		if err != nil {
			return err
		}
		for _, sl := range slots {
			if live[sl.LaunchID] {
				continue
			}
			switch sl.Status {
			case run.SlotRunning:
				if err := s.declareLost(ctx, sl, now); err != nil {
					return err
				}
				done.Lost++
			case run.SlotLaunching:
				if err := s.requeue(ctx, s.ports.Slots, sl); err != nil {
					return err
				}
				done.Requeued++
			}
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// declareLost sends the Lost completion of a running slot whose sandbox
// died with the previous platform process.
func (s *Reconciler) declareLost(ctx context.Context, sl run.Slot, now time.Time) error {
	s.appendLog(ctx, sl.RunID, sl.ID, records.LevelWarn, "reconcile",
		fmt.Sprintf("sandbox %s of slot %s ended with the previous platform process; running the slot again", sl.SandboxID, sl.ID))
	return sendCompletion(ctx, s.ports.Completions, sandbox.Completion{
		SandboxID: sl.SandboxID, LaunchID: sl.LaunchID, RunID: sl.RunID, SlotID: sl.ID, Generation: sl.Generation,
		Reason: sandbox.Lost, Message: fmt.Sprintf("sandbox %s ended with the platform process that started it (restart reconcile)", sl.SandboxID),
		StartedAt: sl.LaunchedAt, StoppedAt: now,
	})
}
