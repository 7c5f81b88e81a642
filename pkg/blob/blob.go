// Package blob defines the blob port: named byte objects (artifacts, task
// bundles, results). Files under the data dir locally, S3 in the cloud.
package blob

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound reports a missing object.
var ErrNotFound = errors.New("blob: not found")

// Info describes a stored object.
type Info struct {
	Key  string
	Size int64
}

// Store is the blob port. Keys are slash-separated relative paths without
// "..", leading slash or empty segments; adapters reject others.
type Store interface {
	// Put stores the reader's bytes under key, replacing any object there.
	Put(ctx context.Context, key string, r io.Reader) error
	// Get opens the object, or returns ErrNotFound.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// List returns every object whose key starts with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Info, error)
	// Delete removes the object; a missing object is not an error.
	Delete(ctx context.Context, key string) error
}

// Presigner is implemented by stores that can hand out time-limited URLs, so a
// sandbox can upload its outputs and a client download artifacts without
// holding platform credentials.
type Presigner interface {
	PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error)
	PresignPut(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// Key prefixes of the blob store's layout; every writer builds its keys
// under one of them and the cloud's grants are scoped to them.
const (
	// RunsPrefix holds each run's attempt artifacts (runs/<run>/…).
	RunsPrefix = "runs/"
	// TasksPrefix holds synced task bundles, named by digest.
	TasksPrefix = "tasks/"
	// DownloadsPrefix holds built run downloads.
	DownloadsPrefix = "downloads/"
	// LaunchesPrefix holds each launch's sealed secrets (the ECS driver).
	LaunchesPrefix = "launches/"
	// BuildsPrefix holds image builds' zipped contexts and logs (the sync).
	BuildsPrefix = "builds/"
)
