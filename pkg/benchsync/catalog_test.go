package benchsync

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

func loadCatalog(t *testing.T) benchmark.Catalog {
	t.Helper()
	data, err := os.ReadFile(exampleCatalog)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := benchmark.ParseCatalog(data, exampleCatalog)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func TestInstallCatalog(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "") // no platform registry: the catalog names its own
	cat := loadCatalog(t)
	msgs, err := e.svc.InstallCatalog(ctx, ws, cat, "")
	if err != nil {
		t.Fatalf("InstallCatalog: %v", err)
	}
	if diff := cmp.Diff([]SyncMessage{NewSyncMessage(ws, "demo-bench")}, msgs); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	installed := e.benchmark(t, "demo-bench")
	if installed.Source != (benchmark.Source{Type: benchmark.Managed, Ref: "demo-bench@1.0"}) || installed.Status != records.SyncPending {
		t.Errorf("installed = %+v", installed)
	}
	// Installing again (a restart before the sync ran) changes nothing and
	// asks for the pending sync again.
	msgs, err = e.svc.InstallCatalog(ctx, ws, cat, "")
	if err != nil || len(msgs) != 1 {
		t.Errorf("second InstallCatalog = %v, %v; want the pending sync again", msgs, err)
	}
	if got := e.benchmark(t, "demo-bench"); got.Version != installed.Version {
		t.Errorf("second InstallCatalog wrote the record: %+v", got)
	}

	e.sync(t, "demo-bench")
	b := e.benchmark(t, "demo-bench")
	if b.Status != records.SyncReady || b.TaskCount != 15 || b.ReadyVersion != "1.0" {
		t.Fatalf("after Sync: %+v", b)
	}
	m, files := e.manifest(t, b)
	entry := cat.Benchmarks[0]
	if m.Source.Type != benchmark.Managed || m.HarnessRequirement != benchmark.HarnessOptional || m.DefaultHarness != "oracle" ||
		m.Judge != (benchmark.Judge{}) || m.PassThreshold != 1 || m.Name != entry.Name || m.Description != entry.Description {
		t.Errorf("manifest policy = %+v", m)
	}
	wantSets := []benchmark.TaskSetCount{
		{Name: "parity", Description: entry.TaskSets["parity"].Description, Recommended: true, Tasks: 8},
		{Name: "smoke", Description: entry.TaskSets["smoke"].Description, Tasks: 3},
	}
	if diff := cmp.Diff(wantSets, m.TaskSetCounts()); diff != "" {
		t.Errorf("task sets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(entry.TaskSets["parity"].Tasks, m.TaskSets["parity"].Tasks); diff != "" {
		t.Errorf("parity tasks (-catalog +manifest):\n%s", diff)
	}
	if len(files) != 15 || files["lru-cache"].Dir == "" {
		t.Errorf("files = %d entries, lru-cache %+v", len(files), files["lru-cache"])
	}

	// Ready and unchanged: nothing to enqueue; managed cannot be deleted;
	// a ready one cannot be retried.
	if msgs, err := e.svc.InstallCatalog(ctx, ws, cat, ""); err != nil || len(msgs) != 0 {
		t.Errorf("InstallCatalog when ready = %v, %v; want nothing", msgs, err)
	}
	if err := e.svc.Delete(ctx, ws, "demo-bench"); !errors.Is(err, ErrConflict) {
		t.Errorf("Delete(managed) = %v, want ErrConflict", err)
	}
	if _, err := e.svc.Retry(ctx, ws, "demo-bench"); !errors.Is(err, ErrConflict) {
		t.Errorf("Retry(ready) = %v, want ErrConflict", err)
	}

	// The operator changes the policy: the benchmark syncs again and the
	// same task list gets the new threshold.
	cat.Benchmarks[0].PassThreshold = 0.5
	msgs, err = e.svc.InstallCatalog(ctx, ws, cat, "")
	if err != nil || len(msgs) != 1 || e.benchmark(t, "demo-bench").Status != records.SyncPending {
		t.Fatalf("InstallCatalog after a change = %v, %v, status %s", msgs, err, e.benchmark(t, "demo-bench").Status)
	}
	e.sync(t, "demo-bench")
	b2 := e.benchmark(t, "demo-bench")
	m2, _ := e.manifest(t, b2)
	if b2.ReadyDigest != b.ReadyDigest || m2.PassThreshold != 0.5 {
		t.Errorf("after policy change: digest %s (was %s), threshold %v", b2.ReadyDigest, b.ReadyDigest, m2.PassThreshold)
	}
}

func TestInstallCatalogRelativeToDir(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "")
	cat := loadCatalog(t)
	// As parsed without a file name: paths stay relative to the catalog dir.
	cat.Benchmarks[0].Registry = "registry.json"
	if _, err := e.svc.InstallCatalog(ctx, ws, cat, "../../examples"); err != nil {
		t.Fatal(err)
	}
	e.sync(t, "demo-bench")
	if b := e.benchmark(t, "demo-bench"); b.Status != records.SyncReady {
		t.Errorf("after Sync: %+v", b)
	}
}

func TestInstallCatalogDir(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "")
	cat := benchmark.Catalog{Benchmarks: []benchmark.CatalogEntry{{
		Key: "local-demo", Name: "Local demo", Dir: exampleTasks,
		HarnessRequirement: benchmark.HarnessOfficialOnly, DefaultHarness: "oracle",
		Judge: benchmark.Judge{Required: true, DefaultModel: "openai/gpt-5.2"}, PassThreshold: 1,
	}}}
	if _, err := e.svc.InstallCatalog(ctx, ws, cat, ""); err != nil {
		t.Fatal(err)
	}
	e.sync(t, "local-demo")
	b := e.benchmark(t, "local-demo")
	m, _ := e.manifest(t, b)
	abs, _ := filepath.Abs(exampleTasks)
	if b.Status != records.SyncReady || b.ReadyVersion != "local" || len(m.Tasks) != 15 ||
		m.Source.Ref != abs || m.HarnessRequirement != benchmark.HarnessOfficialOnly || !m.Judge.Required {
		t.Errorf("dir benchmark: %+v\nmanifest %+v", b, m)
	}
}

func TestInstallCatalogKeyConflict(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, exampleRegistry)
	if _, err := e.svc.Add(ctx, ws, "demo-bench@1.0"); err != nil {
		t.Fatal(err)
	}
	cat := loadCatalog(t)
	cat.Benchmarks[0].Key = "demo-bench-1-0"
	_, err := e.svc.InstallCatalog(ctx, ws, cat, "")
	if !errors.Is(err, ErrConflict) {
		t.Errorf("InstallCatalog over a harbor key = %v, want ErrConflict", err)
	}
	// And the other way round: a spec whose key a managed benchmark holds.
	e2 := newEnv(t, exampleRegistry)
	if _, err := e2.svc.InstallCatalog(ctx, ws, cat, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.svc.Add(ctx, ws, "demo-bench"); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "managed") {
		t.Errorf("Add over a managed key = %v, want ErrConflict naming it", err)
	}
}

// TestUnreachableRegistryThenRetry: a managed benchmark whose registry
// cannot be reached fails with the reason; once the registry answers, a
// retry makes it ready. The registry is served over HTTP and its tasks come
// from a git repository, so both remote paths are exercised.
func TestUnreachableRegistryThenRetry(t *testing.T) {
	ctx := context.Background()
	repoURL, _ := bareRepo(t, "word-frequency", "fix-median")
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := listener.Addr().String()
	listener.Close()
	location := "http://" + addr + "/registry.json"

	e := newEnv(t, "")
	cat := benchmark.Catalog{Benchmarks: []benchmark.CatalogEntry{{
		Key: "remote", Name: "Remote", Source: "remote@2.0", Registry: location,
		HarnessRequirement: benchmark.HarnessOptional, PassThreshold: 1,
		TaskSets: map[string]benchmark.TaskSet{"parity": {Name: "parity", Recommended: true, Tasks: []string{"fix-median"}}},
	}}}
	if _, err := e.svc.InstallCatalog(ctx, ws, cat, ""); err != nil {
		t.Fatal(err)
	}
	e.sync(t, "remote")
	failed := e.benchmark(t, "remote")
	if failed.Status != records.SyncFailed || !strings.HasPrefix(failed.SyncError, "registry "+location+" unreachable: ") {
		t.Fatalf("with the registry down: status %s, error %q", failed.Status, failed.SyncError)
	}

	t.Logf("sync error: %s", failed.SyncError)
	body := `[{"name": "remote", "version": "2.0", "description": "served", "tasks": [
		{"name": "word-frequency", "git_url": "` + repoURL + `", "git_commit_id": "HEAD", "path": "tasks/word-frequency"},
		{"name": "fix-median", "git_url": "` + repoURL + `", "path": "tasks/fix-median"}]}]`
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(body))
	}))
	srv.Listener = l
	srv.Start()
	defer srv.Close()

	retried, err := e.svc.Retry(ctx, ws, "remote")
	if err != nil || retried.Status != records.SyncPending || retried.SyncError != "" {
		t.Fatalf("Retry = %+v, %v", retried, err)
	}
	e.sync(t, "remote")
	b := e.benchmark(t, "remote")
	if b.Status != records.SyncReady || b.TaskCount != 2 {
		t.Fatalf("after retry: %+v", b)
	}
	m, files := e.manifest(t, b)
	head := gitOutput(t, strings.TrimPrefix(repoURL, "file://"), "rev-parse", "HEAD")
	for _, task := range m.Tasks {
		want := benchmark.TaskLocation{GitURL: repoURL, GitCommitID: head, Path: "tasks/" + task.Name}
		if task.Location != want {
			t.Errorf("%s location = %+v, want %+v", task.Name, task.Location, want)
		}
		if f := files[task.Name]; f.Dir != "" || f.BundleKey != BundleKey(task.Digest) {
			t.Errorf("files[%s] = %+v", task.Name, f)
		}
	}
	if !m.TaskSets["parity"].Recommended || m.Source.Type != benchmark.Managed {
		t.Errorf("manifest = %+v", m)
	}
	// The same task content from git and from disk bundles identically.
	local := newEnv(t, exampleRegistry)
	lb, _ := local.svc.Add(ctx, ws, "demo-bench")
	local.sync(t, lb.Key)
	lm, _ := local.manifest(t, local.benchmark(t, lb.Key))
	lt, _ := lm.Task("fix-median")
	gt, _ := m.Task("fix-median")
	if lt.Digest != gt.Digest {
		t.Errorf("fix-median digest from git %s, from disk %s", gt.Digest, lt.Digest)
	}
}
