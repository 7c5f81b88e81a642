// Package run owns the execution model of a run: the run itself, its agents,
// its slots (one agent × task × attempt cell each), the graded attempt results,
// and the status machines they move through. Every status change goes through
// a transition check: an illegal transition is an error, never an overwrite.
package run

import (
	"errors"
	"fmt"
)

// ErrIllegalTransition reports a status change the status machine forbids.
var ErrIllegalTransition = errors.New("illegal status transition")

// Status is the lifecycle status of a run and of each of its agents.
type Status string

// Run (and agent) statuses, as DESIGN.md names them.
const (
	Pending  Status = "pending"  // accepted, planning
	Queued   Status = "queued"   // slots enqueued, nothing launched
	Running  Status = "running"  // a sandbox has started
	Finished Status = "finished" // every slot has a terminal result
	Failed   Status = "failed"   // cannot proceed: planning failed or every attempt errored for infrastructure reasons
	Stopping Status = "stopping" // stop requested: no new launches
	Stopped  Status = "stopped"  // stopped and no sandbox is left
)

var statusMoves = map[Status][]Status{
	Pending:  {Queued, Failed, Stopping},
	Queued:   {Running, Failed, Stopping},
	Running:  {Finished, Failed, Stopping},
	Stopping: {Stopped},
}

// Valid reports whether s is one of the defined statuses.
func (s Status) Valid() bool {
	switch s {
	case Pending, Queued, Running, Finished, Failed, Stopping, Stopped:
		return true
	}
	return false
}

// Terminal reports whether s is final (finished, failed or stopped).
func (s Status) Terminal() bool { return s == Finished || s == Failed || s == Stopped }

// Launchable reports whether slots of a run (or agent) in status s may start
// sandboxes: queued or running.
func (s Status) Launchable() bool { return s == Queued || s == Running }

// Stoppable reports whether a stop may be requested in status s.
func (s Status) Stoppable() bool { return s == Pending || s == Queued || s == Running }

// CheckTransition returns nil when from → to is a legal move and an error
// wrapping ErrIllegalTransition otherwise (including from == to).
func CheckTransition(from, to Status) error {
	for _, next := range statusMoves[from] {
		if next == to {
			return nil
		}
	}
	return fmt.Errorf("status %s → %s: %w", from, to, ErrIllegalTransition)
}

// SlotStatus is the lifecycle status of one slot.
type SlotStatus string

// Slot statuses. A slot is queued until the dispatcher records its launch
// intent (launching), running once the driver accepted the launch, and done
// once an attempt result is final. An infrastructure error with retries left
// puts it back to queued with the next generation.
const (
	SlotQueued    SlotStatus = "queued"
	SlotLaunching SlotStatus = "launching"
	SlotRunning   SlotStatus = "running"
	SlotDone      SlotStatus = "done"
)

var slotMoves = map[SlotStatus][]SlotStatus{
	SlotQueued:    {SlotLaunching, SlotDone},
	SlotLaunching: {SlotRunning, SlotQueued, SlotDone},
	SlotRunning:   {SlotQueued, SlotDone},
}

// Active reports whether a sandbox may exist for a slot in status s.
func (s SlotStatus) Active() bool { return s == SlotLaunching || s == SlotRunning }

// CheckSlotTransition returns nil when from → to is a legal slot move and an
// error wrapping ErrIllegalTransition otherwise (including from == to).
func CheckSlotTransition(from, to SlotStatus) error {
	for _, next := range slotMoves[from] {
		if next == to {
			return nil
		}
	}
	return fmt.Errorf("slot status %s → %s: %w", from, to, ErrIllegalTransition)
}
