package benchsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/registry"
)

// rollingRegistry writes a registry file listing dataset rolling@head with
// the named example tasks (copied beside it on first use) and returns its
// path; calling it again rewrites the file, as a registry publishing a new
// head does.
func rollingRegistry(t *testing.T, dir string, tasks ...string) string {
	t.Helper()
	var refs []string
	for _, name := range tasks {
		if _, err := os.Stat(filepath.Join(dir, "tasks", name)); err != nil {
			copyExample(t, name, filepath.Join(dir, "tasks", name))
		}
		refs = append(refs, `{"name": "`+name+`", "path": "tasks/`+name+`"}`)
	}
	path := filepath.Join(dir, "registry.json")
	writeRegistry(t, path, `[{"name": "rolling", "version": "head", "description": "moves", "tasks": [`+strings.Join(refs, ", ")+`]}]`)
	return path
}

func (e *env) syncState(t *testing.T, ws, key string) records.RefreshState {
	t.Helper()
	st, err := e.rec.Benchmarks.RefreshState(context.Background(), ws, key)
	if err != nil {
		t.Fatalf("SyncState(%s/%s): %v", ws, key, err)
	}
	return st
}

// addSynced adds spec to workspace w and syncs it to ready.
func (e *env) addSynced(t *testing.T, w, spec string) records.Benchmark {
	t.Helper()
	ctx := context.Background()
	b, err := e.svc.Add(ctx, w, spec)
	if err != nil {
		t.Fatalf("Add(%s, %s): %v", w, spec, err)
	}
	if err := e.svc.Sync(ctx, NewSyncMessage(w, b.Key)); err != nil {
		t.Fatalf("Sync(%s/%s): %v", w, b.Key, err)
	}
	got, err := e.rec.Benchmarks.Benchmark(ctx, w, b.Key)
	if err != nil || got.Status != records.SyncReady {
		t.Fatalf("after Sync(%s/%s): %+v, %v; want ready", w, b.Key, got, err)
	}
	return got
}

// refreshAll lists the benchmarks due at the clock's time and runs each
// refresh message through an encode/decode round trip and Sync.
func (e *env) refreshAll(t *testing.T, olderThan time.Duration) []SyncMessage {
	t.Helper()
	ctx := context.Background()
	msgs, err := e.svc.Refresh(ctx, e.clock.Now(), olderThan)
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	for _, m := range msgs {
		body, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := DecodeSyncMessage(body)
		if err != nil {
			t.Fatalf("DecodeSyncMessage(%s): %v", body, err)
		}
		if err := e.svc.Sync(ctx, decoded); err != nil {
			t.Fatalf("Sync(%s): %v", body, err)
		}
	}
	return msgs
}

func TestRefreshUnchangedMovesOnlyLastSynced(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, exampleRegistry)
	ready := e.addSynced(t, ws, "demo-bench")
	synced := e.syncState(t, ws, ready.Key)
	if want := (records.RefreshState{Workspace: ws, Key: ready.Key, LastSynced: e.clock.Now(), Version: 1}); !cmp.Equal(want, synced) {
		t.Fatalf("sync state after the first sync = %+v, want %+v", synced, want)
	}
	e.clock.Advance(2 * time.Hour)
	msgs := e.refreshAll(t, time.Hour)
	if diff := cmp.Diff([]SyncMessage{NewRefreshMessage(ws, ready.Key, synced.LastSynced)}, msgs); diff != "" {
		t.Errorf("Refresh messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ready, e.benchmark(t, ready.Key)); diff != "" {
		t.Errorf("benchmark record changed by an unchanged refresh (-before +after):\n%s", diff)
	}
	after := e.syncState(t, ws, ready.Key)
	if !after.LastSynced.Equal(e.clock.Now()) || after.Refreshing() || after.RefreshError != "" {
		t.Errorf("sync state after refresh = %+v, want last synced %s and no refresh running", after, e.clock.Now())
	}
	// A redelivery of the message changes nothing; nothing is due any more.
	if err := e.svc.Sync(ctx, msgs[0]); err != nil {
		t.Fatal(err)
	}
	if got := e.syncState(t, ws, ready.Key); got.Version != after.Version {
		t.Errorf("redelivered refresh wrote the sync state: version %d → %d", after.Version, got.Version)
	}
	if again := e.refreshAll(t, time.Hour); len(again) != 0 {
		t.Errorf("Refresh right after a refresh = %v, want nothing due", again)
	}
}

func TestRefreshSwitchesToNewContentAndStaysReady(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, rollingRegistry(t, dir, "word-frequency", "csv-summary"))
	first := e.addSynced(t, ws, "rolling")
	if first.Key != "rolling-head" || first.ReadyVersion != "head" || first.TaskCount != 2 {
		t.Fatalf("first sync: %+v", first)
	}
	firstManifest, _ := e.manifest(t, first)

	rollingRegistry(t, dir, "word-frequency", "csv-summary", "fix-median") // upstream head moves
	obs := &observingSource{t: t, e: e, key: first.Key}
	e.svc.open = func(location string) (registry.Source, error) {
		src, err := registry.Open(location)
		obs.Source = src
		return obs, err
	}
	e.clock.Advance(2 * time.Hour)
	if msgs := e.refreshAll(t, time.Hour); len(msgs) != 1 {
		t.Fatalf("Refresh = %v, want one message", msgs)
	}
	for _, seen := range obs.seen {
		if !strings.HasPrefix(seen, "ready ") {
			t.Errorf("benchmark during the refresh: %s, want ready throughout", seen)
		}
	}
	got := e.benchmark(t, first.Key)
	m, _ := e.manifest(t, got)
	wantVersion := "head+" + strings.TrimPrefix(m.Digest, "sha256:")[:12]
	if got.Status != records.SyncReady || got.ReadyVersion != wantVersion || got.ReadyDigest != benchmark.ComputeDigest(m.Tasks) ||
		got.TaskCount != 3 || got.Synced != 3 || got.Total != 3 || got.ReadyDigest == first.ReadyDigest {
		t.Errorf("after refresh: %+v, want ready at %s with 3 tasks", got, wantVersion)
	}
	if m.Version != wantVersion || len(m.Tasks) != 3 {
		t.Errorf("new manifest version %s with %d tasks, want %s with 3", m.Version, len(m.Tasks), wantVersion)
	}
	// The version runs pinned before the refresh is still stored as it was.
	old, _ := e.manifest(t, first)
	if diff := cmp.Diff(firstManifest, old); diff != "" {
		t.Errorf("pinned version changed (-before +after):\n%s", diff)
	}
	versions, err := e.rec.Benchmarks.ManifestVersions(context.Background(), ws, first.Key)
	if diff := cmp.Diff([]string{"head", wantVersion}, versions); diff != "" || err != nil {
		t.Errorf("ManifestVersions (-want +got):\n%s%v", diff, err)
	}
	if st := e.syncState(t, ws, first.Key); !st.LastSynced.Equal(e.clock.Now()) || st.Refreshing() {
		t.Errorf("sync state = %+v", st)
	}
}

// TestRefreshPicksUpNewCommitOnHEAD: tasks pinned at a repository's HEAD
// resolve to the new commit on refresh.
func TestRefreshPicksUpNewCommitOnHEAD(t *testing.T) {
	repoURL, commit := bareRepo(t, "lru-cache", "roman-numerals")
	dir := t.TempDir()
	writeRegistry(t, filepath.Join(dir, "registry.json"), `[{"name": "gitbench", "version": "0.1", "description": "", "tasks": [
		{"name": "lru-cache", "git_url": "`+repoURL+`", "git_commit_id": "HEAD", "path": "tasks/lru-cache"},
		{"name": "roman-numerals", "git_url": "`+repoURL+`", "path": "tasks/roman-numerals"}]}]`)
	e := newEnv(t, filepath.Join(dir, "registry.json"))
	first := e.addSynced(t, ws, "gitbench")
	commitsOf := func(b records.Benchmark) []string {
		m, _ := e.manifest(t, b)
		var out []string
		for _, task := range m.Tasks {
			out = append(out, task.Location.GitCommitID)
		}
		return out
	}
	if diff := cmp.Diff([]string{commit, commit}, commitsOf(first)); diff != "" {
		t.Fatalf("first sync commits (-want +got):\n%s", diff)
	}

	// Nothing changed upstream: same version and digest.
	e.clock.Advance(2 * time.Hour)
	e.refreshAll(t, time.Hour)
	if got := e.benchmark(t, first.Key); got.ReadyVersion != "0.1" || got.ReadyDigest != first.ReadyDigest {
		t.Fatalf("refresh without upstream change: %+v", got)
	}

	next := pushChange(t, repoURL, "tasks/lru-cache/instruction.md", "\nAlso handle a capacity of zero.\n")
	e.clock.Advance(2 * time.Hour)
	e.refreshAll(t, time.Hour)
	got := e.benchmark(t, first.Key)
	if got.Status != records.SyncReady || got.ReadyDigest == first.ReadyDigest || !strings.HasPrefix(got.ReadyVersion, "0.1+") {
		t.Fatalf("after the new commit: %+v, want ready at a new 0.1+… version", got)
	}
	if diff := cmp.Diff([]string{next, next}, commitsOf(got)); diff != "" {
		t.Errorf("refreshed commits (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{commit, commit}, commitsOf(first)); diff != "" {
		t.Errorf("pinned version's commits (-want +got):\n%s", diff)
	}
}

// pushChange appends text to file in a clone of the bare repository at url
// and pushes the commit to its HEAD branch; it returns the new commit.
func pushChange(t *testing.T, url, file, text string) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "clone")
	gitOutput(t, filepath.Dir(work), "clone", "--quiet", url, work)
	f, err := os.OpenFile(filepath.Join(work, file), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	gitOutput(t, work, "commit", "--quiet", "-am", "change "+file)
	gitOutput(t, work, "push", "--quiet", "origin", "HEAD")
	return gitOutput(t, work, "rev-parse", "HEAD")
}

func TestRefreshUnreachableRegistryStaysReady(t *testing.T) {
	dir := t.TempDir()
	path := rollingRegistry(t, dir, "word-frequency")
	e := newEnv(t, path)
	ready := e.addSynced(t, ws, "rolling")
	synced := e.syncState(t, ws, ready.Key)
	if err := os.Rename(path, path+".away"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Hour)
	e.refreshAll(t, time.Hour)
	if diff := cmp.Diff(ready, e.benchmark(t, ready.Key)); diff != "" {
		t.Errorf("benchmark changed by a failed refresh (-before +after):\n%s", diff)
	}
	failed := e.syncState(t, ws, ready.Key)
	t.Logf("refresh error: %s", failed.RefreshError)
	if failed.RefreshError == "" || !strings.Contains(failed.RefreshError, "registry.json") || !failed.RefreshFailedAt.Equal(e.clock.Now()) ||
		!failed.LastSynced.Equal(synced.LastSynced) || failed.Refreshing() {
		t.Errorf("sync state after a failed refresh = %+v, want refresh_error, failure time and the old last sync", failed)
	}
	// Still due: the next schedule tries again, and succeeds once the
	// registry is back.
	if err := os.Rename(path+".away", path); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	if msgs := e.refreshAll(t, time.Hour); len(msgs) != 1 {
		t.Fatalf("Refresh after a failure = %v, want the benchmark again", msgs)
	}
	if st := e.syncState(t, ws, ready.Key); st.RefreshError != "" || !st.LastSynced.Equal(e.clock.Now()) {
		t.Errorf("sync state after recovery = %+v", st)
	}
}

func TestRefreshListsOnlyDueBenchmarks(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, exampleRegistry)
	t0 := e.clock.Now()
	e.addSynced(t, "ws-a", "demo-bench")
	e.addSynced(t, "ws-c", "demo-bench")
	e.clock.Advance(40 * time.Minute)
	e.addSynced(t, "ws-b", "demo-bench")
	if _, err := e.svc.Add(ctx, "ws-d", "demo-bench"); err != nil { // pending: never synced
		t.Fatal(err)
	}
	const key = "demo-bench-1-0"
	// ws-c's refresh is running (claimed 10 minutes ago).
	e.clock.Advance(40 * time.Minute)
	if _, err := e.rec.Benchmarks.UpdateSync(ctx, "ws-c", key, func(state *records.SyncState) error {
		st := &state.Refresh
		st.RefreshStarted, st.RefreshUpdatedAt = e.clock.Now(), e.clock.Now()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Minute) // t0 + 90m
	msgs, err := e.svc.Refresh(ctx, e.clock.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]SyncMessage{NewRefreshMessage("ws-a", key, t0)}, msgs); diff != "" {
		t.Errorf("Refresh at t0+90m (-want +got):\n%s", diff)
	}
	// A refresh message while ws-c's refresh holds the lease waits.
	if err := e.svc.Sync(ctx, NewRefreshMessage("ws-c", key, t0)); !errors.Is(err, ErrSyncInProgress) {
		t.Errorf("Sync of a refresh held elsewhere = %v, want ErrSyncInProgress", err)
	}
	// Once the lease has expired the stalled refresh is listed again.
	e.clock.Advance(DefaultLease + time.Minute)
	msgs, err = e.svc.Refresh(ctx, e.clock.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	want := []SyncMessage{NewRefreshMessage("ws-a", key, t0), NewRefreshMessage("ws-c", key, t0), NewRefreshMessage("ws-b", key, t0.Add(40*time.Minute))}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("Refresh after the lease expired (-want +got):\n%s", diff)
	}
	// A refresh message for a benchmark that is not ready, or is gone, is
	// acknowledged and changes nothing.
	for _, w := range []string{"ws-d", "ws-none"} {
		if err := e.svc.Sync(ctx, NewRefreshMessage(w, key, time.Time{})); err != nil {
			t.Errorf("refresh of %s: %v", w, err)
		}
	}
	if b, err := e.rec.Benchmarks.Benchmark(ctx, "ws-d", key); err != nil || b.Status != records.SyncPending {
		t.Errorf("pending benchmark after a refresh message: %+v, %v", b, err)
	}
	if _, err := e.svc.Refresh(ctx, e.clock.Now(), -time.Second); err == nil {
		t.Error("Refresh with a negative age: no error")
	}
}

// TestRefreshOfBenchmarkReadyBeforeTheIndex: a benchmark that became
// ready without a sync state (stored by an older build) enters the index
// on its first refresh.
func TestRefreshOfBenchmarkReadyBeforeTheIndex(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, exampleRegistry)
	ready := e.addSynced(t, ws, "demo-bench")
	if err := e.rec.Benchmarks.DeleteRefreshState(ctx, ws, ready.Key); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	if err := e.svc.Sync(ctx, NewRefreshMessage(ws, ready.Key, time.Time{})); err != nil {
		t.Fatal(err)
	}
	if st := e.syncState(t, ws, ready.Key); !st.LastSynced.Equal(e.clock.Now()) || st.Refreshing() {
		t.Errorf("sync state = %+v, want last synced now", st)
	}
	if got := e.benchmark(t, ready.Key); got.ReadyVersion != ready.ReadyVersion || got.ReadyDigest != ready.ReadyDigest || got.Status != records.SyncReady {
		t.Errorf("benchmark = %+v", got)
	}
}
