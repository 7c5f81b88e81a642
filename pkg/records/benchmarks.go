package records

import (
	"context"
	"fmt"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

func benchPK(ws, key string) string { return "BENCH#" + ws + "#" + key }

func tasksPK(ws, key, version string) string { return benchPK(ws, key) + "#V#" + version }

// SyncStatus is the state of a benchmark's task list.
type SyncStatus string

// Benchmark sync statuses.
const (
	SyncPending SyncStatus = "pending"
	SyncSyncing SyncStatus = "syncing"
	SyncReady   SyncStatus = "ready"
	SyncFailed  SyncStatus = "failed"
)

// SyncPhase is the step a sync is in.
type SyncPhase string

// Sync phases.
const (
	SyncPhaseTasks  SyncPhase = "tasks"
	SyncPhaseImages SyncPhase = "images"
)

// Benchmark is a benchmark as a workspace sees it: where it comes from, how
// far its task list has synced, and which manifest version is ready.
type Benchmark struct {
	Workspace   string           `json:"workspace"`
	Key         string           `json:"key"`
	Name        string           `json:"name"`
	Description string           `json:"description,omitempty"`
	Source      benchmark.Source `json:"source"`
	Status      SyncStatus       `json:"status"`
	// Phase says what a syncing benchmark is doing: SyncPhaseTasks
	// (fetching tasks), then SyncPhaseImages (preparing images); Synced of
	// Total counts within the phase.
	Phase     SyncPhase `json:"phase,omitempty"`
	Synced    int       `json:"synced"`
	Total     int       `json:"total"`
	SyncError string    `json:"sync_error,omitempty"`
	// SyncWarning is what the source warned about at the last add, sync or
	// refresh (a yanked dataset version, with its reason), or "".
	SyncWarning string `json:"sync_warning,omitempty"`
	// ReadyVersion and ReadyDigest name the manifest version runs pin; empty
	// until a sync has succeeded.
	ReadyVersion string `json:"ready_version,omitempty"`
	ReadyDigest  string `json:"ready_digest,omitempty"`
	// PreparingVersion names the stored manifest version whose task images
	// the sync is still preparing ("" when none): a run may select its ready
	// tasks before the benchmark is ready, and the views show each task's
	// image state. Cleared when the sync marks the benchmark ready.
	PreparingVersion string `json:"preparing_version,omitempty"`
	TaskCount        int    `json:"task_count"`
	// RegistryCredentials name, per registry host, the workspace secret
	// record whose "username:password" the sync pulls and builds the task
	// images with (names only; values stay in the secret store). A field
	// of the item's JSON body, so older records read as none.
	RegistryCredentials []benchmark.RegistryCredential `json:"registry_credentials,omitempty"`
	CreatedAt           time.Time                      `json:"created_at"`
	UpdatedAt           time.Time                      `json:"updated_at"`

	Version int64 `json:"-"`
}

var benchCodec = codec[Benchmark]{
	name: "benchmark",
	item: func(b *Benchmark) (store.Item, error) {
		data, err := encode(b)
		if err != nil {
			return store.Item{}, err
		}
		return store.Item{PK: wsPK(b.Workspace), SK: "BENCH#" + b.Key, Data: data}, nil
	},
	setVersion: func(b *Benchmark, v int64) { b.Version = v },
}

// PutBenchmark creates or replaces the benchmark record.
func (s *Benchmarks) PutBenchmark(ctx context.Context, b Benchmark) (Benchmark, error) {
	return put(ctx, s.tbl, benchCodec, b, store.Cond{})
}

// CreateBenchmark creates the benchmark record; it fails with a condition
// error when one with the key exists.
func (s *Benchmarks) CreateBenchmark(ctx context.Context, b Benchmark) (Benchmark, error) {
	return put(ctx, s.tbl, benchCodec, b, store.Cond{Kind: store.IfNotExists})
}

// Benchmark returns the workspace's benchmark with the key.
func (s *Benchmarks) Benchmark(ctx context.Context, ws, key string) (Benchmark, error) {
	return get(ctx, s.tbl, benchCodec, wsPK(ws), "BENCH#"+key)
}

// DeleteBenchmark removes the benchmark record (its manifest versions and
// leaderboard stay, keyed by workspace and key, for the runs that pinned them).
func (s *Benchmarks) DeleteBenchmark(ctx context.Context, ws, key string) error {
	if err := s.tbl.Delete(ctx, wsPK(ws), "BENCH#"+key, store.Cond{}); err != nil {
		return fmt.Errorf("delete benchmark %s: %w", key, err)
	}
	return nil
}

// Benchmarks returns every benchmark of the workspace, by key.
func (s *Benchmarks) Benchmarks(ctx context.Context, ws string) ([]Benchmark, error) {
	return queryAll(ctx, s.tbl, benchCodec, store.Query{PK: wsPK(ws), Prefix: "BENCH#"})
}

// TaskFiles says where the sandbox driver finds one task's files: a local
// directory, or a .tar.gz bundle in the blob store.
type TaskFiles struct {
	Dir       string `json:"dir,omitempty"`
	BundleKey string `json:"bundle_key,omitempty"`
}

// Task is a stored task of a manifest version.
type Task struct {
	benchmark.Task
	Files TaskFiles `json:"files"`
}

var taskCodec = codec[Task]{name: "task"}

// manifestHeader is a manifest version without its task list (tasks are
// items of their own, so a manifest of any size fits).
type manifestHeader struct {
	benchmark.Manifest
	TaskCount int `json:"task_count"`
}

// PutManifest stores a manifest version of the workspace's benchmark with the
// file location of each task (files[name]). Versions are immutable: tasks
// are created, never replaced, and the header is written last so a reader
// that finds the header finds every task.
func (s *Benchmarks) PutManifest(ctx context.Context, ws string, m benchmark.Manifest, files map[string]TaskFiles) error {
	pk := tasksPK(ws, m.Key, m.Version)
	const batch = 500
	for start := 0; start < len(m.Tasks); start += batch {
		end := min(start+batch, len(m.Tasks))
		items := make([]store.Item, 0, end-start)
		for _, t := range m.Tasks[start:end] {
			data, err := encode(Task{Task: t, Files: files[t.Name]})
			if err != nil {
				return err
			}
			items = append(items, store.Item{PK: pk, SK: "TASK#" + t.Name, Data: data})
		}
		if _, err := s.tbl.Create(ctx, items); err != nil {
			return fmt.Errorf("store tasks of %s@%s: %w", m.Key, m.Version, err)
		}
	}
	h := manifestHeader{Manifest: m, TaskCount: len(m.Tasks)}
	h.Tasks = nil
	return s.putJSON(ctx, benchPK(ws, m.Key), "VER#"+m.Version, h)
}

// PutTask replaces one task of a stored manifest version: a sync that
// stored the version while the task's image was being prepared writes the
// outcome (pinned image or failure). Only the task's Environment may
// differ from what is stored: the manifest digest leaves outcomes out.
func (s *Benchmarks) PutTask(ctx context.Context, ws, key, version string, t benchmark.Task, files TaskFiles) error {
	data, err := encode(Task{Task: t, Files: files})
	if err != nil {
		return err
	}
	if _, err := s.tbl.Put(ctx, store.Item{PK: tasksPK(ws, key, version), SK: "TASK#" + t.Name, Data: data}, store.Cond{}); err != nil {
		return fmt.Errorf("store task %s of %s@%s: %w", t.Name, key, version, err)
	}
	return nil
}

// Manifest returns a stored manifest version with its tasks (in name order)
// and the file location of each task.
func (s *Benchmarks) Manifest(ctx context.Context, ws, key, version string) (benchmark.Manifest, map[string]TaskFiles, error) {
	var h manifestHeader
	if err := s.getJSON(ctx, benchPK(ws, key), "VER#"+version, &h); err != nil {
		return benchmark.Manifest{}, nil, fmt.Errorf("manifest %s@%s: %w", key, version, err)
	}
	tasks, err := queryAll(ctx, s.tbl, taskCodec, store.Query{PK: tasksPK(ws, key, version), Prefix: "TASK#"})
	if err != nil {
		return benchmark.Manifest{}, nil, err
	}
	m := h.Manifest
	m.Tasks = make([]benchmark.Task, len(tasks))
	files := make(map[string]TaskFiles, len(tasks))
	for i, t := range tasks {
		m.Tasks[i] = t.Task
		files[t.Name] = t.Files
	}
	return m, files, nil
}

// Task returns one task of a stored manifest version.
func (s *Benchmarks) Task(ctx context.Context, ws, key, version, name string) (Task, error) {
	return get(ctx, s.tbl, taskCodec, tasksPK(ws, key, version), "TASK#"+name)
}
