package benchsync

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/hub"
	"github.com/gauntlet-bench/gauntlet/pkg/hub/hubtest"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// hubEnv is a service whose package registry is a loopback hubtest server
// holding dataset demo/bench (three demo tasks and a metric.py).
type hubEnv struct {
	*env
	srv   *hubtest.Server
	tasks []hub.TaskID
	hash  string // the dataset version's content hash
}

func newHubEnv(t *testing.T) *hubEnv {
	t.Helper()
	e := &hubEnv{env: newEnv(t, exampleRegistry), srv: hubtest.New(t)}
	e.svc.pkgURL, e.svc.pkgKey = e.srv.URL, hubtest.PublishableKey
	for _, name := range []string{"fix-median", "roman-numerals", "word-frequency"} {
		e.tasks = append(e.tasks, e.srv.PublishTask(t, "demo", name, filepath.Join(exampleTasks, name), false))
	}
	_, e.hash = e.srv.PublishDataset(t, "demo", "bench", "three demo tasks", false, e.tasks,
		[]hubtest.DatasetFile{{Path: "metric.py", Data: []byte("def metric(rewards):\n    return sum(rewards) / len(rewards)\n")}})
	return e
}

func TestAddAndSyncPackageDataset(t *testing.T) {
	ctx := context.Background()
	e := newHubEnv(t)
	b, err := e.svc.Add(ctx, ws, "demo/bench")
	if err != nil {
		t.Fatalf("Add(demo/bench) = %v", err)
	}
	if b.Key != "demo-bench" || b.Name != "demo/bench" || b.Source.Ref != "demo/bench@latest" || b.Total != 3 || b.Status != records.SyncPending || b.SyncWarning != "" {
		t.Fatalf("added %+v; want key demo-bench, source demo/bench@latest, 3 tasks, pending", b)
	}
	e.sync(t, b.Key)
	b = e.benchmark(t, b.Key)
	if b.Status != records.SyncReady || b.ReadyVersion != "1" || b.TaskCount != 3 {
		t.Fatalf("after sync: %+v; want ready at version 1 (the dataset's revision) with 3 tasks", b)
	}
	m, files := e.manifest(t, b)
	if m.Source.Ref != "demo/bench@sha256:"+e.hash {
		t.Errorf("manifest source %q, want it pinned to the dataset's content hash sha256:%s", m.Source.Ref, e.hash)
	}
	for i, task := range m.Tasks {
		want := e.tasks[i]
		if task.Name != want.Package() || task.Location.ContentHash != "sha256:"+want.ContentHash || task.Environment != nil {
			t.Errorf("task %d = %s (%s, env %+v); want %s verified at sha256:%s", i, task.Name, task.Location.ContentHash, task.Environment, want.Package(), want.ContentHash)
		}
		if files[task.Name].BundleKey == "" {
			t.Errorf("task %s has no bundle", task.Name)
		}
	}
	if len(m.Files) != 1 || m.Files[0].Path != "metric.py" {
		t.Fatalf("dataset files %+v, want metric.py", m.Files)
	}
	rc, err := e.blobs.Get(ctx, m.Files[0].BlobKey)
	if err != nil {
		t.Fatalf("metric.py is not kept: %v", err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if !strings.Contains(string(data), "def metric") {
		t.Errorf("kept metric.py = %q", data)
	}
	// Adding it again is the same benchmark; a pinned revision is another.
	again, err := e.svc.Add(ctx, ws, "demo/bench@latest")
	if err != nil || again.Key != b.Key {
		t.Errorf("Add again = %+v, %v; want the stored benchmark", again, err)
	}
	pinned, err := e.svc.Add(ctx, ws, "demo/bench@1")
	if err != nil || pinned.Key != "demo-bench-1" {
		t.Errorf("Add(demo/bench@1) = %+v, %v; want key demo-bench-1", pinned, err)
	}
}

func TestSyncPackageTaskWithBadArchiveIsUnavailable(t *testing.T) {
	ctx := context.Background()
	e := newHubEnv(t)
	// Task 0 is served another task's archive; task 1 a truncated one.
	e.srv.Replace(hubtest.ArchivePath(e.tasks[0]), mustRead(t, e.srv, hubtest.ArchivePath(e.tasks[2])))
	good := e.srv.Replace(hubtest.ArchivePath(e.tasks[1]), nil)
	e.srv.Replace(hubtest.ArchivePath(e.tasks[1]), good[:len(good)-40])
	b, err := e.svc.Add(ctx, ws, "demo/bench")
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	b = e.benchmark(t, b.Key)
	if b.Status != records.SyncReady {
		t.Fatalf("status %s (%s); want ready with two tasks unavailable", b.Status, b.SyncError)
	}
	m, _ := e.manifest(t, b)
	reasons := map[string]string{}
	for _, task := range m.Tasks {
		if task.Environment != nil {
			reasons[task.Name] = task.Environment.Unavailable
		}
	}
	mismatch := reasons["demo/fix-median"]
	if !strings.Contains(mismatch, "sha256:"+e.tasks[0].ContentHash) || !strings.Contains(mismatch, "sha256:"+e.tasks[2].ContentHash) {
		t.Errorf("tampered task's reason %q; want both hashes named", mismatch)
	}
	if !strings.Contains(reasons["demo/roman-numerals"], "truncated") {
		t.Errorf("truncated task's reason %q; want it to say truncated", reasons["demo/roman-numerals"])
	}
	if _, ok := reasons["demo/word-frequency"]; ok {
		t.Errorf("the intact task is unavailable: %s", reasons["demo/word-frequency"])
	}
}

func mustRead(t *testing.T, srv *hubtest.Server, path string) []byte {
	t.Helper()
	data := srv.Replace(path, nil)
	srv.Replace(path, data)
	return data
}

func TestAddPackageBadCases(t *testing.T) {
	ctx := context.Background()
	e := newHubEnv(t)
	var fe *benchmark.FieldError

	for _, tc := range []struct{ spec, field string }{
		{"demo/bench@Not_A_Tag", "source"},
		{"demo/../bench", "source"},
		{"a/b/c", "source"},
		{"demo/bench@sha256:1234", "source"},
	} {
		if _, err := e.svc.Add(ctx, ws, tc.spec); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Add(%q) = %v; want a FieldError on %s", tc.spec, err, tc.field)
		}
	}
	if _, err := e.svc.Add(ctx, ws, "demo/nope"); !errors.Is(err, ErrDatasetNotFound) {
		t.Errorf("unknown dataset: %v; want ErrDatasetNotFound", err)
	}
	_, err := e.svc.Add(ctx, ws, "demo/bench@nightly")
	if !errors.Is(err, ErrDatasetNotFound) || !strings.Contains(err.Error(), "Tag 'nightly' not found") || !strings.Contains(err.Error(), "latest (revision 1)") {
		t.Errorf("unknown tag: %v; want Harbor's message and the known tags", err)
	}
	// A dataset with a task the caller may not read: Harbor's message.
	private := e.srv.PublishTask(t, "acme", "hidden", filepath.Join(exampleTasks, "lru-cache"), true)
	e.srv.PublishDataset(t, "demo", "mixed", "", false, []hub.TaskID{e.tasks[0], private}, nil)
	_, err = e.svc.Add(ctx, ws, "demo/mixed")
	if !errors.As(err, &fe) || !strings.Contains(fe.Message, "Dataset 'demo/mixed@latest' references 1 task that is unavailable to your account") {
		t.Errorf("inaccessible task: %v; want Harbor's message", err)
	}
	if list, err := e.rec.Benchmarks.Benchmarks(ctx, ws); err != nil || len(list) != 0 {
		t.Errorf("after refused adds, benchmarks %+v, %v; want none written", list, err)
	}

	// Unreachable: the registry is gone.
	e.srv.Close()
	if _, err := e.svc.Add(ctx, ws, "demo/bench"); !errors.Is(err, ErrRegistryUnavailable) {
		t.Errorf("closed registry: %v; want ErrRegistryUnavailable", err)
	}
}

func TestAddPackageGuardedByDefault(t *testing.T) {
	e := newHubEnv(t)
	e.svc.allowPrivate = false
	_, err := e.svc.Add(context.Background(), ws, "demo/bench")
	if !errors.Is(err, ErrRegistryUnavailable) || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("loopback registry under the default policy: %v; want it refused by the address guard", err)
	}
}

func TestYankedPackageWarns(t *testing.T) {
	ctx := context.Background()
	e := newHubEnv(t)
	e.srv.Yank("demo", "bench", 1, "verifier of fix-median was wrong")
	b, err := e.svc.Add(ctx, ws, "demo/bench")
	want := "Dataset version demo/bench@latest is yanked: verifier of fix-median was wrong"
	if err != nil || b.SyncWarning != want {
		t.Fatalf("Add(yanked) = %+v, %v; want it added with warning %q", b, err, want)
	}
	e.sync(t, b.Key)
	if got := e.benchmark(t, b.Key); got.Status != records.SyncReady || got.SyncWarning != want {
		t.Errorf("after sync: %s, warning %q; want ready with %q", got.Status, got.SyncWarning, want)
	}
}

func TestPrivatePackageWithAPIKeySecret(t *testing.T) {
	ctx := context.Background()
	e := newHubEnv(t)
	var logs bytes.Buffer
	e.svc.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st := withSecrets(t, e.env)
	const key = "sk-harbor-k1_canary-secret-value"
	setSecret(t, e.env, st, "HARBOR_API_KEY", key)
	setSecret(t, e.env, st, "OTHER_KEY", "sk-harbor-k2_wrong")
	e.srv.AddAPIKey(key, "acme")
	task := e.srv.PublishTask(t, "acme", "private-task", filepath.Join(exampleTasks, "lru-cache"), true)
	e.srv.PublishDataset(t, "acme", "private-bench", "", true, []hub.TaskID{task}, nil)

	if _, err := e.svc.Add(ctx, ws, "acme/private-bench"); !errors.Is(err, ErrDatasetNotFound) {
		t.Errorf("anonymous: %v; want not found", err)
	}
	var fe *benchmark.FieldError
	_, err := e.svc.AddFrom(ctx, ws, AddRequest{Spec: "acme/private-bench", APIKeySecret: "OTHER_KEY"})
	if !errors.As(err, &fe) || fe.Field != "api_key_secret" {
		t.Errorf("rejected key: %v; want a FieldError on api_key_secret", err)
	}
	if _, err := e.svc.AddFrom(ctx, ws, AddRequest{Spec: "acme/private-bench", APIKeySecret: "NOT_SET"}); !errors.As(err, &fe) || fe.Field != "api_key_secret" {
		t.Errorf("missing record: %v; want a FieldError on api_key_secret", err)
	}
	b, err := e.svc.AddFrom(ctx, ws, AddRequest{Spec: "acme/private-bench", APIKeySecret: "HARBOR_API_KEY"})
	if err != nil {
		t.Fatalf("with the key: %v", err)
	}
	e.sync(t, b.Key)
	if got := e.benchmark(t, b.Key); got.Status != records.SyncReady || got.TaskCount != 1 {
		t.Errorf("private dataset after sync: %+v", got)
	}
	if strings.Contains(logs.String(), "canary-secret-value") {
		t.Error("the API key's value is in the log")
	}
	data, err := os.ReadFile(filepath.Join(e.svc.workDir, "..", "gauntlet.db"))
	if err == nil && bytes.Contains(data, []byte("canary-secret-value")) {
		t.Error("the API key's value is in the database")
	}
}

// A tag that moves is re-resolved by the scheduled refresh into a new
// manifest version; the old one stays for the runs that pinned it, and a
// benchmark pinned to a revision does not move.
func TestRefreshFollowsAMovedTag(t *testing.T) {
	ctx := context.Background()
	e := newHubEnv(t)
	latest := e.addSynced(t, ws, "demo/bench")
	pinned := e.addSynced(t, ws, "demo/bench@1")

	changed := filepath.Join(t.TempDir(), "fix-median")
	copyExample(t, "fix-median", changed)
	if err := os.WriteFile(filepath.Join(changed, "instruction.md"), []byte("Fix the median, again.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v2 := e.srv.PublishTask(t, "demo", "fix-median", changed, false)
	e.srv.PublishDataset(t, "demo", "bench", "three demo tasks", false, []hub.TaskID{v2, e.tasks[1], e.tasks[2]}, nil)

	e.clock.Advance(48 * 3600e9)
	e.refreshAll(t, 3600e9)
	after := e.benchmark(t, latest.Key)
	if after.Status != records.SyncReady || after.ReadyVersion != "2" || after.ReadyDigest == latest.ReadyDigest {
		t.Fatalf("latest after refresh: %s at %s (%s); want ready at version 2 with a new digest", after.Status, after.ReadyVersion, after.ReadyDigest)
	}
	if _, _, err := e.rec.Benchmarks.Manifest(ctx, ws, latest.Key, latest.ReadyVersion); err != nil {
		t.Errorf("version %s, which runs may pin, is gone: %v", latest.ReadyVersion, err)
	}
	if p := e.benchmark(t, pinned.Key); p.ReadyVersion != "1" || p.ReadyDigest != pinned.ReadyDigest {
		t.Errorf("pinned benchmark moved to %s (%s)", p.ReadyVersion, p.ReadyDigest)
	}
}
