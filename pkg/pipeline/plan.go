package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// planBatch is how many slots the planner creates, and sends messages for,
// at a time.
const planBatch = 5000

// plan fans a run out into agents × tasks × attempts slots with
// deterministic ids, created idempotently in batches, moves the run (and its
// agents) pending → queued, then sends one slot message per slot, recording
// each sent batch on the run. A redelivered plan message re-creates nothing
// and re-sends at most the one batch whose sending was interrupted. Plan
// (planfail.go) wraps it with the handling of planning failures.
func (s *Planner) plan(ctx context.Context, m PlanMessage) error {
	r, err := s.recs.Runs.Run(ctx, m.RunID)
	if err != nil {
		return fmt.Errorf("plan run %s: %w", m.RunID, err)
	}
	if r.Status.Terminal() {
		return nil
	}
	slots := planSlots(r)
	if !r.Planned {
		if r, err = s.createSlots(ctx, r, slots); err != nil {
			return err
		}
	}
	if r.Status == run.Stopping {
		return s.drainStopping(ctx, r.ID)
	}
	return s.sendSlotBatches(ctx, r, slots)
}

// planSlots lists the run's slots, attempt-major then task then agent, so
// that dispatch order spreads every agent over the tasks evenly.
func planSlots(r run.Run) []run.Slot {
	slots := make([]run.Slot, 0, r.TotalSlots())
	for attempt := 1; attempt <= r.Settings.AttemptsPerTask; attempt++ {
		for _, task := range r.Tasks {
			for agent := range r.Agents {
				slots = append(slots, run.Slot{RunID: r.ID, ID: run.SlotID(agent, task, attempt), Agent: agent,
					Task: task, Attempt: attempt, Status: run.SlotQueued})
			}
		}
	}
	return slots
}

// keyOrder returns the indexes of slots sorted by slot id, the order of their
// sort keys. Created in that order, each batch appends to one stretch of the
// table and its indexes; in planSlots' dispatch order every batch would touch
// pages all over the run's key range.
func keyOrder(slots []run.Slot) []int32 {
	order := make([]int32, len(slots))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(slots[a].ID, slots[b].ID) })
	return order
}

func (s *Planner) createSlots(ctx context.Context, r run.Run, slots []run.Slot) (run.Run, error) {
	created := 0
	order := keyOrder(slots)
	batch := make([]run.Slot, 0, min(planBatch, len(slots)))
	for start := 0; start < len(order); start += planBatch {
		batch = batch[:0]
		for _, i := range order[start:min(start+planBatch, len(order))] {
			batch = append(batch, slots[i])
		}
		n, err := s.recs.Runs.CreateSlots(ctx, batch)
		if err != nil {
			return r, fmt.Errorf("plan run %s: %w", r.ID, err)
		}
		created += n
	}
	now := s.now()
	r, err := s.recs.Runs.UpdateRun(ctx, r.ID, func(r *run.Run) error {
		if r.Planned {
			return records.ErrNoChange
		}
		r.Planned = true
		if r.Status == run.Pending {
			return r.SetStatus(run.Queued, now)
		}
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("plan run %s: %w", r.ID, err)
	}
	for i := range r.Agents {
		if _, err := s.recs.Runs.UpdateAgent(ctx, r.ID, i, func(a *run.Agent) error {
			if a.Status != run.Pending {
				return records.ErrNoChange
			}
			return a.SetStatus(run.Queued, now)
		}); err != nil {
			return r, fmt.Errorf("plan run %s: %w", r.ID, err)
		}
	}
	s.appendLog(ctx, r.ID, "", records.LevelInfo, "planned", fmt.Sprintf("%d slots planned (%d created now)", len(slots), created))
	return r, nil
}

func (s *Planner) sendSlotBatches(ctx context.Context, r run.Run, slots []run.Slot) error {
	batches := (len(slots) + planBatch - 1) / planBatch
	for b := r.SentBatches; b < batches; b++ {
		batch := slots[b*planBatch : min((b+1)*planBatch, len(slots))]
		msgs := make([]queue.Outgoing, len(batch))
		for i, sl := range batch {
			body, err := encodeMessage(SlotMessage{SchemaVersion: SchemaVersion, RunID: r.ID, SlotID: sl.ID, Generation: 0})
			if err != nil {
				return err
			}
			msgs[i] = queue.Outgoing{Body: body}
		}
		if err := s.ports.Slots.Send(ctx, msgs...); err != nil {
			return fmt.Errorf("plan run %s: send slot batch %d: %w", r.ID, b, err)
		}
		var err error
		r, err = s.recs.Runs.UpdateRun(ctx, r.ID, func(r *run.Run) error {
			if r.SentBatches > b {
				return records.ErrNoChange
			}
			r.SentBatches = b + 1
			return nil
		})
		if err != nil {
			return fmt.Errorf("plan run %s: %w", r.ID, err)
		}
		if r.Status == run.Stopping {
			return s.drainStopping(ctx, r.ID)
		}
	}
	return nil
}

func outgoing(body []byte, delay time.Duration) queue.Outgoing {
	return queue.Outgoing{Body: body, Delay: min(delay, maxQueueDelay)}
}

// maxQueueDelay is the longest delay every queue adapter accepts (SQS's).
const maxQueueDelay = 15 * time.Minute

// appendLog writes a run log line; a failure is logged, not returned (run
// logs are a record for people, not state).
func (s *core) appendLog(ctx context.Context, runID, slot, level, step, msg string) {
	l := records.LogLine{RunID: runID, At: s.now(), Level: level, Step: step, Message: msg, Slot: slot}
	if err := s.recs.Runs.AppendLog(ctx, l); err != nil {
		s.log.ErrorContext(ctx, "append run log", "run_id", runID, "step", step, "err", err)
	}
}
