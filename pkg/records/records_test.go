package records_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

func openStore(t *testing.T) *records.Store {
	t.Helper()
	return records.New(openDB(t).Table())
}

func openDB(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gauntlet.db"))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func createRun(t *testing.T, s *records.Store, id string) run.Run {
	t.Helper()
	r := run.Run{ID: id, Workspace: "ws1", Name: "r", Benchmark: "demo", Tasks: []string{"a", "b"},
		Agents: 1, Settings: run.Settings{AttemptsPerTask: 1, MaxConcurrentAttempts: 1}, Status: run.Pending, CreatedAt: t0}
	var ops records.Ops
	ops.AddAll(records.CreateRunOp(r))
	ops.Add(records.CreateAgentOp(run.Agent{RunID: id, Index: 0, Harness: "nop", Status: run.Pending}))
	if err := ops.Transact(context.Background(), s); err != nil {
		t.Fatalf("create run: %v", err)
	}
	got, err := s.Runs.Run(context.Background(), id)
	if err != nil {
		t.Fatalf("Run(%q): %v", id, err)
	}
	return got
}

func TestRunCreateUpdateAndIndexes(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	r := createRun(t, s, "r1")
	createRun(t, s, "r2")

	var ops records.Ops
	ops.AddAll(records.CreateRunOp(r))
	if err := ops.Transact(ctx, s); !records.IsConditionFailed(err) {
		t.Errorf("creating run r1 twice = %v, want a condition failure", err)
	}

	got, err := s.Runs.UpdateRun(ctx, "r1", func(r *run.Run) error { return r.SetStatus(run.Queued, t0) })
	if err != nil || got.Status != run.Queued {
		t.Fatalf("UpdateRun(queued) = %v, %v", got.Status, err)
	}
	_, err = s.Runs.UpdateRun(ctx, "r1", func(r *run.Run) error { return r.SetStatus(run.Finished, t0) })
	if !errors.Is(err, run.ErrIllegalTransition) {
		t.Errorf("queued → finished = %v, want ErrIllegalTransition", err)
	}
	if st, err := s.Runs.RunStatus(ctx, "r1"); err != nil || st != run.Queued {
		t.Errorf("RunStatus(r1) = %q, %v; want queued", st, err)
	}
	if _, err := s.Runs.RunStatus(ctx, "no-such-run"); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("RunStatus of a missing run = %v, want ErrNotFound", err)
	}
	again, _ := s.Runs.Run(ctx, "r1")
	if again.Status != run.Queued || again.Version != got.Version {
		t.Errorf("after illegal move: status %s version %d, want queued version %d", again.Status, again.Version, got.Version)
	}
	if same, err := s.Runs.UpdateRun(ctx, "r1", func(*run.Run) error { return records.ErrNoChange }); err != nil || same.Version != got.Version {
		t.Errorf("ErrNoChange update = version %d, %v; want %d, nil", same.Version, err, got.Version)
	}

	runs, _, err := s.Runs.RunsByWorkspace(ctx, "ws1", "", 10)
	if err != nil || len(runs) != 2 {
		t.Fatalf("RunsByWorkspace = %d runs, %v", len(runs), err)
	}
	byBench, err := s.Runs.RunsByBenchmark(ctx, "ws1", "demo")
	if err != nil || len(byBench) != 2 {
		t.Errorf("RunsByBenchmark = %d runs, %v", len(byBench), err)
	}
	active, err := s.Runs.ActiveRuns(ctx)
	if diff := cmp.Diff([]string{"r1", "r2"}, active); diff != "" || err != nil {
		t.Errorf("ActiveRuns (-want +got) %v:\n%s", err, diff)
	}
	if err := s.Runs.ClearActiveRun(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	active, _ = s.Runs.ActiveRuns(ctx)
	if diff := cmp.Diff([]string{"r2"}, active); diff != "" {
		t.Errorf("ActiveRuns after clear (-want +got):\n%s", diff)
	}
}

func TestConcurrentUpdatesAllApply(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	createRun(t, s, "r1")
	const writers = 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Runs.UpdateRun(ctx, "r1", func(r *run.Run) error {
				r.Tasks = append(r.Tasks, string(rune('A'+i)))
				return nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("UpdateRun: %v", err)
		}
	}
	r, _ := s.Runs.Run(ctx, "r1")
	if len(r.Tasks) != 2+writers {
		t.Errorf("tasks after %d concurrent appends = %d, want %d", writers, len(r.Tasks), 2+writers)
	}
}

func TestSlotsSparseIndexes(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	var slots []run.Slot
	for _, task := range []string{"a", "b", "c"} {
		slots = append(slots, run.Slot{RunID: "r1", ID: run.SlotID(0, task, 1), Task: task, Attempt: 1, Status: run.SlotQueued})
	}
	n, err := s.Runs.CreateSlots(ctx, slots)
	if err != nil || n != 3 {
		t.Fatalf("CreateSlots = %d, %v", n, err)
	}
	if n, _ := s.Runs.CreateSlots(ctx, slots); n != 0 {
		t.Errorf("CreateSlots again created %d, want 0", n)
	}
	if _, err := s.Runs.UpdateSlot(ctx, "r1", "0/b/1", func(sl *run.Slot) error { return sl.SetStatus(run.SlotLaunching) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Runs.UpdateSlot(ctx, "r1", "0/c/1", func(sl *run.Slot) error { return sl.SetStatus(run.SlotDone) }); err != nil {
		t.Fatal(err)
	}
	ids := func(f records.SlotFilter) []string {
		got, _, err := s.Runs.Slots(ctx, "r1", f, "", 100)
		if err != nil {
			t.Fatalf("Slots(%d): %v", f, err)
		}
		var out []string
		for _, sl := range got {
			out = append(out, sl.ID)
		}
		return out
	}
	for _, tt := range []struct {
		f    records.SlotFilter
		want []string
	}{
		{records.AllSlots, []string{"0/a/1", "0/b/1", "0/c/1"}},
		{records.QueuedSlots, []string{"0/a/1"}},
		{records.ActiveSlots, []string{"0/b/1"}},
	} {
		if diff := cmp.Diff(tt.want, ids(tt.f)); diff != "" {
			t.Errorf("Slots(filter %d) (-want +got):\n%s", tt.f, diff)
		}
	}
}

func TestResultTallyAndGates(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	one := 1.0
	res := run.Result{RunID: "r1", SlotID: "0/a/1", Generation: 0, Task: "a", Attempt: 1, Outcome: run.Passed, Reward: &one,
		InputTokens: 7, CostUSD: 0.5, DurationMS: 1200, RecordedAt: t0}
	write := func() error {
		var ops records.Ops
		ops.Add(records.ResultOp(res))
		ops.Append(records.RunTallyOp("r1", res.Deltas()), records.AgentTallyOp("r1", 0, res.Deltas()))
		return ops.Transact(ctx, s)
	}
	if err := write(); err != nil {
		t.Fatalf("first result write: %v", err)
	}
	if err := write(); !records.IsConditionFailed(err) {
		t.Errorf("second result write = %v, want condition failure", err)
	}
	want := run.Tally{Done: 1, Passed: 1, InputTokens: 7, CostMicroUSD: 500000, DurationMS: 1200}
	for name, get := range map[string]func() (run.Tally, error){
		"run":   func() (run.Tally, error) { return s.Runs.RunTally(ctx, "r1") },
		"agent": func() (run.Tally, error) { return s.Runs.AgentTally(ctx, "r1", 0) },
	} {
		got, err := get()
		if diff := cmp.Diff(want, got); diff != "" || err != nil {
			t.Errorf("%s tally %v (-want +got):\n%s", name, err, diff)
		}
	}
	stored, err := s.Runs.Result(ctx, "r1", "0/a/1", 0)
	if diff := cmp.Diff(res, stored); diff != "" || err != nil {
		t.Errorf("Result %v (-want +got):\n%s", err, diff)
	}

	gate := func(delta int64) error {
		return s.Transact(ctx, []store.Op{records.RunGateOp("r1", delta, 2), records.GlobalGateOp(delta, 3)})
	}
	for i := range 2 {
		if err := gate(1); err != nil {
			t.Fatalf("gate acquire %d: %v", i, err)
		}
	}
	if err := gate(1); !records.IsConditionFailed(err) {
		t.Errorf("third acquire over max 2 = %v, want condition failure", err)
	}
	if n, _ := s.Runs.GlobalGate(ctx); n != 2 {
		t.Errorf("global gate after a refused acquire = %d, want 2 (unchanged)", n)
	}
	if err := gate(-1); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Runs.RunGate(ctx, "r1"); n != 1 {
		t.Errorf("run gate = %d, want 1", n)
	}
}

func TestLogsOrderedWithTTL(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	now := time.Now().UTC()
	lines := []records.LogLine{
		{RunID: "r1", At: now, Level: records.LevelInfo, Step: "submitted", Message: "run submitted"},
		{RunID: "r1", At: now.Add(time.Second), Level: records.LevelInfo, Step: "planned", Message: "6 slots"},
		{RunID: "r1", At: now.Add(2 * time.Second), Level: records.LevelWarn, Step: "retry", Message: "again", Slot: "0/a/1"},
	}
	for _, l := range []records.LogLine{lines[2], lines[0], lines[1]} {
		if err := s.Runs.AppendLog(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	got, _, err := s.Runs.Logs(ctx, "r1", "", 10)
	if diff := cmp.Diff(lines, got); diff != "" || err != nil {
		t.Errorf("Logs %v (-want +got):\n%s", err, diff)
	}
	page, err := s.Table().Query(ctx, store.Query{PK: "RUN#r1", Prefix: "LOG#"})
	if err != nil || len(page.Items) != 3 || page.Items[0].ExpiresAt != now.Add(records.LogRetention).Unix() {
		t.Errorf("log items carry no TTL: %+v %v", page.Items, err)
	}
}

func TestManifestRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	timeout := 30.0
	tasks := []benchmark.Task{
		{Name: "b-task", Category: "data", Digest: "sha256:bb", AgentTimeoutSec: &timeout},
		{Name: "a-task", Category: "text", Digest: "sha256:aa"},
	}
	m := benchmark.Manifest{Key: "demo", Name: "demo", Version: "1.0", Tasks: tasks, Digest: benchmark.ComputeDigest(tasks),
		Source: benchmark.Source{Type: benchmark.Managed, Ref: "/x"}, HarnessRequirement: benchmark.HarnessOptional, PassThreshold: 1,
		TaskSets: map[string]benchmark.TaskSet{"parity": {Name: "parity", Tasks: []string{"a-task"}}}}
	files := map[string]records.TaskFiles{"a-task": {Dir: "/x/a-task"}, "b-task": {BundleKey: "bundles/b.tar.gz"}}
	if err := s.Benchmarks.PutManifest(ctx, "ws1", m, files); err != nil {
		t.Fatal(err)
	}
	got, gotFiles, err := s.Benchmarks.Manifest(ctx, "ws1", "demo", "1.0")
	if err != nil {
		t.Fatal(err)
	}
	want := m
	want.Tasks = []benchmark.Task{tasks[1], tasks[0]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Manifest (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(files, gotFiles); diff != "" {
		t.Errorf("task files (-want +got):\n%s", diff)
	}
	task, err := s.Benchmarks.Task(ctx, "ws1", "demo", "1.0", "b-task")
	if err != nil || task.Files.BundleKey != "bundles/b.tar.gz" || *task.AgentTimeoutSec != 30 {
		t.Errorf("Task = %+v, %v", task, err)
	}
	if _, _, err := s.Benchmarks.Manifest(ctx, "ws1", "demo", "2.0"); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("missing version = %v, want ErrNotFound", err)
	}
}

func TestSecretsAndBilling(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	put := func(scope secret.Scope, owner, name string) {
		if err := s.Workspaces.PutSecretRecord(ctx, records.SecretRecord{Workspace: "ws1", Scope: scope, Owner: owner, Name: name, SetBy: "u1", SetAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	put(secret.Workspace, "", "SHARED")
	put(secret.Personal, "u1", "SHARED")
	put(secret.Personal, "u2", "MINE")
	tests := []struct {
		user, name string
		want       secret.Ref
		wantErr    error
	}{
		{"u1", "SHARED", secret.Ref{Workspace: "ws1", Scope: secret.Personal, Owner: "u1", Name: "SHARED"}, nil},
		{"u2", "SHARED", secret.Ref{Workspace: "ws1", Scope: secret.Workspace, Name: "SHARED"}, nil},
		{"u1", "MINE", secret.Ref{}, records.ErrNotFound},
		{"u2", "MINE", secret.Ref{Workspace: "ws1", Scope: secret.Personal, Owner: "u2", Name: "MINE"}, nil},
	}
	for _, tt := range tests {
		got, err := s.Workspaces.ResolveSecret(ctx, "ws1", tt.user, tt.name)
		if !errors.Is(err, tt.wantErr) || got != tt.want {
			t.Errorf("ResolveSecret(%q, %q) = %+v, %v; want %+v, %v", tt.user, tt.name, got, err, tt.want, tt.wantErr)
		}
	}
	list, err := s.Workspaces.SecretRecords(ctx, "ws1", "u2")
	if err != nil || len(list) != 2 {
		t.Errorf("SecretRecords(u2) = %d records, %v; want 2", len(list), err)
	}

	b, err := s.Workspaces.Billing(ctx, "ws1")
	if err != nil || !errors.Is(b.Check(), records.ErrBillingRequired) {
		t.Errorf("no billing record: Check() = %v (%v), want ErrBillingRequired", b.Check(), err)
	}
	for status, ok := range map[records.BillingStatus]bool{records.BillingActive: true, records.BillingTrialing: true, records.BillingPastDue: false, records.BillingCanceled: false} {
		if err := s.Workspaces.PutBilling(ctx, "ws1", records.Billing{Status: status, UpdatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		b, _ := s.Workspaces.Billing(ctx, "ws1")
		if (b.Check() == nil) != ok {
			t.Errorf("billing %s: Check() = %v, want ok=%v", status, b.Check(), ok)
		}
	}
}
