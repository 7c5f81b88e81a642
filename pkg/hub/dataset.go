package hub

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
)

// DatasetVersion is one published version of a dataset package.
type DatasetVersion struct {
	ID       string
	Org      string
	Name     string
	Revision int64
	// ContentHash is the version's content hash, hex without "sha256:".
	ContentHash  string
	Description  string
	YankedAt     string
	YankedReason string
}

// Digest returns "sha256:<content hash>": how Harbor pins the version.
func (v DatasetVersion) Digest() string { return "sha256:" + v.ContentHash }

// Yanked says in Harbor's words that the version is yanked (with its
// reason), or "".
func (v DatasetVersion) Yanked(ref Ref) string {
	if v.YankedAt == "" {
		return ""
	}
	if v.YankedReason != "" {
		return fmt.Sprintf("Dataset version %s is yanked: %s", ref, v.YankedReason)
	}
	return fmt.Sprintf("Dataset version %s is yanked", ref)
}

// TaskID is one task of a dataset version: a task package pinned by its
// content hash (Harbor's PackageTaskId with ref "sha256:<hash>").
type TaskID struct {
	Org  string
	Name string
	// ContentHash is hex without "sha256:".
	ContentHash string
}

// Package returns "org/name", the task's id in Harbor and in manifests.
func (t TaskID) Package() string { return t.Org + "/" + t.Name }

// File is a dataset-level file (e.g. metric.py).
type File struct {
	Path        string
	StoragePath string
	// ContentHash is the hex SHA-256 of the file's bytes.
	ContentHash string
	Size        int64
}

// Dataset is a resolved dataset version with its tasks and files.
type Dataset struct {
	Ref     Ref
	Version DatasetVersion
	Tasks   []TaskID
	Files   []File
}

// UnavailableTasksError is Harbor's UnavailableDatasetTasksError: the
// dataset lists tasks the caller may not read.
type UnavailableTasksError struct {
	Ref     string
	Missing int
}

// Error is Harbor's message.
func (e *UnavailableTasksError) Error() string {
	noun, verb := "tasks", "are"
	if e.Missing == 1 {
		noun, verb = "task", "is"
	}
	return fmt.Sprintf("Dataset '%s' references %d %s that %s unavailable to your account", e.Ref, e.Missing, noun, verb)
}

// NotFoundError says which part of a reference the registry does not hold.
// It wraps ErrNotFound.
type NotFoundError struct {
	Ref Ref
	// Package is true when the dataset package itself is not visible.
	Package bool
	// Known lists the dataset's tags, when the package exists.
	Known []string
	msg   string
}

// Error implements error.
func (e *NotFoundError) Error() string { return e.msg }

// Unwrap returns ErrNotFound.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

type orgRow struct {
	Name string `json:"name"`
}

type packageRow struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	Org  orgRow `json:"org"`
}

type versionRow struct {
	ID           string      `json:"id"`
	Revision     int64       `json:"revision"`
	ContentHash  string      `json:"content_hash"`
	Description  *string     `json:"description"`
	YankedAt     *string     `json:"yanked_at"`
	YankedReason *string     `json:"yanked_reason"`
	Package      *packageRow `json:"package,omitempty"`
}

// The selects of RegistryDB.resolve_dataset_version, whitespace removed as
// postgrest-py sends them.
const (
	tagSelect     = "dataset_version:dataset_version_id(*),package:package_id!inner(*,org:org_id!inner(name))"
	versionSelect = "*,package:package_id!inner(*,org:org_id!inner(name))"
	tasksSelect   = "task_version_id,task_version:task_version_id(content_hash,package:package_id(name,org:org_id(name)))"
	filesSelect   = "path,storage_path,content_hash,size_bytes"
	packageSelect = "id,type,visibility,org:org_id!inner(name)"
)

// ResolveDataset resolves ref to a dataset version as Harbor's
// RegistryDB.resolve_dataset_version does: a tag through
// dataset_version_tag, a revision or a digest through dataset_version,
// each filtered on the package's name, type "dataset" and org name.
func (c *Client) ResolveDataset(ctx context.Context, ref Ref) (DatasetVersion, error) {
	pkg := [][2]string{{"package.name", ref.Name}, {"package.type", "dataset"}, {"package.org.name", ref.Org}}
	one := url.Values{"limit": {"1"}}
	var row versionRow
	switch ref.Kind {
	case Tag:
		var rows []struct {
			Version *versionRow `json:"dataset_version"`
			Package *packageRow `json:"package"`
		}
		if err := c.selectRows(ctx, "dataset_version_tag", tagSelect, append([][2]string{{"tag", ref.Version}}, pkg...), one, &rows); err != nil {
			return DatasetVersion{}, err
		}
		if len(rows) == 0 || rows[0].Version == nil {
			return DatasetVersion{}, c.notFound(ctx, ref, fmt.Sprintf("Tag '%s' not found for dataset '%s'", ref.Version, ref.Package()))
		}
		row = *rows[0].Version
		row.Package = rows[0].Package
	case Revision, Digest:
		column, value, what := "revision", ref.Version, fmt.Sprintf("Revision %s not found for dataset '%s'", ref.Version, ref.Package())
		if ref.Kind == Digest {
			column, value, what = "content_hash", normalizeHash(ref.Version), fmt.Sprintf("Digest '%s' not found for dataset '%s'", ref.Version, ref.Package())
		}
		var rows []versionRow
		if err := c.selectRows(ctx, "dataset_version", versionSelect, append([][2]string{{column, value}}, pkg...), one, &rows); err != nil {
			return DatasetVersion{}, err
		}
		if len(rows) == 0 {
			return DatasetVersion{}, c.notFound(ctx, ref, what)
		}
		row = rows[0]
	default:
		return DatasetVersion{}, fmt.Errorf("%w: unknown ref type %q", ErrBadRef, ref.Kind)
	}
	if row.ID == "" || row.ContentHash == "" {
		return DatasetVersion{}, fmt.Errorf("%w: dataset version of %s has no id or content_hash", ErrProtocol, ref)
	}
	v := DatasetVersion{ID: row.ID, Org: ref.Org, Name: ref.Name, Revision: row.Revision, ContentHash: normalizeHash(row.ContentHash)}
	if row.Description != nil {
		v.Description = *row.Description
	}
	if row.YankedAt != nil {
		v.YankedAt = *row.YankedAt
	}
	if row.YankedReason != nil {
		v.YankedReason = *row.YankedReason
	}
	return v, nil
}

// notFound tells an unknown package from an unknown version of a known
// one (RegistryDB.get_package, then the list_dataset_tags RPC), so the
// error says what exists.
func (c *Client) notFound(ctx context.Context, ref Ref, harborMsg string) error {
	e := &NotFoundError{Ref: ref, msg: harborMsg}
	var pkgs []packageRow
	if err := c.selectRows(ctx, "package", packageSelect, [][2]string{{"name", ref.Name}, {"org.name", ref.Org}}, url.Values{"limit": {"1"}}, &pkgs); err != nil {
		return e
	}
	switch {
	case len(pkgs) == 0:
		e.Package = true
		e.msg = fmt.Sprintf("%s: no dataset %s is visible in the package registry (a private dataset needs an API key that may read it)", harborMsg, ref.Package())
	case pkgs[0].Type != "dataset":
		e.Package = true
		e.msg = fmt.Sprintf("%s: %s is a %s package, not a dataset", harborMsg, ref.Package(), pkgs[0].Type)
	default:
		var tags []struct {
			Tag      string `json:"tag"`
			Revision int64  `json:"revision"`
		}
		if err := c.rpc(ctx, "list_dataset_tags", map[string]string{"p_org": ref.Org, "p_name": ref.Name}, &tags); err == nil {
			for _, t := range tags {
				e.Known = append(e.Known, t.Tag+" (revision "+strconv.FormatInt(t.Revision, 10)+")")
			}
			sort.Strings(e.Known)
		}
	}
	return e
}

// Dataset resolves ref and reads the version's tasks and files, as
// Harbor's PackageDatasetClient._get_dataset_metadata does: a version
// whose task rows are not all readable (redacted by the registry's access
// rules) is an *UnavailableTasksError.
func (c *Client) Dataset(ctx context.Context, ref Ref) (Dataset, error) {
	v, err := c.ResolveDataset(ctx, ref)
	if err != nil {
		return Dataset{}, err
	}
	type taskRow struct {
		TaskVersionID string `json:"task_version_id"`
		TaskVersion   *struct {
			ContentHash string      `json:"content_hash"`
			Package     *packageRow `json:"package"`
		} `json:"task_version"`
	}
	rows, err := selectAllPages[taskRow](ctx, c, "dataset_version_task", tasksSelect, "dataset_version_id", v.ID, "task_version_id")
	if err != nil {
		return Dataset{}, err
	}
	d := Dataset{Ref: ref, Version: v}
	missing := 0
	for _, r := range rows {
		if r.TaskVersion == nil || r.TaskVersion.Package == nil {
			missing++
			continue
		}
		d.Tasks = append(d.Tasks, TaskID{Org: r.TaskVersion.Package.Org.Name, Name: r.TaskVersion.Package.Name, ContentHash: normalizeHash(r.TaskVersion.ContentHash)})
	}
	if missing > 0 {
		return Dataset{}, &UnavailableTasksError{Ref: ref.String(), Missing: missing}
	}
	type fileRow struct {
		Path        string `json:"path"`
		StoragePath string `json:"storage_path"`
		ContentHash string `json:"content_hash"`
		Size        int64  `json:"size_bytes"`
	}
	files, err := selectAllPages[fileRow](ctx, c, "dataset_version_file", filesSelect, "dataset_version_id", v.ID, "id")
	if err != nil {
		return Dataset{}, err
	}
	for _, f := range files {
		d.Files = append(d.Files, File{Path: f.Path, StoragePath: f.StoragePath, ContentHash: normalizeHash(f.ContentHash), Size: f.Size})
	}
	return d, nil
}

// IsNotFound reports whether err means the registry holds no such thing.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
