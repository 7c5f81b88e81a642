package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/hub"
)

// PackageOptions say which Harbor package registry a PackageSource reads
// and how.
type PackageOptions struct {
	// URL and PublishableKey locate the registry (hub.Options); empty means
	// Harbor's own.
	URL            string
	PublishableKey string
	// APIKey is a Harbor API key for private packages ("" = anonymous).
	APIKey string
	// Options supply the timeout, logger and network policy: registry
	// requests go through the same address guard as registry.json and git
	// fetches unless AllowPrivateNetworks is set.
	Options
}

// UnavailableTaskError is FetchTask's answer for a task the registry lists
// but cannot deliver intact (an archive whose files do not hash to the
// content hash the dataset pins, or an archive that does not unpack): the
// task is unavailable with Reason, the rest of the dataset is not.
type UnavailableTaskError struct {
	Task string
	// ContentHash is the hash the dataset pins the task by ("sha256:…").
	ContentHash string
	Reason      string
}

// Error implements error.
func (e *UnavailableTaskError) Error() string { return e.Reason }

// PackageSource is a Source for one dataset of a Harbor package registry:
// its Registry lists that dataset alone, named org/name at its revision,
// each task named org/name as Harbor names package tasks.
type PackageSource struct {
	ref    hub.Ref
	client *hub.Client

	mu      sync.Mutex
	dataset *hub.Dataset
	tasks   map[string]hub.TaskID
}

var _ Source = (*PackageSource)(nil)

// OpenPackage returns a Source for dataset ref; nothing is read until
// Registry is called.
func OpenPackage(ref hub.Ref, o PackageOptions) (*PackageSource, error) {
	client := o.HTTPClient
	if client == nil {
		// Archives are large: the whole exchange gets the git timeout.
		timeout := o.GitTimeout
		if timeout <= 0 {
			timeout = DefaultGitTimeout
		}
		if o.AllowPrivateNetworks {
			client = &http.Client{Timeout: timeout}
		} else {
			client = guardedClient(timeout, o.refuse)
		}
	}
	c, err := hub.New(hub.Options{URL: o.URL, PublishableKey: o.PublishableKey, APIKey: o.APIKey, HTTPClient: client, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	return &PackageSource{ref: ref, client: c}, nil
}

// Location returns the registry URL and the reference.
func (p *PackageSource) Location() string { return p.client.URL() + " " + p.ref.String() }

// Dataset resolves the reference (once) and returns the dataset version
// with its tasks and files. Errors wrap ErrUnreachable (registry down or
// refused by the address guard), hub.ErrNotFound, hub.ErrUnauthorized or
// *hub.UnavailableTasksError.
func (p *PackageSource) Dataset(ctx context.Context) (hub.Dataset, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dataset != nil {
		return *p.dataset, nil
	}
	d, err := p.client.Dataset(ctx, p.ref)
	if err != nil {
		if errors.Is(err, hub.ErrUnreachable) {
			return hub.Dataset{}, fmt.Errorf("%w: %w", ErrUnreachable, err)
		}
		return hub.Dataset{}, err
	}
	tasks := make(map[string]hub.TaskID, len(d.Tasks))
	unique := d.Tasks[:0:0]
	for _, t := range d.Tasks {
		if prev, ok := tasks[t.Package()]; ok {
			if prev.ContentHash != t.ContentHash {
				return hub.Dataset{}, fmt.Errorf("dataset %s lists task %s twice, at sha256:%s and sha256:%s; a benchmark holds one version of each task", p.ref, t.Package(), prev.ContentHash, t.ContentHash)
			}
			continue
		}
		tasks[t.Package()] = t
		unique = append(unique, t)
	}
	d.Tasks = unique
	p.dataset, p.tasks = &d, tasks
	return d, nil
}

// Registry lists the dataset as a one-dataset registry: name org/name,
// version its revision number.
func (p *PackageSource) Registry(ctx context.Context) (harbor.Registry, error) {
	d, err := p.Dataset(ctx)
	if err != nil {
		return nil, err
	}
	ds := harbor.Dataset{Name: p.ref.Package(), Version: strconv.FormatInt(d.Version.Revision, 10), Description: d.Version.Description, Tasks: make([]harbor.TaskRef, len(d.Tasks))}
	for i, t := range d.Tasks {
		ds.Tasks[i] = harbor.TaskRef{Name: t.Package(), Path: t.Package()}
	}
	return harbor.Registry{ds}, nil
}

// FetchTask downloads and verifies the task ref names. A task whose
// archive fails verification is an *UnavailableTaskError.
func (p *PackageSource) FetchTask(ctx context.Context, ref harbor.TaskRef, dst string) (Fetched, error) {
	p.mu.Lock()
	id, ok := p.tasks[ref.Name]
	p.mu.Unlock()
	if !ok {
		return Fetched{}, fmt.Errorf("task %s is not in dataset %s", ref.Name, p.ref)
	}
	got, err := p.client.FetchTask(ctx, id, dst)
	var (
		mismatch *hub.HashMismatchError
		archive  *hub.ArchiveError
	)
	switch {
	case errors.As(err, &mismatch), errors.As(err, &archive):
		return Fetched{}, &UnavailableTaskError{Task: ref.Name, ContentHash: "sha256:" + id.ContentHash, Reason: err.Error()}
	case errors.Is(err, hub.ErrUnreachable):
		return Fetched{}, fmt.Errorf("task %s: %w: %w", ref.Name, ErrUnreachable, err)
	case err != nil:
		return Fetched{}, fmt.Errorf("task %s: %w", ref.Name, err)
	}
	return Fetched{Ref: ref, ContentHash: "sha256:" + id.ContentHash, Warning: got.Warning}, nil
}

// FetchFiles downloads the dataset-level files into dir, each verified,
// and returns them.
func (p *PackageSource) FetchFiles(ctx context.Context, dir string) ([]hub.File, error) {
	d, err := p.Dataset(ctx)
	if err != nil {
		return nil, err
	}
	for _, f := range d.Files {
		rel, err := cleanTaskPath(f.Path)
		if err != nil || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("dataset %s: file path %q is not a relative path inside the dataset", p.ref, f.Path)
		}
		if err := p.client.DownloadFile(ctx, f, filepath.Join(dir, rel)); err != nil {
			return nil, fmt.Errorf("dataset %s: %w", p.ref, err)
		}
	}
	return d.Files, nil
}

// Close releases nothing: a PackageSource keeps no files.
func (p *PackageSource) Close() error { return nil }
