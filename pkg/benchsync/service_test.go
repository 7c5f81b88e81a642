package benchsync

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/fsblob"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/registry"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
)

const (
	ws              = "ws-1"
	exampleRegistry = "../../examples/registry.json"
	exampleCatalog  = "../../examples/catalog.toml"
	exampleTasks    = "../../examples/demo-bench"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type env struct {
	svc   *Service
	rec   *records.Store
	blobs *fsblob.Store
	clock *clock
}

// newEnv builds a Service on a real SQLite table and file blob store,
// resolving Add specs against registryLocation.
func newEnv(t testing.TB, registryLocation string) *env {
	t.Helper()
	dir := t.TempDir()
	db, err := sqlite.Open(filepath.Join(dir, "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	blobs, err := fsblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{rec: records.New(db.Table()), blobs: blobs, clock: &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	e.svc, err = New(Config{
		Records: StoreRecords(e.rec), Blobs: blobs, Registry: registryLocation,
		WorkDir: filepath.Join(dir, "work"), Now: e.clock.Now,
		AllowPrivateNetworks: true, // the tests' registries and repositories are local
		Logger:               slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) benchmark(t *testing.T, key string) records.Benchmark {
	t.Helper()
	b, err := e.rec.Benchmarks.Benchmark(context.Background(), ws, key)
	if err != nil {
		t.Fatalf("Benchmark(%s): %v", key, err)
	}
	return b
}

func (e *env) sync(t *testing.T, key string) {
	t.Helper()
	if err := e.svc.Sync(context.Background(), NewSyncMessage(ws, key)); err != nil {
		t.Fatalf("Sync(%s): %v", key, err)
	}
}

func (e *env) manifest(t *testing.T, b records.Benchmark) (benchmark.Manifest, map[string]records.TaskFiles) {
	t.Helper()
	m, files, err := e.rec.Benchmarks.Manifest(context.Background(), ws, b.Key, b.ReadyVersion)
	if err != nil {
		t.Fatalf("Manifest(%s@%s): %v", b.Key, b.ReadyVersion, err)
	}
	return m, files
}

// exampleMetadata reads category and difficulty of every example task
// straight from its task.toml.
func exampleMetadata(t *testing.T) map[string][2]string {
	t.Helper()
	entries, err := os.ReadDir(exampleTasks)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]string{}
	for _, e := range entries {
		var doc struct {
			Metadata struct{ Category, Difficulty string }
		}
		if _, err := toml.DecodeFile(filepath.Join(exampleTasks, e.Name(), "task.toml"), &doc); err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = [2]string{doc.Metadata.Category, doc.Metadata.Difficulty}
	}
	return out
}

func TestAddAndSyncDemoBench(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, exampleRegistry)
	added, err := e.svc.Add(ctx, ws, "demo-bench")
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	want := records.Benchmark{
		Workspace: ws, Key: "demo-bench-1-0", Name: "demo-bench", Description: added.Description,
		Source: benchmark.Source{Type: benchmark.Harbor, Ref: "demo-bench@1.0"},
		Status: records.SyncPending, Total: 15, CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now(), Version: 1,
	}
	if diff := cmp.Diff(want, added); diff != "" || !strings.HasPrefix(added.Description, "gauntlet's example benchmark") {
		t.Errorf("Add mismatch (-want +got):\n%s", diff)
	}
	again, err := e.svc.Add(ctx, ws, "demo-bench@1.0")
	if err != nil {
		t.Fatalf("Add again: %v", err)
	}
	if diff := cmp.Diff(added, again); diff != "" {
		t.Errorf("second Add mismatch (-first +second):\n%s", diff)
	}

	e.sync(t, added.Key)
	b := e.benchmark(t, added.Key)
	m, files := e.manifest(t, b)
	if b.Status != records.SyncReady || b.Synced != 15 || b.Total != 15 || b.TaskCount != 15 || b.SyncError != "" ||
		b.ReadyVersion != "1.0" || b.ReadyDigest != benchmark.ComputeDigest(m.Tasks) {
		t.Errorf("after Sync: %+v", b)
	}
	if m.HarnessRequirement != benchmark.HarnessOptional || m.Judge.Required || m.PassThreshold != 1 ||
		m.Source != want.Source || m.Description != added.Description {
		t.Errorf("harbor defaults: %+v", m)
	}
	if err := m.Validate(); err != nil {
		t.Errorf("stored manifest invalid: %v", err)
	}
	gotMeta := map[string][2]string{}
	for _, task := range m.Tasks {
		gotMeta[task.Name] = [2]string{task.Category, task.Difficulty}
		abs, _ := filepath.Abs(filepath.Join(exampleTasks, task.Name))
		if f := files[task.Name]; f.Dir != abs || f.BundleKey != BundleKey(task.Digest) {
			t.Errorf("files[%s] = %+v, want dir %s and bundle %s", task.Name, f, abs, BundleKey(task.Digest))
		}
		if task.VerifierTimeoutSec <= 0 || task.AgentTimeoutSec == nil {
			t.Errorf("task %s timeouts: agent %v, verifier %v", task.Name, task.AgentTimeoutSec, task.VerifierTimeoutSec)
		}
	}
	if diff := cmp.Diff(exampleMetadata(t), gotMeta); diff != "" {
		t.Errorf("category/difficulty (-task.toml +manifest):\n%s", diff)
	}
	fm, _ := m.Task("fix-median")
	if diff := cmp.Diff([]string{"python", "bugfix"}, fm.Tags); diff != "" || fm.NetworkMode != "no-network" || fm.MemoryMB != 512 {
		t.Errorf("fix-median = %+v", fm)
	}
	// Every bundle unpacks to the task's content.
	for _, task := range m.Tasks {
		dir := unpack(t, e, files[task.Name].BundleKey)
		if d, err := harbor.TaskDigest(dir); err != nil || d != task.Digest {
			t.Errorf("bundle of %s has digest %s (%v), want %s", task.Name, d, err, task.Digest)
		}
	}
}

func TestSyncRedeliveredIsIdempotent(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, exampleRegistry)
	b, err := e.svc.Add(ctx, ws, "demo-bench@1.0")
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	first := e.benchmark(t, b.Key)
	firstManifest, firstFiles := e.manifest(t, first)
	bundles := blobKeys(t, e)

	// A plain redelivery of a ready benchmark is a no-op.
	e.sync(t, b.Key)
	if got := e.benchmark(t, b.Key); got.Version != first.Version {
		t.Errorf("redelivered Sync wrote the record: version %d → %d", first.Version, got.Version)
	}
	// A sync that runs again from the start (a crash before ready) ends
	// with the same manifest, the same items and the same bundles.
	if _, err := e.rec.Benchmarks.UpdateSync(ctx, ws, b.Key, func(st *records.SyncState) error {
		b := &st.Benchmark
		b.Status = records.SyncPending
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	again := e.benchmark(t, b.Key)
	m, files := e.manifest(t, again)
	if again.Status != records.SyncReady || again.ReadyDigest != first.ReadyDigest || again.ReadyVersion != first.ReadyVersion {
		t.Errorf("re-run sync: %+v, want digest %s", again, first.ReadyDigest)
	}
	if diff := cmp.Diff(firstManifest, m); diff != "" {
		t.Errorf("manifest changed (-first +again):\n%s", diff)
	}
	if diff := cmp.Diff(firstFiles, files); diff != "" {
		t.Errorf("files changed (-first +again):\n%s", diff)
	}
	if diff := cmp.Diff(bundles, blobKeys(t, e)); diff != "" {
		t.Errorf("bundles changed (-first +again):\n%s", diff)
	}
	versions, err := e.rec.Benchmarks.ManifestVersions(ctx, ws, b.Key)
	if err != nil || len(versions) != 1 {
		t.Errorf("ManifestVersions = %v, %v; want one", versions, err)
	}
}

func TestSyncLease(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, exampleRegistry)
	b, err := e.svc.Add(ctx, ws, "demo-bench")
	if err != nil {
		t.Fatal(err)
	}
	// Another worker claimed the sync and then stopped.
	if _, err := e.rec.Benchmarks.UpdateSync(ctx, ws, b.Key, func(st *records.SyncState) error {
		b := &st.Benchmark
		b.Status, b.Synced, b.UpdatedAt = records.SyncSyncing, 4, e.clock.Now()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if err := e.svc.Sync(ctx, NewSyncMessage(ws, b.Key)); !errors.Is(err, ErrSyncInProgress) {
		t.Fatalf("Sync during another's lease: err = %v, want ErrSyncInProgress", err)
	}
	if _, err := e.svc.Retry(ctx, ws, b.Key); !errors.Is(err, ErrConflict) {
		t.Errorf("Retry during a live sync: err = %v, want ErrConflict", err)
	}
	e.clock.Advance(DefaultLease)
	e.sync(t, b.Key)
	if got := e.benchmark(t, b.Key); got.Status != records.SyncReady || got.Synced != 15 {
		t.Errorf("after takeover: %+v", got)
	}
}

func TestSyncOfDeletedBenchmark(t *testing.T) {
	e := newEnv(t, exampleRegistry)
	if err := e.svc.Sync(context.Background(), NewSyncMessage(ws, "gone")); err != nil {
		t.Errorf("Sync of a missing benchmark = %v, want nil", err)
	}
	if err := e.svc.Sync(context.Background(), SyncMessage{Workspace: ws, Key: "x"}); !errors.Is(err, ErrPoison) {
		t.Errorf("Sync of schema 0 = %v, want ErrPoison", err)
	}
}

func TestDeleteHarborBenchmark(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, exampleRegistry)
	b, err := e.svc.Add(ctx, ws, "demo-bench")
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	if err := e.svc.Delete(ctx, ws, b.Key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := e.rec.Benchmarks.Benchmark(ctx, ws, b.Key); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("Benchmark after Delete: err = %v", err)
	}
	if _, _, err := e.rec.Benchmarks.Manifest(ctx, ws, b.Key, "1.0"); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("Manifest after Delete: err = %v", err)
	}
	if _, err := e.rec.Benchmarks.Task(ctx, ws, b.Key, "1.0", "fix-median"); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("Task after Delete: err = %v", err)
	}
	if err := e.svc.Delete(ctx, ws, b.Key); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: err = %v, want ErrNotFound", err)
	}
	// It can be added and synced again.
	if _, err := e.svc.Add(ctx, ws, "demo-bench"); err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	if got := e.benchmark(t, b.Key); got.Status != records.SyncReady {
		t.Errorf("re-added: %+v", got)
	}
}

func TestBrokenTaskFailsWithReason(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	copyExample(t, "word-frequency", filepath.Join(dir, "tasks", "good"))
	copyExample(t, "csv-summary", filepath.Join(dir, "tasks", "broken"))
	writeRegistry(t, filepath.Join(dir, "tasks", "broken", "task.toml"), "[metadata]\ncategory = \"data\"\n[verifier]\ntimeout_sec = \"soon\"\n")
	writeRegistry(t, filepath.Join(dir, "registry.json"), `[{"name": "mixed", "version": "1", "description": "", "tasks": [
		{"name": "good", "path": "tasks/good"}, {"name": "broken", "path": "tasks/broken"}]}]`)
	e := newEnv(t, filepath.Join(dir, "registry.json"))
	b, err := e.svc.Add(ctx, ws, "mixed")
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	got := e.benchmark(t, b.Key)
	if got.Status != records.SyncFailed || got.SyncError == "" {
		t.Fatalf("after Sync: %+v, want failed", got)
	}
	t.Logf("sync error: %s", got.SyncError)
	if !strings.HasPrefix(got.SyncError, "task broken: task.toml: verifier.timeout_sec: ") || strings.Contains(got.SyncError, dir) {
		t.Errorf("SyncError = %q, want it to name the task and no temp path", got.SyncError)
	}
}

func copyExample(t testing.TB, name, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(exampleTasks, name), dst).CombinedOutput(); err != nil {
		t.Fatalf("cp %s: %v\n%s", name, err, out)
	}
}

func writeRegistry(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func blobKeys(t *testing.T, e *env) []string {
	t.Helper()
	infos, err := e.blobs.List(context.Background(), "tasks/")
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, len(infos))
	for i, info := range infos {
		keys[i] = info.Key
	}
	sort.Strings(keys)
	return keys
}

// unpack extracts a bundle into a temporary directory.
func unpack(t *testing.T, e *env, key string) string {
	t.Helper()
	rc, err := e.blobs.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, os.FileMode(hdr.Mode)); err != nil {
				t.Fatal(err)
			}
		case tar.TypeSymlink:
			if err := os.Symlink(hdr.Linkname, path); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// observingSource records the benchmark's progress each time a task is
// fetched.
type observingSource struct {
	registry.Source
	t    *testing.T
	e    *env
	key  string
	seen []string
}

func (o *observingSource) FetchTask(ctx context.Context, ref harbor.TaskRef, dst string) (registry.Fetched, error) {
	b := o.e.benchmark(o.t, o.key)
	o.seen = append(o.seen, fmt.Sprintf("%s %d/%d", b.Status, b.Synced, b.Total))
	return o.Source.FetchTask(ctx, ref, dst)
}

func TestSyncProgressIsBatched(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, exampleRegistry)
	obs := &observingSource{t: t, e: e, key: "demo-bench-1-0"}
	e.svc.open = func(location string) (registry.Source, error) {
		src, err := registry.Open(location)
		obs.Source = src
		return obs, err
	}
	if _, err := e.svc.Add(ctx, ws, "demo-bench"); err != nil {
		t.Fatal(err)
	}
	obs.seen = nil
	e.sync(t, "demo-bench-1-0")
	var want []string
	for i := range 15 {
		want = append(want, fmt.Sprintf("syncing %d/15", i/10*10))
	}
	if diff := cmp.Diff(want, obs.seen); diff != "" {
		t.Errorf("progress seen at each fetch (-want +got):\n%s", diff)
	}
}
