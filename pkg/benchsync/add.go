package benchsync

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/hub"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/registry"
)

// maxListedNames bounds how many dataset names an UnknownDatasetError lists.
const maxListedNames = 20

// UnknownDatasetError reports a spec the registry does not hold. It wraps
// harbor.ErrDatasetNotFound (Version == "") or harbor.ErrVersionNotFound.
type UnknownDatasetError struct {
	Registry string
	Name     string
	// Version is the version asked for; "" when the dataset itself is unknown.
	Version string
	// Known lists what exists: the dataset's versions, or (when the dataset
	// is unknown) up to 20 dataset names, with More counting the rest.
	Known []string
	More  int
}

// Error implements error.
func (e *UnknownDatasetError) Error() string {
	list := strings.Join(e.Known, ", ")
	if e.More > 0 {
		list += fmt.Sprintf(" and %d more", e.More)
	}
	if e.Version == "" {
		return fmt.Sprintf("dataset %q is not in registry %s; datasets: %s", e.Name, e.Registry, list)
	}
	return fmt.Sprintf("dataset %s has no version %q in registry %s; versions: %s", e.Name, e.Version, e.Registry, list)
}

// Unwrap returns the harbor sentinel the error corresponds to.
func (e *UnknownDatasetError) Unwrap() error {
	if e.Version == "" {
		return harbor.ErrDatasetNotFound
	}
	return harbor.ErrVersionNotFound
}

// syncSource is where a benchmark syncs from, stored beside its record so a
// sync needs only the workspace and key.
type syncSource struct {
	// Registry is the registry location; "" means the service's configured
	// registry.
	Registry string `json:"registry,omitempty"`
	// Dir is a local dataset directory (managed benchmarks only), used
	// instead of a registry.
	Dir string `json:"dir,omitempty"`
	// Spec is the resolved "name@version".
	Spec string `json:"spec"`
	// Managed holds the catalog policy of a managed benchmark; nil for
	// benchmarks added from the registry.
	Managed *managedPolicy `json:"managed,omitempty"`
	// Package is a Harbor package dataset, read from the configured
	// package registry instead of Registry.
	Package *packageSource `json:"package,omitempty"`
	// Repo is a dataset in a git repository.
	Repo *repoSource `json:"repo,omitempty"`
}

// resolve reads the registry at location and resolves name@version
// (version "" = the one Harbor picks).
func (s *fetcher) resolve(ctx context.Context, location, name, version string) (harbor.Dataset, error) {
	src, err := s.open(location)
	if err != nil {
		return harbor.Dataset{}, fmt.Errorf("%w: %w", ErrRegistryUnavailable, err)
	}
	defer src.Close()
	reg, err := src.Registry(ctx)
	if err != nil {
		if errors.Is(err, registry.ErrUnreachable) || errors.Is(err, registry.ErrAddressRefused) || ctx.Err() != nil {
			return harbor.Dataset{}, fmt.Errorf("%w: %w", ErrRegistryUnavailable, err)
		}
		return harbor.Dataset{}, fmt.Errorf("%w: %w", ErrRegistryInvalid, err)
	}
	return resolveIn(reg, location, name, version)
}

func resolveIn(reg harbor.Registry, location, name, version string) (harbor.Dataset, error) {
	d, err := reg.Resolve(name, version)
	switch {
	case errors.Is(err, harbor.ErrDatasetNotFound):
		names := reg.Names()
		e := &UnknownDatasetError{Registry: location, Name: name, Known: names}
		if len(names) > maxListedNames {
			e.Known, e.More = names[:maxListedNames], len(names)-maxListedNames
		}
		return harbor.Dataset{}, e
	case errors.Is(err, harbor.ErrVersionNotFound):
		return harbor.Dataset{}, &UnknownDatasetError{Registry: location, Name: name, Version: version, Known: reg.Versions(name)}
	case errors.Is(err, harbor.ErrInvalidEntry):
		// Only this dataset version's entry is broken; the registry's
		// other datasets still resolve.
		return harbor.Dataset{}, fmt.Errorf("%w: registry %s: %w", ErrRegistryInvalid, location, err)
	case err != nil:
		return harbor.Dataset{}, err
	}
	return d, nil
}

// Add is Service.Add.
func (s *adder) Add(ctx context.Context, ws, spec string, creds ...benchmark.RegistryCredential) (records.Benchmark, error) {
	if hub.IsPackageSpec(spec) {
		// A name with a '/' is a package dataset, as in Harbor's CLI.
		return s.addPackage(ctx, ws, AddRequest{Spec: spec, Credentials: creds})
	}
	name, version, err := harbor.ParseSpec(spec)
	if err != nil {
		return records.Benchmark{}, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	if creds, err = s.checkCredentials(ctx, ws, creds); err != nil {
		return records.Benchmark{}, err
	}
	d, err := s.resolve(ctx, s.registry, name, version)
	if err != nil {
		return records.Benchmark{}, err
	}
	key := benchmark.KeyFor(d.Name, d.Version)
	if !benchmark.ValidKey(key) {
		return records.Benchmark{}, fmt.Errorf("%w: %s gives no usable benchmark key", ErrInvalidSpec, d.Spec())
	}
	now := s.now().UTC()
	b := records.Benchmark{
		Workspace: ws, Key: key, Name: d.Name, Description: d.Description,
		Source: benchmark.Source{Type: benchmark.Harbor, Ref: d.Spec()},
		Status: records.SyncPending, Total: len(d.Tasks), RegistryCredentials: creds, CreatedAt: now, UpdatedAt: now,
	}
	if existing, err := s.benchmarks.Benchmark(ctx, ws, key); err == nil {
		return sameHarbor(existing, b)
	} else if !errors.Is(err, records.ErrNotFound) {
		return records.Benchmark{}, err
	}
	created, err := s.benchmarks.CreateBenchmark(ctx, b)
	if records.IsConditionFailed(err) {
		existing, gerr := s.benchmarks.Benchmark(ctx, ws, key)
		if gerr != nil {
			return records.Benchmark{}, gerr
		}
		return sameHarbor(existing, b)
	}
	if err != nil {
		return records.Benchmark{}, err
	}
	if err := s.benchmarks.PutSyncSource(ctx, ws, key, syncSource{Spec: d.Spec()}); err != nil {
		return records.Benchmark{}, err
	}
	s.log.InfoContext(ctx, "benchmark added", "workspace", ws, "key", key, "spec", d.Spec(), "tasks", len(d.Tasks),
		"registry_credentials", len(creds))
	return created, nil
}

// sameHarbor returns existing when it is the harbor benchmark want
// describes, else a conflict.
func sameHarbor(existing, want records.Benchmark) (records.Benchmark, error) {
	if existing.Source.Type == benchmark.Harbor && existing.Source.Ref == want.Source.Ref {
		if !sameCredentials(existing.RegistryCredentials, want.RegistryCredentials) {
			return records.Benchmark{}, fmt.Errorf("%w: benchmark %s is already added with other registry credentials (%s); remove it and add it again to change them", ErrConflict, want.Key, describeCredentials(existing.RegistryCredentials))
		}
		return existing, nil
	}
	return records.Benchmark{}, fmt.Errorf("%w: benchmark key %q is already used by %s benchmark %s", ErrConflict, want.Key, existing.Source.Type, existing.Source.Ref)
}

// Retry is Service.Retry.
func (s *adder) Retry(ctx context.Context, ws, key string) (records.Benchmark, error) {
	now := s.now().UTC()
	st, err := s.benchmarks.UpdateSync(ctx, ws, key, func(st *records.SyncState) error {
		b := &st.Benchmark
		switch {
		case b.Status == records.SyncReady:
			return fmt.Errorf("%w: benchmark %s is already synced (version %s); nothing to retry", ErrConflict, key, b.ReadyVersion)
		case b.Status == records.SyncPending:
			return records.ErrNoChange
		case b.Status == records.SyncSyncing && !s.leaseExpired(*b, now):
			return fmt.Errorf("%w: benchmark %s is syncing (%d/%d tasks)", ErrConflict, key, b.Synced, b.Total)
		}
		b.Status, b.SyncError, b.Synced, b.UpdatedAt = records.SyncPending, "", 0, now
		return nil
	})
	return st.Benchmark, err
}
