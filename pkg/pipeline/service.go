// Package pipeline holds gauntlet's execution stages, one type per stage.
//
// Each stage — Submitter, Planner, Stopper, Dispatcher, Grader, Ingester,
// Recomputer, Watchdog and Reconciler — is built by its constructor
// (NewGrader and its siblings) from a struct of exactly the ports it uses,
// typed as the narrow interfaces of this package (a Sender, a BlobReader, a
// SandboxLauncher…), so a cloud function constructs only its own stage and
// cannot call a port it was not given. Service puts every stage on one set
// of Ports, sharing one core and its caches, for `gauntlet local` and the
// tests. The cloud Lambdas and the local loops call the same methods; only
// the adapters behind the ports differ.
//
// Every handler tolerates at-least-once, out-of-order delivery: state
// changes are conditional writes keyed by run, slot and generation, launch
// intent is recorded before a sandbox starts, and counters move in the same
// transaction as the result that changes them.
package pipeline

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// Ports are the adapters a Service runs on: every port of every stage.
type Ports struct {
	Table store.Table
	// Plan carries PlanMessage, Slots SlotMessage, Completions
	// sandbox.Completion and Results ResultMessage bodies.
	Plan        queue.Queue
	Slots       queue.Queue
	Completions queue.Queue
	Results     queue.Queue
	Blobs       blob.Store
	Secrets     secret.Store
	Sandboxes   sandbox.Driver
	// Space, optional, holds launches back while the platform's storage is
	// below its floor (see DispatcherPorts.Space).
	Space SpaceChecker
}

// Options tune a Service; zero values take the defaults below.
type Options struct {
	// MaxSandboxes caps the sandboxes running at once across every run;
	// 0 means no global cap.
	MaxSandboxes int
	// GateDelay is how long a slot held back by a concurrency cap waits
	// before it is tried again (default 2 s).
	GateDelay time.Duration
	// MaxGateDelay bounds the growing wait of a slot put off again and
	// again (default 30 s).
	MaxGateDelay time.Duration
	// RetryBackoff is the delay before the first retry of an infrastructure
	// error; each further retry doubles it, up to 15 minutes (default 5 s).
	RetryBackoff time.Duration
	// LaunchTimeout is how long a slot may stay launching before the
	// watchdog re-queues it (default 2 min); a pending run whose plan message
	// was lost is re-planned after the same time.
	LaunchTimeout time.Duration
	// DeadlineGrace is added to a sandbox's agent + verifier timeouts to
	// give its deadline (default 5 min).
	DeadlineGrace time.Duration
	// MaxSandboxLifetime bounds a sandbox whose task sets no agent timeout
	// (default 24 h).
	MaxSandboxLifetime time.Duration
	// LostGrace is how long a running slot's sandbox may be missing from the
	// driver's list before the slot is declared lost (default 2 min).
	LostGrace time.Duration
	// Platform is what this deployment's sandboxes can do; submit refuses
	// harnesses they cannot run (the zero value: no network installs).
	Platform harness.Platform
	// CheckModel, when set, says whether an agent's model can serve a
	// harness speaking wireAPI through the model gateway (the model
	// resolves to an upstream that serves that API); submit rejects the
	// agent otherwise. nil skips the check.
	CheckModel func(m modelref.Model, wireAPI string) error
	// CheckPriced, when set, says whether the model gateway can price an
	// agent's model (gateway.Resolver.CheckPriced); submit rejects a run
	// with max_cost_usd_per_attempt when an agent's model through the
	// gateway has no price, since its calls would never spend the budget.
	// nil skips the check.
	CheckPriced func(m modelref.Model) error
	// HostsModels reports that the operator configured a hosted-model
	// endpoint, so the New Run form offers hosted models (submit checks
	// each through CheckModel either way).
	HostsModels bool
	// MetricsInterval is how often a running run's metrics are recomputed at
	// most (default 2 s); an ended run's always are.
	MetricsInterval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives operational logs (default slog.Default()).
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.GateDelay, 2*time.Second)
	def(&o.MaxGateDelay, 30*time.Second)
	def(&o.RetryBackoff, 5*time.Second)
	def(&o.LaunchTimeout, 2*time.Minute)
	def(&o.DeadlineGrace, 5*time.Minute)
	def(&o.MaxSandboxLifetime, 24*time.Hour)
	def(&o.LostGrace, 2*time.Minute)
	def(&o.MetricsInterval, 2*time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// core is what the stages of one process share: the data model, the
// options and the in-process caches. Each stage embeds it by pointer, so
// stages built together (New) share one core and its caches.
type core struct {
	opts  Options
	recs  *records.Store
	log   *slog.Logger
	facts *facts // facts fixed at submission, and facts already written

	metricsMu sync.Mutex
	metricsAt map[string]metricsMark // last metrics recompute of running runs
}

func newCore(tbl store.Table, opts Options) *core {
	opts = opts.withDefaults()
	recs := records.New(tbl)
	return &core{opts: opts, recs: recs, log: opts.Logger, facts: newFacts(recs), metricsAt: map[string]metricsMark{}}
}

// Service is every stage on one set of ports sharing one core: the shape of
// `gauntlet local`, which runs the whole pipeline in one process. A cloud
// function builds only its own stage (NewGrader and its siblings).
//
// The stages are fields, not embedded: Service's own methods (facade.go)
// are the pipeline's entry points, each handing its call to the stage that
// owns it, so its method set is that list and not the union of every
// stage's internals.
type Service struct {
	core       *core
	Submitter  *Submitter
	Planner    *Planner
	Stopper    *Stopper
	Dispatcher *Dispatcher
	Grader     *Grader
	Ingester   *Ingester
	Recomputer *Recomputer
	Watchdog   *Watchdog
	Reconciler *Reconciler
}

// New returns a Service on the ports. Every port must be set.
func New(p Ports, opts Options) (*Service, error) {
	if p.Table == nil || p.Plan == nil || p.Slots == nil || p.Completions == nil || p.Results == nil ||
		p.Blobs == nil || p.Secrets == nil || p.Sandboxes == nil {
		return nil, errors.New("pipeline: every port (table, plan/slots/completions/results queues, blobs, secrets, sandboxes) is required")
	}
	c := newCore(p.Table, opts)
	return &Service{
		core:       c,
		Submitter:  &Submitter{core: c, ports: SubmitterPorts{Table: p.Table, Plan: p.Plan}},
		Planner:    newPlanner(c, PlannerPorts{Table: p.Table, Plan: p.Plan, Slots: p.Slots, Sandboxes: p.Sandboxes}),
		Stopper:    &Stopper{core: c, ports: StopperPorts{Table: p.Table, Plan: p.Plan}},
		Dispatcher: &Dispatcher{core: c, ports: DispatcherPorts{Table: p.Table, Slots: p.Slots, Completions: p.Completions, Results: p.Results, Secrets: p.Secrets, Sandboxes: p.Sandboxes, Space: p.Space}},
		Grader:     &Grader{core: c, ports: GraderPorts{Table: p.Table, Results: p.Results, Blobs: p.Blobs}},
		Ingester:   &Ingester{core: c, ports: IngesterPorts{Table: p.Table, Slots: p.Slots}},
		Recomputer: &Recomputer{core: c},
		Watchdog:   newWatchdog(c, WatchdogPorts{Table: p.Table, Plan: p.Plan, Slots: p.Slots, Completions: p.Completions, Sandboxes: p.Sandboxes}),
		Reconciler: &Reconciler{core: c, ports: ReconcilerPorts{Table: p.Table, Slots: p.Slots, Completions: p.Completions, Sandboxes: p.Sandboxes}},
	}, nil
}

// Records returns the data model the stages write (for read paths such as
// the API).
func (s *core) Records() *records.Store { return s.recs }

func (s *core) now() time.Time { return s.opts.Now().UTC() }
