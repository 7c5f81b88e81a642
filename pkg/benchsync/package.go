package benchsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/hub"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/registry"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// ErrDatasetNotFound reports a package dataset, tag, revision or digest the
// package registry does not hold (or does not show the caller).
var ErrDatasetNotFound = errors.New("dataset not found")

// packageSource is a benchmark's Harbor package dataset.
type packageSource struct {
	// Ref is the reference as added ("org/name@latest"); a tag is
	// re-resolved by every sync and refresh, a revision or digest is not.
	Ref string `json:"ref"`
	// APIKeySecret names the workspace secret record holding the Harbor API
	// key private packages are read with; "" reads anonymously.
	APIKeySecret string `json:"api_key_secret,omitempty"`
}

// AddRequest is what a benchmark is added from: a registry.json spec
// ("name[@version]"), a package reference ("org/name[@ref]", told apart
// by its '/'), or a git repository (Repo).
type AddRequest struct {
	// Spec is the dataset: "name[@version]" or "org/name[@ref]"; with Repo,
	// an optional dataset name of the repository's registry.json.
	Spec string
	// Repo is a git repository URL with an optional "@ref" (branch, tag
	// or commit); "" for registry datasets.
	Repo string
	// Path is the repository directory holding the tasks (default
	// "tasks"); only with Repo.
	Path string
	// APIKeySecret names the workspace secret record with the Harbor API
	// key for a private package dataset; only with a package reference.
	APIKeySecret string
	// Credentials are the image registry logins (see Add).
	Credentials []benchmark.RegistryCredential
}

// AddFrom is Service.AddFrom.
func (s *adder) AddFrom(ctx context.Context, ws string, req AddRequest) (records.Benchmark, error) {
	switch {
	case req.Repo != "":
		return s.addRepo(ctx, ws, req)
	case hub.IsPackageSpec(req.Spec):
		return s.addPackage(ctx, ws, req)
	case req.APIKeySecret != "":
		return records.Benchmark{}, &benchmark.FieldError{Field: "api_key_secret", Message: "is only used with a package dataset (org/name[@ref]); registry.json datasets are public"}
	case req.Path != "":
		return records.Benchmark{}, &benchmark.FieldError{Field: "path", Message: "is only used with repo (a git repository dataset)"}
	}
	return s.Add(ctx, ws, req.Spec, req.Credentials...)
}

// addPackage resolves a package dataset and records the benchmark, keyed
// by the package name and, unless it is "latest", the ref.
func (s *adder) addPackage(ctx context.Context, ws string, req AddRequest) (records.Benchmark, error) {
	ref, err := hub.ParseRef(req.Spec)
	if err != nil {
		var re *hub.RefError
		if errors.As(err, &re) {
			return records.Benchmark{}, &benchmark.FieldError{Field: "source", Message: re.Error()}
		}
		return records.Benchmark{}, &benchmark.FieldError{Field: "source", Message: err.Error()}
	}
	if req.Path != "" {
		return records.Benchmark{}, &benchmark.FieldError{Field: "path", Message: "is only used with repo (a git repository dataset)"}
	}
	creds, err := s.checkCredentials(ctx, ws, req.Credentials)
	if err != nil {
		return records.Benchmark{}, err
	}
	src := syncSource{Spec: ref.String(), Package: &packageSource{Ref: ref.String(), APIKeySecret: req.APIKeySecret}}
	if req.APIKeySecret != "" {
		if err := s.checkSecret(ctx, ws, "api_key_secret", req.APIKeySecret, "a Harbor API key (sk-harbor-…)"); err != nil {
			return records.Benchmark{}, err
		}
	}
	ps, err := s.openPackage(ctx, ws, src.Package)
	if err != nil {
		return records.Benchmark{}, err
	}
	d, err := ps.Dataset(ctx)
	if err != nil {
		return records.Benchmark{}, s.packageError(ref, src.Package, err)
	}
	version := ""
	if ref.Version != hub.LatestTag {
		version = ref.Version
	}
	key := benchmark.KeyFor(ref.Package(), version)
	now := s.now().UTC()
	b := records.Benchmark{
		Workspace: ws, Key: key, Name: ref.Package(), Description: d.Version.Description,
		Source: benchmark.Source{Type: benchmark.Harbor, Ref: ref.String()},
		Status: records.SyncPending, Total: len(d.Tasks), RegistryCredentials: creds,
		SyncWarning: d.Version.Yanked(ref), CreatedAt: now, UpdatedAt: now,
	}
	return s.create(ctx, ws, b, src, "package", ref.String(), len(d.Tasks))
}

// create stores a new benchmark and its sync source; adding the same
// source again returns the stored record.
func (s *adder) create(ctx context.Context, ws string, b records.Benchmark, src syncSource, kind, spec string, tasks int) (records.Benchmark, error) {
	if !benchmark.ValidKey(b.Key) {
		return records.Benchmark{}, &benchmark.FieldError{Field: "source", Message: fmt.Sprintf("%s gives no usable benchmark key", spec)}
	}
	if existing, err := s.benchmarks.Benchmark(ctx, ws, b.Key); err == nil {
		return sameHarbor(existing, b)
	} else if !errors.Is(err, records.ErrNotFound) {
		return records.Benchmark{}, err
	}
	created, err := s.benchmarks.CreateBenchmark(ctx, b)
	if records.IsConditionFailed(err) {
		existing, gerr := s.benchmarks.Benchmark(ctx, ws, b.Key)
		if gerr != nil {
			return records.Benchmark{}, gerr
		}
		return sameHarbor(existing, b)
	}
	if err != nil {
		return records.Benchmark{}, err
	}
	if err := s.benchmarks.PutSyncSource(ctx, ws, b.Key, src); err != nil {
		return records.Benchmark{}, err
	}
	if b.SyncWarning != "" {
		s.log.WarnContext(ctx, "benchmark added with a warning", "workspace", ws, "key", b.Key, "warning", b.SyncWarning)
	}
	s.log.InfoContext(ctx, "benchmark added", "workspace", ws, "key", b.Key, "kind", kind, "spec", spec, "tasks", tasks,
		"registry_credentials", len(b.RegistryCredentials))
	return created, nil
}

// checkSecret checks that the workspace holds secret record name.
func (s *adder) checkSecret(ctx context.Context, ws, field, name, what string) error {
	if !secret.ValidName(name) {
		return &benchmark.FieldError{Field: field, Message: fmt.Sprintf("%q is not a secret record name: want %s, at most 128 bytes", name, secret.NamePattern)}
	}
	if s.secrets == nil {
		return &benchmark.FieldError{Field: field, Message: "this platform has no secret store configured for benchmark syncs"}
	}
	_, err := s.secretRecords.SecretRecord(ctx, secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: name})
	if errors.Is(err, records.ErrNotFound) {
		return &benchmark.FieldError{Field: field, Message: fmt.Sprintf("the workspace has no secret record %s (personal records are not used for syncs); set it first to %s: gauntlet secret set %s", name, what, name)}
	}
	if err != nil {
		return fmt.Errorf("look up secret record %s: %w", name, err)
	}
	return nil
}

// openPackage opens the package registry for src, reading its API key
// from the workspace secret record it names.
func (s *fetcher) openPackage(ctx context.Context, ws string, src *packageSource) (*registry.PackageSource, error) {
	ref, err := hub.ParseRef(src.Ref)
	if err != nil {
		return nil, failf("stored package reference: %v", err)
	}
	o := registry.PackageOptions{URL: s.pkgURL, PublishableKey: s.pkgKey,
		Options: registry.Options{TempDir: s.workDir, Logger: s.log, AllowPrivateNetworks: s.allowPrivate}}
	if src.APIKeySecret != "" {
		if s.secrets == nil {
			return nil, failf("package dataset %s names API key secret %s, and this platform's sync has no secret store configured", src.Ref, src.APIKeySecret)
		}
		v, err := s.secrets.Get(ctx, secret.Ref{Workspace: ws, Scope: secret.Workspace, Name: src.APIKeySecret})
		if errors.Is(err, secret.ErrNotFound) {
			return nil, failf("package dataset %s: the workspace has no secret record %s (deleted since the benchmark was added?); set it again to a Harbor API key and sync again", src.Ref, src.APIKeySecret)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("read secret record %s: %w", src.APIKeySecret, err)
		}
		o.APIKey = strings.TrimSpace(v.Reveal())
	}
	ps, err := registry.OpenPackage(ref, o)
	if err != nil {
		return nil, failf("package registry: %v", err)
	}
	return ps, nil
}

// packageError maps what the registry said about a package dataset to the
// service's errors (and so to HTTP statuses).
func (s *fetcher) packageError(ref hub.Ref, src *packageSource, err error) error {
	var (
		unavailable *hub.UnavailableTasksError
		f           *failure
	)
	switch {
	case errors.As(err, &f):
		return fmt.Errorf("%w: %s", ErrRegistryUnavailable, f.msg)
	case errors.Is(err, registry.ErrUnreachable), errors.Is(err, registry.ErrAddressRefused):
		return fmt.Errorf("%w: %w", ErrRegistryUnavailable, err)
	case errors.Is(err, hub.ErrUnauthorized):
		field := "api_key_secret"
		if src.APIKeySecret == "" {
			field = "source"
		}
		return &benchmark.FieldError{Field: field, Message: fmt.Sprintf("the package registry refused the request for %s: %v; check the Harbor API key in secret record %s", ref, err, src.APIKeySecret)}
	case errors.As(err, &unavailable):
		msg := unavailable.Error()
		if src.APIKeySecret == "" {
			msg += "; if they are private, add the dataset with api_key_secret naming a workspace secret record that holds a Harbor API key that may read them"
		}
		return &benchmark.FieldError{Field: "source", Message: msg}
	case errors.Is(err, hub.ErrNotFound):
		msg := err.Error()
		var nf *hub.NotFoundError
		if errors.As(err, &nf) && len(nf.Known) > 0 {
			msg += "; tags: " + strings.Join(nf.Known, ", ")
		}
		return fmt.Errorf("%w: %s", ErrDatasetNotFound, msg)
	}
	return fmt.Errorf("%w: %w", ErrRegistryInvalid, err)
}

// datasetFiles fetches a package dataset's files (e.g. metric.py), stores
// each under its content hash and returns them for the manifest.
func (s *fetcher) datasetFiles(ctx context.Context, ps *registry.PackageSource, tmp string) ([]benchmark.DatasetFile, error) {
	dir := filepath.Join(tmp, "dataset-files")
	files, err := ps.FetchFiles(ctx, dir)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, failf("%v", err)
	}
	out := make([]benchmark.DatasetFile, 0, len(files))
	for _, f := range files {
		key := blobFileKey(f.ContentHash)
		data, err := os.Open(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, err
		}
		err = s.blobs.Put(ctx, key, data)
		data.Close()
		if err != nil {
			return nil, fmt.Errorf("put dataset file %s: %w", f.Path, err)
		}
		out = append(out, benchmark.DatasetFile{Path: f.Path, Digest: "sha256:" + f.ContentHash, BlobKey: key})
	}
	return out, nil
}

// blobFileKey is where a dataset file with content hash hex is stored:
// tasks/files/<hex>, beside the task bundles (the sync's write prefix).
func blobFileKey(hex string) string { return blob.TasksPrefix + "files/" + hex }
