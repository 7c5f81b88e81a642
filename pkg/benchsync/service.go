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
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

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
	Records *records.Store
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

// Service adds benchmarks to workspaces and syncs their task lists.
type Service struct {
	records  *records.Store
	blobs    blob.Store
	open     Opener
	registry string
	workDir  string
	now      func() time.Time
	log      *slog.Logger
	lease    time.Duration
	envs     *Environments
	secrets  secret.Store
	// inflight are the syncs and refreshes this process runs (Delete
	// cancels a removed benchmark's).
	inflight inflight

	pkgURL, pkgKey string
	allowPrivate   bool
}

// New returns a Service; Records and Blobs are required.
func New(cfg Config) (*Service, error) {
	if cfg.Records == nil || cfg.Blobs == nil {
		return nil, errors.New("benchsync: Records and Blobs are required")
	}
	s := &Service{
		records: cfg.Records, blobs: cfg.Blobs, open: cfg.Open, registry: cfg.Registry,
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
	return s, nil
}
