package pipelinetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// BenchmarkTask describes a loaded Harbor task directory as a manifest task
// (metadata, timeouts, environment, and the task directory's digest).
func BenchmarkTask(t harbor.Task) (benchmark.Task, error) {
	digest, err := harbor.TaskDigest(t.Dir)
	if err != nil {
		return benchmark.Task{}, fmt.Errorf("task %s: digest: %w", t.Name, err)
	}
	c := t.Config
	return benchmark.Task{
		Name: t.Name, Category: c.Metadata.Category(), Difficulty: c.Metadata.Difficulty(), Tags: c.Metadata.Tags(),
		Digest: digest, AgentTimeoutSec: c.Agent.TimeoutSec, VerifierTimeoutSec: c.Verifier.TimeoutSec,
		DockerImage: c.Environment.DockerImage, NetworkMode: c.Environment.NetworkMode,
		CPUs: c.Environment.CPUs, MemoryMB: c.Environment.MemoryMB, StorageMB: c.Environment.StorageMB,
	}, nil
}

// ImportTaskDirs stores a manifest version of a catalog benchmark built from
// local Harbor task directories (each task's files stay where they are) and
// marks the benchmark ready at that version in workspace ws, at once and
// without sync state: a test fixture. Platforms install benchmarks through
// benchsync.
func ImportTaskDirs(ctx context.Context, recs *records.Store, ws string, entry benchmark.CatalogEntry, version string, dirs []string, now time.Time) (records.Benchmark, error) {
	tasks := make([]benchmark.Task, 0, len(dirs))
	files := make(map[string]records.TaskFiles, len(dirs))
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return records.Benchmark{}, fmt.Errorf("import %s: %w", dir, err)
		}
		ht, err := harbor.LoadTask(abs)
		if err != nil {
			return records.Benchmark{}, fmt.Errorf("import %s: %w", dir, err)
		}
		bt, err := BenchmarkTask(ht)
		if err != nil {
			return records.Benchmark{}, err
		}
		tasks = append(tasks, bt)
		files[bt.Name] = records.TaskFiles{Dir: abs}
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].Name < tasks[j].Name })
	m, err := entry.Manifest(version, tasks)
	if err != nil {
		return records.Benchmark{}, fmt.Errorf("import %s: %w", entry.Key, err)
	}
	if err := recs.Benchmarks.PutManifest(ctx, ws, m, files); err != nil {
		return records.Benchmark{}, err
	}
	return recs.Benchmarks.PutBenchmark(ctx, records.Benchmark{
		Workspace: ws, Key: m.Key, Name: m.Name, Description: m.Description, Source: m.Source,
		Status: records.SyncReady, Synced: len(tasks), Total: len(tasks), ReadyVersion: m.Version, ReadyDigest: m.Digest,
		TaskCount: len(tasks), CreatedAt: now, UpdatedAt: now,
	})
}

// ImportCatalogEntry imports a catalog benchmark whose tasks are on this
// machine: a Dir of task directories (version "local"), or a Source resolved
// against a local registry.json whose tasks have no git_url (paths relative
// to the registry file).
func ImportCatalogEntry(ctx context.Context, recs *records.Store, ws string, entry benchmark.CatalogEntry, now time.Time) (records.Benchmark, error) {
	if entry.Dir != "" {
		dirs, err := subdirs(entry.Dir)
		if err != nil {
			return records.Benchmark{}, err
		}
		return ImportTaskDirs(ctx, recs, ws, entry, "local", dirs, now)
	}
	f, err := os.Open(entry.Registry)
	if err != nil {
		return records.Benchmark{}, fmt.Errorf("import %s: registry: %w", entry.Key, err)
	}
	defer f.Close()
	reg, err := harbor.ParseRegistry(f)
	if err != nil {
		return records.Benchmark{}, fmt.Errorf("import %s: %s: %w", entry.Key, entry.Registry, err)
	}
	name, version := benchmark.SplitRef(entry.Source)
	d, err := reg.Resolve(name, version)
	if err != nil {
		return records.Benchmark{}, fmt.Errorf("import %s: %w", entry.Key, err)
	}
	base := filepath.Dir(entry.Registry)
	dirs := make([]string, 0, len(d.Tasks))
	for _, t := range d.Tasks {
		if t.GitURL != "" {
			return records.Benchmark{}, fmt.Errorf("import %s: task %s lives in git (%s); only local tasks can be imported here", entry.Key, t.Name, t.GitURL)
		}
		dirs = append(dirs, filepath.Join(base, filepath.FromSlash(t.Path)))
	}
	return ImportTaskDirs(ctx, recs, ws, entry, d.Version, dirs, now)
}

func subdirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list tasks in %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}
