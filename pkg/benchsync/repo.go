package benchsync

import (
	"context"
	"errors"
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/registry"
)

// repoSource is a benchmark's git dataset: the task directories under Path
// of repository URL at Ref (a branch or tag is re-resolved by every sync
// and refresh; a full commit stays).
type repoSource struct {
	URL  string `json:"url"`
	Ref  string `json:"ref,omitempty"`
	Path string `json:"path"`
}

func (r *repoSource) parse() (registry.Repo, error) {
	spec := r.URL
	if r.Ref != "" {
		spec += "@" + r.Ref
	}
	return registry.ParseRepo(spec, r.Path)
}

// addRepo resolves a git dataset (the ref to a commit, the task
// directories at it) and records the benchmark, keyed by org/name, the
// task path when it is not the default, and the ref.
func (s *adder) addRepo(ctx context.Context, ws string, req AddRequest) (records.Benchmark, error) {
	switch {
	case req.Spec != "":
		return records.Benchmark{}, &benchmark.FieldError{Field: "source", Message: "must be empty with repo: the repository's task directories are the dataset (a registry.json inside a repository is not read)"}
	case req.APIKeySecret != "":
		return records.Benchmark{}, &benchmark.FieldError{Field: "api_key_secret", Message: "is only used with a package dataset (org/name[@ref])"}
	}
	repo, err := registry.ParseRepo(req.Repo, req.Path)
	if err != nil {
		field := "repo"
		if req.Path != "" {
			field = "repo or path"
		}
		return records.Benchmark{}, &benchmark.FieldError{Field: field, Message: err.Error()}
	}
	creds, err := s.checkCredentials(ctx, ws, req.Credentials)
	if err != nil {
		return records.Benchmark{}, err
	}
	src := &repoSource{URL: repo.URL, Ref: repo.Ref, Path: repo.Path}
	rs, err := s.openRepo(src)
	if err != nil {
		return records.Benchmark{}, err
	}
	defer rs.Close()
	reg, err := rs.Registry(ctx)
	if err != nil {
		return records.Benchmark{}, repoError(err)
	}
	d := reg[0]
	name := repo.Org + "/" + repo.Name
	if repo.Path != registry.DefaultRepoPath {
		name += "/" + repo.Path
	}
	now := s.now().UTC()
	b := records.Benchmark{
		Workspace: ws, Key: benchmark.KeyFor(name, repo.Ref), Name: d.Name,
		Source: benchmark.Source{Type: benchmark.Harbor, Ref: repo.String() + pathSuffix(repo.Path), URL: repo.URL},
		Status: records.SyncPending, Total: len(d.Tasks), RegistryCredentials: creds, CreatedAt: now, UpdatedAt: now,
	}
	return s.create(ctx, ws, b, syncSource{Spec: repo.String(), Repo: src}, "git", repo.String(), len(d.Tasks))
}

// pathSuffix names a task path other than the default in a source ref.
func pathSuffix(p string) string {
	if p == registry.DefaultRepoPath {
		return ""
	}
	return " path " + p
}

// repoError maps what resolving a git dataset met to the service's errors.
func repoError(err error) error {
	var f *failure
	switch {
	case errors.Is(err, registry.ErrAddressRefused):
		return &benchmark.FieldError{Field: "repo", Message: err.Error()}
	case errors.Is(err, registry.ErrRefNotFound):
		return fmt.Errorf("%w: %w", ErrDatasetNotFound, err)
	case errors.Is(err, registry.ErrUnreachable):
		return fmt.Errorf("%w: %w", ErrRegistryUnavailable, err)
	case errors.As(err, &f):
		return &benchmark.FieldError{Field: "repo", Message: f.msg}
	}
	return &benchmark.FieldError{Field: "repo", Message: err.Error()}
}

// openRepo opens a git dataset under the service's network policy.
func (s *fetcher) openRepo(src *repoSource) (*registry.RepoSource, error) {
	repo, err := src.parse()
	if err != nil {
		return nil, failf("stored repository source: %v", err)
	}
	rs, err := registry.OpenRepo(repo, registry.Options{TempDir: s.workDir, Logger: s.log, AllowPrivateNetworks: s.allowPrivate})
	if err != nil {
		return nil, failf("%v", err)
	}
	return rs, nil
}
