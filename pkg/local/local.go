// Package local is the embedded runtime of `gauntlet local`: it builds the
// pipeline Service and the benchmark sync service on the local adapters —
// one SQLite file for the table, change log and queues, blobs and encrypted
// secrets under the data dir, and the bubblewrap sandbox driver — and runs
// every function the cloud runs as a Lambda as a row of one loop table
// (loops.go): pollers for the plan, slots, completions, results and sync
// queues, the change-stream tailer feeding Recompute from a saved
// checkpoint, the watchdog ticker and the scheduled benchmark refresh. A
// crash at any point recovers on restart: undeleted messages reappear after
// their visibility timeout, the tailer resumes from its checkpoint, the
// watchdog finds slots whose sandboxes died, and a sync resumes once its
// lease expires.
package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/fnspec"
	"github.com/gauntlet-bench/gauntlet/pkg/fsblob"
	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/localsandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/localsecret"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
)

// SandboxPolicy is the operator's limits for every sandbox (zero values =
// the runner's defaults; see docs/SANDBOX.md).
type SandboxPolicy struct {
	// PidsLimit bounds each phase's processes (0 = 1024, -1 = none).
	PidsLimit int
	// StorageMB is the storage limit of attempts whose task sets none
	// (0 = 10240, -1 = none).
	StorageMB int
	// NetworkCeiling is the most permissive network mode any phase gets:
	// "" or public, allowlist, no-network.
	NetworkCeiling string
}

// Options configure a Platform.
type Options struct {
	// DataDir holds everything: gauntlet.db, blobs/, secrets, sandboxes/.
	DataDir string
	// RunnerPath is the sandbox-runner binary.
	RunnerPath string
	// Isolation is "bwrap" (default: each task's image, from Images),
	// "bwrap-host" (the host's root filesystem; a development opt-in) or
	// "process" (no isolation; opt-in).
	Isolation string
	// Images gives the sandboxes their tasks' unpacked images (required
	// by "bwrap").
	Images localsandbox.Images
	// Environments, when set, makes benchmark syncs prepare task images
	// (pinned digests, builds, unavailable tasks; see benchsync.Environments
	// and pkg/localimages).
	Environments *benchsync.Environments
	// AgentsDir is mounted read-only at /agent in sandboxes ("" = none).
	AgentsDir string
	// AgentBundles is the agent-bundle cache ("" = the default cache).
	AgentBundles string
	// ModelGatewayConfig is the operator's model gateway TOML ("" = none).
	ModelGatewayConfig string
	// StaticBinaries are the platform's static helper programs harness rows
	// run from /opt/gauntlet/bin (terminus-2). Open copies them into the data
	// dir's static-bin/ so that only they, not their neighbours, are
	// mounted into sandboxes. A missing one is an error naming it.
	StaticBinaries []string
	// Sandbox is the operator's policy for every sandbox.
	Sandbox SandboxPolicy
	// Catalog is the managed-benchmark catalog file; Open installs it in the
	// platform workspace through benchsync (as the cloud does) and syncs the
	// benchmarks that need it before returning, so those whose tasks are on
	// this machine are ready. "" installs nothing.
	Catalog string
	// DeferCatalog leaves the catalog to InstallCatalog, which the caller
	// runs when it chooses (gauntlet local: after it listens).
	DeferCatalog bool
	// MaxSandboxes caps concurrent sandboxes across runs (0 = no cap).
	MaxSandboxes int
	// SecretsKey is the operator's key for the secret file; the zero Key
	// keeps the zero-setup key beside the file in the data dir (see
	// localsecret.OpenWithKey).
	SecretsKey localsecret.Key
	// MinFreeMB is the data dir's free-space floor in MiB: below it no
	// sandbox is launched (slots wait without spending retries) and the
	// platform logs it (0 = DefaultMinFreeMB; -1 = no floor).
	MinFreeMB int
	// SpaceInterval is how often the data dir's free space is sampled
	// (default 1 s).
	SpaceInterval time.Duration
	// Registry is the Harbor registry location benchmarks are added from.
	Registry string
	// PackageRegistry and PackageRegistryKey locate the Harbor package
	// registry "org/name" datasets are added from ("" = Harbor's).
	PackageRegistry, PackageRegistryKey string
	// RefreshEvery is how often benchmarks are checked for a registry
	// refresh (default DefaultRefreshEvery; negative turns refreshes off).
	RefreshEvery time.Duration
	// RefreshAfter is how long after its last sync a benchmark is refreshed
	// (default DefaultRefreshAfter).
	RefreshAfter time.Duration
	// AllowPrivateRegistry lets registry and git fetches reach loopback,
	// private and link-local addresses (benchsync.Config.AllowPrivateNetworks).
	AllowPrivateRegistry bool
	// Workers is how many messages each queue poller handles at once
	// (default 4; the plan poller always uses 1).
	Workers int
	// WatchInterval is the watchdog period (default 30 s).
	WatchInterval time.Duration
	// Visibility, when set, is the visibility timeout of every pipeline
	// queue instead of the per-queue defaults (the sync queue's matches the
	// sync lease) (a received message that is not deleted
	// reappears after it).
	Visibility time.Duration
	// BusyTimeout is how long a database write waits for a lock another
	// process holds on the file (default sqlite.DefaultBusyTimeout); past
	// it the write fails with SQLITE_BUSY and its message is delivered again.
	BusyTimeout time.Duration
	// Pipeline tunes the handlers (timeouts, backoffs); MaxSandboxes and
	// Logger are filled from these Options.
	Pipeline pipeline.Options
	Logger   *slog.Logger
}

// Queue names, those of the function table's queues; each has a
// dead-letter queue named <name>-dlq.
const (
	PlanQueue        = string(fnspec.PlanQueue)
	SlotsQueue       = string(fnspec.SlotsQueue)
	CompletionsQueue = string(fnspec.CompletionsQueue)
	ResultsQueue     = string(fnspec.ResultsQueue)
	SyncQueue        = string(fnspec.SyncQueue)
)

// Refresh defaults: as in the cloud, a benchmark is re-resolved against its
// registry about hourly, so `head` datasets pick up new commits.
const (
	DefaultRefreshEvery = 10 * time.Minute
	DefaultRefreshAfter = 50 * time.Minute
)

// maxReceives is how often a failing message is delivered before it is
// dead-lettered.
const maxReceives = 10

// DefaultMinFreeMB is the default free-space floor of the data dir: room
// for a few attempts' work dirs and outputs and the database's growth.
const DefaultMinFreeMB = 1024

// Platform is the embedded platform on one data dir.
type Platform struct {
	opts    Options
	log     *slog.Logger
	db      *sqlite.DB
	blobs   *fsblob.Store
	secrets *localsecret.Store
	driver  *localsandbox.Driver
	svc     *pipeline.Service
	sync    *benchsync.Service
	// benchmarks is the sync service's queued front (the API's benchmarks
	// port, the sync loop and the refresh schedule).
	benchmarks benchsync.Queued
	space      *diskspace.Monitor
	queues     map[string]*sqlite.Queue
	dlqs       map[string]*sqlite.Queue

	mu      sync.Mutex
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started bool
	closed  bool
}

// Open opens (creating when needed) the platform's state in opts.DataDir and
// builds the service. It starts no loop; call Start.
func Open(ctx context.Context, opts Options) (*Platform, error) {
	if opts.DataDir == "" {
		return nil, errors.New("local platform: data dir is empty")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.WatchInterval <= 0 {
		opts.WatchInterval = 30 * time.Second
	}
	if opts.SpaceInterval <= 0 {
		opts.SpaceInterval = time.Second
	}
	if opts.RefreshEvery == 0 {
		opts.RefreshEvery = DefaultRefreshEvery
	}
	if opts.RefreshAfter <= 0 {
		opts.RefreshAfter = DefaultRefreshAfter
	}
	if opts.MinFreeMB < -1 {
		return nil, fmt.Errorf("local platform: min free MB %d: want -1 (no floor), 0 (the default, %d) or a positive number of MiB", opts.MinFreeMB, DefaultMinFreeMB)
	}
	if err := SecureDataDir(opts.DataDir); err != nil {
		return nil, fmt.Errorf("local platform: %w", err)
	}
	p := &Platform{opts: opts, log: opts.Logger, queues: map[string]*sqlite.Queue{}, dlqs: map[string]*sqlite.Queue{},
		space: diskspace.NewMonitor(opts.DataDir, floorBytes(opts.MinFreeMB), opts.Logger)}
	if err := p.open(); err != nil {
		_ = p.closeAdapters()
		return nil, err
	}
	if opts.Catalog != "" && !opts.DeferCatalog {
		if err := p.InstallCatalog(ctx); err != nil {
			_ = p.closeAdapters()
			return nil, err
		}
	}
	return p, nil
}

func (p *Platform) open() error {
	var err error
	if p.db, err = sqlite.OpenWith(filepath.Join(p.opts.DataDir, DatabaseFile), sqlite.Options{BusyTimeout: p.opts.BusyTimeout}); err != nil {
		return fmt.Errorf("local platform: %w", err)
	}
	for _, port := range fnspec.Queues {
		name := string(port)
		if p.dlqs[name], err = p.db.Queue(name+"-dlq", sqlite.QueueOptions{}); err != nil {
			return err
		}
		if p.queues[name], err = p.db.Queue(name, sqlite.QueueOptions{MaxReceives: maxReceives, DeadLetter: name + "-dlq"}); err != nil {
			return err
		}
	}
	if p.blobs, err = fsblob.New(filepath.Join(p.opts.DataDir, "blobs")); err != nil {
		return fmt.Errorf("local platform: %w", err)
	}
	if p.secrets, err = localsecret.OpenWithKey(filepath.Join(p.opts.DataDir, "secrets.json"), p.opts.SecretsKey, p.log); err != nil {
		return fmt.Errorf("local platform: %w", err)
	}
	staticBin, err := installStaticBinaries(filepath.Join(p.opts.DataDir, StaticBinDir), p.opts.StaticBinaries)
	if err != nil {
		return fmt.Errorf("local platform: %w", err)
	}
	p.driver, err = localsandbox.New(localsandbox.Config{DataDir: p.opts.DataDir, RunnerPath: p.opts.RunnerPath,
		Isolation: p.opts.Isolation, Images: p.opts.Images, AgentsDir: p.opts.AgentsDir, AgentBundles: p.opts.AgentBundles,
		ModelGatewayConfig: p.opts.ModelGatewayConfig, StaticBinDir: staticBin, PidsLimit: p.opts.Sandbox.PidsLimit, StorageMB: p.opts.Sandbox.StorageMB,
		NetworkCeiling: p.opts.Sandbox.NetworkCeiling, Blobs: p.blobs, Completions: p.queues[CompletionsQueue],
		Space: p.space, Logger: p.log})
	if err != nil {
		return fmt.Errorf("local platform: %w", err)
	}
	popts := p.opts.Pipeline
	popts.MaxSandboxes, popts.Logger = p.opts.MaxSandboxes, p.log
	if popts.CheckModel == nil {
		// The same provider table the runners' gateways use.
		models := gateway.NewResolver()
		if p.opts.ModelGatewayConfig != "" {
			data, err := os.ReadFile(p.opts.ModelGatewayConfig)
			if err != nil {
				return fmt.Errorf("local platform: model gateway config: %w", err)
			}
			if models, err = gateway.ParseOperatorConfig(data); err != nil {
				return fmt.Errorf("local platform: %s: %w", p.opts.ModelGatewayConfig, err)
			}
		}
		popts.CheckModel, popts.CheckPriced, popts.HostsModels = models.CheckModel, models.CheckPriced, models.HostsModels()
	}
	p.svc, err = pipeline.New(pipeline.Ports{Table: p.db.Table(), Plan: p.queues[PlanQueue], Slots: p.queues[SlotsQueue],
		Completions: p.queues[CompletionsQueue], Results: p.queues[ResultsQueue], Blobs: p.blobs, Secrets: p.secrets,
		Sandboxes: p.driver, Space: p.space}, popts)
	if err != nil {
		return err
	}
	p.sync, err = benchsync.New(benchsync.Config{Records: benchsync.StoreRecords(p.svc.Records()), Blobs: p.blobs, Registry: p.opts.Registry,
		WorkDir: filepath.Join(p.opts.DataDir, "sync"), Logger: p.log, Environments: p.opts.Environments,
		AllowPrivateNetworks: p.opts.AllowPrivateRegistry, Secrets: p.secrets,
		PackageRegistry: p.opts.PackageRegistry, PackagePublishableKey: p.opts.PackageRegistryKey})
	if err != nil {
		return fmt.Errorf("local platform: %w", err)
	}
	p.benchmarks = benchsync.Queued{Service: p.sync, Queue: p.queues[SyncQueue]}
	return nil
}

// floorBytes is the free-space floor of Options.MinFreeMB in bytes.
func floorBytes(minFreeMB int) uint64 {
	switch {
	case minFreeMB < 0:
		return 0
	case minFreeMB == 0:
		return DefaultMinFreeMB << 20
	}
	return uint64(minFreeMB) << 20
}

// InstallCatalog installs the managed catalog through benchsync — the
// benchmarks get sync state and are refreshed like any other — and runs the
// syncs it asks for right away. A benchmark that cannot be installed or
// synced (its tasks are not on this machine, say) is logged and left
// pending or failed; the others still install.
func (p *Platform) InstallCatalog(ctx context.Context) error {
	if p.opts.Catalog == "" {
		return nil
	}
	data, err := os.ReadFile(p.opts.Catalog)
	if err != nil {
		return fmt.Errorf("local platform: read catalog: %w", err)
	}
	cat, err := benchmark.ParseCatalog(data, p.opts.Catalog)
	if err != nil {
		return fmt.Errorf("local platform: %w", err)
	}
	msgs, err := p.sync.InstallCatalog(ctx, pipeline.PlatformWorkspace, cat, "")
	if err != nil {
		p.log.WarnContext(ctx, "managed benchmarks not installed", "catalog", p.opts.Catalog, "err", err)
	}
	for _, m := range msgs {
		if err := p.sync.Sync(ctx, m); err != nil {
			p.log.WarnContext(ctx, "managed benchmark not synced", "benchmark", m.Key, "err", err)
		}
	}
	return nil
}

// Service returns the pipeline service (for the API).
func (p *Platform) Service() *pipeline.Service { return p.svc }

// Records returns the data model.
func (p *Platform) Records() *records.Store { return p.svc.Records() }

// Benchmarks returns the benchmark sync service's queued front: what the
// API calls to add, retry, delete and refresh benchmarks.
func (p *Platform) Benchmarks() benchsync.Queued { return p.benchmarks }

// Blobs returns the blob store.
func (p *Platform) Blobs() *fsblob.Store { return p.blobs }

// Secrets returns the secret store.
func (p *Platform) Secrets() *localsecret.Store { return p.secrets }

// Space returns the data dir's free-space monitor.
func (p *Platform) Space() *diskspace.Monitor { return p.space }

// DB returns the SQLite database (queues and change stream, for tools and tests).
func (p *Platform) DB() *sqlite.DB { return p.db }

// Start runs every loop in the background until ctx ends or Close is called.
func (p *Platform) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.started {
		return errors.New("local platform: already started or closed")
	}
	p.started = true
	// What the sandboxes of an earlier process left (a bwrap that outlived
	// its runner, loop devices, mounts, sandbox dirs) ends first, so no
	// attempt of a crashed life runs beside its slot's next one.
	if rep, err := p.driver.Recover(ctx); err != nil {
		p.log.ErrorContext(ctx, "recover sandboxes at start", "err", err)
	} else if !rep.Empty() {
		p.log.InfoContext(ctx, "ended the sandboxes of the previous process", "processes", rep.Processes,
			"loop_devices", rep.LoopDevices, "unmounted", rep.Unmounted, "dirs", rep.Dirs)
	}
	// Every sandbox of an earlier process died with it: settle their slots
	// now rather than after the watchdog's grace (see pipeline.Reconcile).
	// Before the loops start, so nothing this process launches is touched.
	// Messages the previous process had received are visible again at
	// once: their handlers died with it.
	for _, c := range p.consumers() {
		if !c.release {
			continue
		}
		name := string(c.fn.Source)
		if n, err := p.queues[name].ReleaseInFlight(ctx); err != nil {
			p.log.ErrorContext(ctx, "release in-flight messages at start", "queue", name, "err", err)
		} else if n > 0 {
			p.log.InfoContext(ctx, "released in-flight messages of the previous process", "queue", name, "messages", n)
		}
	}
	if rec, err := p.svc.Reconcile(ctx); err != nil {
		p.log.ErrorContext(ctx, "reconcile at start", "err", err)
	} else if rec.Lost+rec.Requeued > 0 {
		p.log.InfoContext(ctx, "reconciled slots of the previous process", "lost", rec.Lost, "requeued", rec.Requeued)
	}
	ctx, p.cancel = context.WithCancel(ctx)
	for _, l := range p.loops() {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			l.run(ctx)
			p.log.Debug("loop stopped", "loop", l.name)
		}()
	}
	return nil
}

// Close stops the loops (waiting for in-flight messages), stops the sandbox
// driver (its running sandboxes end; the watchdog of the next start retries
// their slots) and closes the database.
func (p *Platform) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	cancel := p.cancel
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	p.wg.Wait()
	return p.closeAdapters()
}

func (p *Platform) closeAdapters() error {
	var errs []error
	if p.driver != nil {
		errs = append(errs, p.driver.Close())
	}
	if p.db != nil {
		errs = append(errs, p.db.Close())
	}
	return errors.Join(errs...)
}
