package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// The ports as the stages use them: each stage takes the narrowest of these
// that covers what it calls, so what a stage is built from says what it
// does.

// Sender is a queue as a stage uses it: stages only send; consuming is the
// platform's loop (an SQS event source, a local poller).
type Sender interface {
	Send(ctx context.Context, msgs ...queue.Outgoing) error
}

// BlobReader is the blob store as the grader uses it: it reads result.json.
type BlobReader interface {
	Get(ctx context.Context, key string) (io.ReadCloser, error)
}

// SecretReader is the secret store as the dispatcher uses it: it reads the
// values a sandbox is given.
type SecretReader interface {
	Get(ctx context.Context, ref secret.Ref) (secret.Value, error)
}

// SandboxStopper stops sandboxes (a stopping run's drain).
type SandboxStopper interface {
	Stop(ctx context.Context, id string) error
}

// SandboxLister lists a run's live sandboxes (the restart reconcile).
type SandboxLister interface {
	List(ctx context.Context, runID string) ([]sandbox.Handle, error)
}

// SandboxWatcher lists, describes the ended and stops sandboxes (the
// watchdog).
type SandboxWatcher interface {
	SandboxLister
	SandboxStopper
	Ended(ctx context.Context, runID string) ([]sandbox.Completion, error)
}

// SpaceChecker says whether the platform's storage has room to launch a
// sandbox (the local platform's data dir against its free-space floor):
// nil, or an error wrapping *diskspace.Error.
type SpaceChecker interface {
	Check() error
}

// SandboxLauncher launches sandboxes and stops one launched for a slot
// stopped meanwhile (the dispatcher).
type SandboxLauncher interface {
	Launch(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error)
	SandboxStopper
}

// GraderPorts are what the grader is built from.
type GraderPorts struct {
	Table store.Table
	// Results carries the graded ResultMessage bodies.
	Results Sender
	// Blobs holds each attempt's result.json.
	Blobs BlobReader
}

// Grader grades sandbox completions (Grade, HandleCompletion).
type Grader struct {
	*core
	ports GraderPorts
}

// NewGrader returns the grade stage on its ports; every port must be set.
func NewGrader(p GraderPorts, opts Options) (*Grader, error) {
	if err := required("grader", port{"Table", p.Table == nil}, port{"Results", p.Results == nil}, port{"Blobs", p.Blobs == nil}); err != nil {
		return nil, err
	}
	return &Grader{core: newCore(p.Table, opts), ports: p}, nil
}

// SubmitterPorts are what submission is built from.
type SubmitterPorts struct {
	Table store.Table
	// Plan carries the PlanMessage of each accepted run.
	Plan Sender
}

// Submitter accepts runs and environment checks (Validate, Submit,
// StartCheck, Check).
type Submitter struct {
	*core
	ports SubmitterPorts
}

// NewSubmitter returns the submit stage on its ports; every port must be
// set.
func NewSubmitter(p SubmitterPorts, opts Options) (*Submitter, error) {
	if err := required("submitter", port{"Table", p.Table == nil}, port{"Plan", p.Plan == nil}); err != nil {
		return nil, err
	}
	return &Submitter{core: newCore(p.Table, opts), ports: p}, nil
}

// PlannerPorts are what the planner is built from.
type PlannerPorts struct {
	Table store.Table
	// Plan carries the continuation of a stopping run's drain.
	Plan Sender
	// Slots carries the SlotMessage of each planned slot.
	Slots Sender
	// Sandboxes stops the sandboxes of a stopping run.
	Sandboxes SandboxStopper
}

// Planner fans runs out into slots and drains stopping runs (Plan,
// HandlePlan).
type Planner struct {
	*core
	ports PlannerPorts
	*drainer
}

// NewPlanner returns the plan stage on its ports; every port must be set.
func NewPlanner(p PlannerPorts, opts Options) (*Planner, error) {
	if err := required("planner", port{"Table", p.Table == nil}, port{"Plan", p.Plan == nil}, port{"Slots", p.Slots == nil},
		port{"Sandboxes", p.Sandboxes == nil}); err != nil {
		return nil, err
	}
	return newPlanner(newCore(p.Table, opts), p), nil
}

func newPlanner(c *core, p PlannerPorts) *Planner {
	return &Planner{core: c, ports: p, drainer: &drainer{core: c, ports: drainPorts{Plan: p.Plan, Sandboxes: p.Sandboxes}}}
}

// drainPorts are what the drain of a stopping run uses.
type drainPorts struct {
	Plan      Sender
	Sandboxes SandboxStopper
}

// drainer carries out the stop of a run (see drain); the planner and the
// watchdog drain.
type drainer struct {
	*core
	ports drainPorts
}

// StopperPorts are what stop requests are built from.
type StopperPorts struct {
	Table store.Table
	// Plan carries the drain message of a run asked to stop.
	Plan Sender
}

// Stopper moves runs to stopping (Stop); the planner and the watchdog
// drain them.
type Stopper struct {
	*core
	ports StopperPorts
}

// NewStopper returns the stop stage on its ports; every port must be set.
func NewStopper(p StopperPorts, opts Options) (*Stopper, error) {
	if err := required("stopper", port{"Table", p.Table == nil}, port{"Plan", p.Plan == nil}); err != nil {
		return nil, err
	}
	return &Stopper{core: newCore(p.Table, opts), ports: p}, nil
}

// WatchdogPorts are what the watchdog is built from.
type WatchdogPorts struct {
	Table store.Table
	// Plan carries the re-sent plan message of a run whose planning
	// stalled.
	Plan Sender
	// Slots carries the re-sent message of a slot stuck launching.
	Slots Sender
	// Completions carries the completion of a lost sandbox.
	Completions Sender
	// Sandboxes lists live sandboxes and stops overdue ones and those of
	// stopping runs.
	Sandboxes SandboxWatcher
}

// Watchdog is the scheduled sweep of active runs (Watch).
type Watchdog struct {
	*core
	ports WatchdogPorts
	*drainer
}

// NewWatchdog returns the watchdog on its ports; every port must be set.
func NewWatchdog(p WatchdogPorts, opts Options) (*Watchdog, error) {
	if err := required("watchdog", port{"Table", p.Table == nil}, port{"Plan", p.Plan == nil}, port{"Slots", p.Slots == nil},
		port{"Completions", p.Completions == nil}, port{"Sandboxes", p.Sandboxes == nil}); err != nil {
		return nil, err
	}
	return newWatchdog(newCore(p.Table, opts), p), nil
}

func newWatchdog(c *core, p WatchdogPorts) *Watchdog {
	return &Watchdog{core: c, ports: p, drainer: &drainer{core: c, ports: drainPorts{Plan: p.Plan, Sandboxes: p.Sandboxes}}}
}

// ReconcilerPorts are what the restart reconcile is built from.
type ReconcilerPorts struct {
	Table store.Table
	// Slots carries the re-sent message of a slot caught launching.
	Slots Sender
	// Completions carries the completion of a sandbox that died with the
	// previous process.
	Completions Sender
	// Sandboxes lists the sandboxes that survived.
	Sandboxes SandboxLister
}

// Reconciler settles, at a platform's start, the slots whose sandboxes
// died with the previous process (Reconcile).
type Reconciler struct {
	*core
	ports ReconcilerPorts
}

// NewReconciler returns the restart reconcile on its ports; every port must
// be set.
func NewReconciler(p ReconcilerPorts, opts Options) (*Reconciler, error) {
	if err := required("reconciler", port{"Table", p.Table == nil}, port{"Slots", p.Slots == nil},
		port{"Completions", p.Completions == nil}, port{"Sandboxes", p.Sandboxes == nil}); err != nil {
		return nil, err
	}
	return &Reconciler{core: newCore(p.Table, opts), ports: p}, nil
}

// DispatcherPorts are what the dispatcher is built from.
type DispatcherPorts struct {
	Table store.Table
	// Slots carries the slot messages put off by a full concurrency gate.
	Slots Sender
	// Completions carries the completion of a sandbox that failed to start.
	Completions Sender
	// Results carries the result of a slot whose sandbox cannot be
	// prepared (a deleted secret record, a missing task).
	Results Sender
	// Secrets holds the secret values a sandbox is given.
	Secrets SecretReader
	// Sandboxes launches the slots' sandboxes.
	Sandboxes SandboxLauncher
	// Space, when set, holds launches back while the platform's storage
	// is below its floor (nil: storage that does not fill, the cloud's).
	Space SpaceChecker
}

// Dispatcher launches slots behind the concurrency gates (Dispatch,
// HandleSlot).
type Dispatcher struct {
	*core
	ports DispatcherPorts
}

// NewDispatcher returns the dispatch stage on its ports; every port must be
// set.
func NewDispatcher(p DispatcherPorts, opts Options) (*Dispatcher, error) {
	if err := required("dispatcher", port{"Table", p.Table == nil}, port{"Slots", p.Slots == nil}, port{"Completions", p.Completions == nil},
		port{"Results", p.Results == nil}, port{"Secrets", p.Secrets == nil}, port{"Sandboxes", p.Sandboxes == nil}); err != nil {
		return nil, err
	}
	return &Dispatcher{core: newCore(p.Table, opts), ports: p}, nil
}

// IngesterPorts are what the ingester is built from.
type IngesterPorts struct {
	Table store.Table
	// Slots carries retries and the wake-up of a slot waiting for a gate.
	Slots Sender
}

// Ingester records graded results (Ingest, HandleResult).
type Ingester struct {
	*core
	ports IngesterPorts
}

// NewIngester returns the ingest stage on its ports; every port must be set.
func NewIngester(p IngesterPorts, opts Options) (*Ingester, error) {
	if err := required("ingester", port{"Table", p.Table == nil}, port{"Slots", p.Slots == nil}); err != nil {
		return nil, err
	}
	return &Ingester{core: newCore(p.Table, opts), ports: p}, nil
}

// RecomputerPorts are what the recompute is built from.
type RecomputerPorts struct {
	Table store.Table
}

// Recomputer recomputes run metrics and leaderboards from the table's
// changes (Recompute, RecomputeRun, RecomputeLeaderboard).
type Recomputer struct {
	*core // reads and writes the table through core.recs only
}

// NewRecomputer returns the recompute stage on its ports; every port must
// be set.
func NewRecomputer(p RecomputerPorts, opts Options) (*Recomputer, error) {
	if err := required("recompute", port{"Table", p.Table == nil}); err != nil {
		return nil, err
	}
	return &Recomputer{core: newCore(p.Table, opts)}, nil
}

// port is one port of a stage for required: its name and whether it is
// missing.
type port struct {
	name    string
	missing bool
}

// required reports the missing ports of a stage in one error.
func required(stage string, ports ...port) error {
	var missing []string
	for _, p := range ports {
		if p.missing {
			missing = append(missing, p.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("pipeline: the %s needs port %s: %w", stage, strings.Join(missing, ", "), errMissingPort)
	}
	return nil
}

// errMissingPort marks a stage built without a port it uses.
var errMissingPort = errors.New("not set")
