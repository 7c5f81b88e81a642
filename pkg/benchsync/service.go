// Package benchsync owns how benchmarks get into a workspace and how their
// task lists are synced: adding a Harbor dataset by name[@version],
// installing the operator's managed catalog, and the Sync handler that pages
// a dataset's tasks in (pending → syncing (N/M) → ready | failed), bundles
// each task directory into the blob store and stores the pinned manifest;
// the scheduled Refresh that re-resolves ready benchmarks (switching their
// ready version when the content moved, never their status); and Delete,
// which never removes a manifest version a run pinned.
package benchsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/registry"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// DefaultLease is how long a sync may go without recording progress before
// another delivery of its message may take it over.
const DefaultLease = 15 * time.Minute

// Errors the service returns; API handlers map them with errors.Is.
var (
	// ErrConflict wraps records.ErrConflict: the request contradicts what
	// is stored (a key taken by another source, deleting a managed
	// benchmark, retrying a ready one).
	ErrConflict = records.ErrConflict
	// ErrNotFound wraps records.ErrNotFound: no such benchmark.
	ErrNotFound = records.ErrNotFound
	// ErrInvalidSpec reports a malformed name[@version].
	ErrInvalidSpec = errors.New("invalid dataset spec")
	// ErrRegistryUnavailable reports a registry that could not be read.
	ErrRegistryUnavailable = errors.New("registry unavailable")
	// ErrRegistryInvalid reports a registry that was read but is not a
	// valid registry.json; the error says the file, line and field.
	ErrRegistryInvalid = errors.New("registry invalid")
	// ErrSyncInProgress reports a sync another worker holds the lease of;
	// the message should be delivered again later.
	ErrSyncInProgress = errors.New("sync in progress elsewhere")
	// ErrPoison marks a sync message that can never be processed.
	ErrPoison = errors.New("poison message")
)

// Opener opens a registry location (see registry.Open).
type Opener func(location string) (registry.Source, error)

// Config wires a Service.
type Config struct {
	// Records are the stored records the service reads and writes, one
	// interface per aggregate (StoreRecords gives a records.Store's).
	Records Records
	Blobs   blob.Store
	// Open opens registry locations; default registry.OpenWith with the
	// work dir for git checkouts.
	Open Opener
	// Registry is the platform's registry location (URL or path) that
	// Add resolves specs against.
	Registry string
	// PackageRegistry is the URL of the Harbor package registry that
	// package datasets ("org/name@ref") are resolved in; "" is Harbor's
	// own (hub.DefaultURL). PackagePublishableKey is its public client
	// key ("" = Harbor's).
	PackageRegistry       string
	PackagePublishableKey string
	// WorkDir holds task directories while they are fetched; default
	// os.TempDir().
	WorkDir string
	// Now is the clock; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Lease is DefaultLease when zero.
	Lease time.Duration
	// AllowPrivateNetworks lets the default Open reach loopback, private
	// and link-local addresses and git's file/ssh/git transports (see
	// registry.Options.AllowPrivateNetworks); off, registries' URLs reach
	// public addresses only.
	AllowPrivateNetworks bool
	// Environments, when set, makes every sync prepare the task images
	// (see Environments); nil stores manifests without environments.
	Environments *Environments
	// Secrets holds the workspace secret records that benchmarks name as
	// registry credentials (RegistryCredential); nil refuses benchmarks
	// that name any.
	Secrets secret.Store
}

// Service adds benchmarks to workspaces and syncs their task lists. Each
// concern is a type of its own on the ports and settings they share:
// adding (adder), the managed catalog (cataloger), removal (remover), the
// sync of a task list (syncer), the background refresh (refresher), and
// below the last two, fetching sources, tasks and images (fetcher).
type Service struct {
	*deps
	adds      *adder
	catalog   *cataloger
	removal   *remover
	syncs     *syncer
	refreshes *refresher
}

// deps is what every concern of the service shares: the stored records it
// reads and writes, the blob store, the registry openers and settings.
type deps struct {
	benchmarks    Benchmarks
	runs          RunPins
	boards        Leaderboards
	secretRecords SecretRecords
	blobs         blob.Store
	open          Opener
	registry      string
	workDir       string
	now           func() time.Time
	log           *slog.Logger
	lease         time.Duration
	envs          *Environments
	secrets       secret.Store
	// inflight are the syncs and refreshes this process runs (Delete
	// cancels a removed benchmark's).
	inflight inflight

	pkgURL, pkgKey string
	allowPrivate   bool
}

// fetcher fetches what a sync or refresh stores: it opens the benchmark's
// source, fetches, loads and bundles its tasks, prepares their images and
// stores the manifest version.
type fetcher struct{ *deps }

// adder adds benchmarks from the registry, a package or a repository, and
// retries failed syncs.
type adder struct{ *fetcher }

// cataloger installs the managed catalog.
type cataloger struct{ *deps }

// remover removes benchmarks.
type remover struct{ *deps }

// syncer syncs a benchmark's task list (Sync), handing refresh messages to
// the refresher.
type syncer struct {
	*fetcher
	refresher *refresher
}

// refresher lists the benchmarks due for a refresh and refreshes them.
type refresher struct{ *fetcher }

// New returns a Service; Records and Blobs are required.
func New(cfg Config) (*Service, error) {
	if !cfg.Records.complete() || cfg.Blobs == nil {
		return nil, errors.New("benchsync: Records (every repository) and Blobs are required")
	}
	s := &deps{
		benchmarks: cfg.Records.Benchmarks, runs: cfg.Records.Runs, boards: cfg.Records.Boards, secretRecords: cfg.Records.SecretRecords,
		blobs: cfg.Blobs, open: cfg.Open, registry: cfg.Registry,
		workDir: cfg.WorkDir, now: cfg.Now, log: cfg.Logger, lease: cfg.Lease,
		envs: cfg.Environments, secrets: cfg.Secrets,
		pkgURL: cfg.PackageRegistry, pkgKey: cfg.PackagePublishableKey, allowPrivate: cfg.AllowPrivateNetworks,
	}
	if s.envs != nil && s.envs.Resolver == nil {
		return nil, errors.New("benchsync: Environments needs a Resolver")
	}
	if s.workDir == "" {
		s.workDir = os.TempDir()
	}
	if err := os.MkdirAll(s.workDir, 0o755); err != nil {
		return nil, fmt.Errorf("benchsync: work dir: %w", err)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.open == nil {
		opts := registry.Options{TempDir: s.workDir, Logger: s.log, AllowPrivateNetworks: cfg.AllowPrivateNetworks}
		s.open = func(location string) (registry.Source, error) { return registry.OpenWith(location, opts) }
	}
	if s.lease <= 0 {
		s.lease = DefaultLease
	}
	f := &fetcher{s}
	refreshes := &refresher{f}
	return &Service{deps: s, adds: &adder{f}, catalog: &cataloger{s}, removal: &remover{s},
		syncs: &syncer{fetcher: f, refresher: refreshes}, refreshes: refreshes}, nil
}

// Add adds dataset spec ("name" or "name@version") from the configured
// registry — or, when the name has a '/', package dataset
// "org/name[@ref]" from the configured package registry — to the workspace as a harbor benchmark in status pending, keyed
// benchmark.KeyFor(name, resolved version). Adding the same dataset version
// again returns the stored record; a key held by anything else is a
// conflict. The caller enqueues NewSyncMessage(ws, key) afterwards.
//
// creds name the workspace secret records the sync pulls and builds the
// benchmark's images with, per registry; each record must exist. A bad
// entry is a *benchmark.FieldError naming it, and nothing is written.
// Adding the benchmark again with other credentials is a conflict.
func (s *Service) Add(ctx context.Context, ws, spec string, creds ...benchmark.RegistryCredential) (records.Benchmark, error) {
	return s.adds.Add(ctx, ws, spec, creds...)
}

// AddFrom adds a benchmark from any of the three sources (see AddRequest)
// as Add does; a bad field is a *benchmark.FieldError naming it and
// nothing is written.
func (s *Service) AddFrom(ctx context.Context, ws string, req AddRequest) (records.Benchmark, error) {
	return s.adds.AddFrom(ctx, ws, req)
}

// Retry moves a failed sync back to pending (the caller then enqueues
// NewSyncMessage). A pending benchmark, or one whose sync lease has
// expired, is returned as pending too; a ready or actively syncing one is a
// conflict.
func (s *Service) Retry(ctx context.Context, ws, key string) (records.Benchmark, error) {
	return s.adds.Retry(ctx, ws, key)
}

// InstallCatalog makes every benchmark of the catalog appear in the
// workspace as a managed benchmark, and returns the sync messages the caller
// must enqueue: one for each benchmark that is new, whose catalog entry
// changed since the last install (it goes back to pending), or whose
// pending or syncing state was left behind by a stopped process. Running it
// again with the same catalog changes nothing.
//
// Relative registry paths and dirs of cat are resolved against catalogDir
// (pass "" when cat came from benchmark.ParseCatalog with the catalog's
// path, which already did that) and stored absolute. An entry whose key a
// harbor benchmark already holds is reported as a conflict, after every
// other entry has been installed.
func (s *Service) InstallCatalog(ctx context.Context, ws string, cat benchmark.Catalog, catalogDir string) ([]SyncMessage, error) {
	return s.catalog.InstallCatalog(ctx, ws, cat, catalogDir)
}

// Delete removes a harbor benchmark without breaking any run of it:
//
//   - While a run of it is not terminal (pending, queued, running or
//     stopping) Delete refuses with ErrConflict naming the runs: they still
//     read its tasks.
//   - Otherwise it removes the benchmark record first (no new run can pin
//     it, no sync or refresh can touch it), cancels the syncs and
//     refreshes of it that this process runs (their image builds with
//     them) and waits for them to return, then its sync state, sync
//     source and leaderboard, and last every manifest version that no run
//     pinned. Versions some run pinned stay, so those runs' pages,
//     configuration, results and downloads keep working.
//
// Managed benchmarks cannot be deleted (a conflict). Runs are found through
// the benchmark's run index and, because that index is eventually
// consistent on DynamoDB, also through the strongly read active-run
// markers, so a run submitted just before the delete is seen.
func (s *Service) Delete(ctx context.Context, ws, key string) error {
	return s.removal.Delete(ctx, ws, key)
}

// Sync pages the task list of the benchmark msg names in: it takes the
// benchmark from pending or failed (or from a syncing whose lease expired)
// to syncing, fetches, loads and bundles every task, stores the manifest
// and marks the benchmark ready with its version and digest (and enters it
// in the refresh index). Problems the user must fix leave it failed with
// the reason, and Sync returns nil; a ready benchmark makes Sync a no-op,
// so redeliveries change nothing. A refresh message (msg.Refresh) is
// handled as refresh.go describes. An error return means "deliver again
// later" (ErrSyncInProgress, store or blob trouble, cancellation) or,
// wrapping ErrPoison, "never".
func (s *Service) Sync(ctx context.Context, msg SyncMessage) error {
	return s.syncs.Sync(ctx, msg)
}

// Refresh returns one refresh message for every benchmark, harbor or
// managed, in every workspace, whose last successful sync is older than
// olderThan at now, oldest first. It reads the refresh index (a range of
// one partition; no scan) and skips benchmarks a live refresh holds. The
// caller enqueues the messages; Sync handles them, and a message whose
// benchmark synced after it was listed changes nothing, so listing twice
// or delivering twice is harmless.
func (s *Service) Refresh(ctx context.Context, now time.Time, olderThan time.Duration) ([]SyncMessage, error) {
	return s.refreshes.Refresh(ctx, now, olderThan)
}
