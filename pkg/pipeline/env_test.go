package pipeline_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/fsblob"
	"github.com/gauntlet-bench/gauntlet/pkg/localsandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/localsecret"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

// runnerBin is the sandbox-runner built once for the package's tests.
var runnerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gauntlet-pipeline-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runnerBin = filepath.Join(dir, "sandbox-runner")
	if out, err := exec.Command("go", "build", "-o", runnerBin, "../../cmd/sandbox-runner").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build sandbox-runner: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

const (
	testWS   = "ws1"
	testUser = "u1"
)

// env is a pipeline on real local adapters in a temp dir: SQLite table and
// queues, file blobs, and either the bubblewrap sandbox driver running the
// real sandbox-runner or the instant driver (benchmarks only).
type env struct {
	t       testing.TB
	ctx     context.Context
	db      *sqlite.DB
	svc     *pipeline.Service
	recs    *records.Store
	blobs   *fsblob.Store
	secrets *localsecret.Store
	driver  sandbox.Driver
	queues  map[string]*sqlite.Queue
	cp      string // change-stream checkpoint of pump
	dataDir string
	// chaos, when set, makes pumpOnce deliver every message and every change
	// record twice, in a shuffled order.
	chaos *rand.Rand
	// workers > 1 makes pumpOnce handle up to that many messages at once.
	workers int
}

type envOptions struct {
	isolation string // "" = bubblewrap on the host rootfs (the fixture tasks have no images)
	agentsDir string
	instant   bool
	opts      pipeline.Options
}

var queueNames = []string{"plan", "slots", "completions", "results"}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	dir := t.TempDir()
	db, err := sqlite.Open(filepath.Join(dir, "gauntlet.db"))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	e := &env{t: t, ctx: context.Background(), db: db, queues: map[string]*sqlite.Queue{}, dataDir: dir}
	for _, name := range queueNames {
		if e.queues[name], err = db.Queue(name, sqlite.QueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if e.blobs, err = fsblob.New(filepath.Join(dir, "blobs")); err != nil {
		t.Fatal(err)
	}
	if e.secrets, err = localsecret.Open(filepath.Join(dir, "secrets.json")); err != nil {
		t.Fatal(err)
	}
	if o.instant {
		e.driver = &pipelinetest.InstantDriver{Blobs: e.blobs, Completions: e.queues["completions"]}
	} else {
		if o.isolation == "" {
			o.isolation = "bwrap-host"
		}
		d, err := localsandbox.New(localsandbox.Config{DataDir: dir, RunnerPath: runnerBin, Isolation: o.isolation,
			AgentsDir: o.agentsDir, Blobs: e.blobs, Completions: e.queues["completions"], StopGrace: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			t.Fatalf("localsandbox.New: %v", err)
		}
		t.Cleanup(func() { _ = d.Close() })
		e.driver = d
	}
	t.Cleanup(func() { _ = db.Close() })
	if o.opts.RetryBackoff == 0 {
		o.opts.RetryBackoff = 10 * time.Millisecond
	}
	if o.opts.GateDelay == 0 {
		o.opts.GateDelay = 20 * time.Millisecond
	}
	e.svc, err = pipeline.New(pipeline.Ports{Table: db.Table(), Plan: e.queues["plan"], Slots: e.queues["slots"],
		Completions: e.queues["completions"], Results: e.queues["results"], Blobs: e.blobs, Secrets: e.secrets,
		Sandboxes: e.driver}, o.opts)
	if err != nil {
		t.Fatal(err)
	}
	e.recs = e.svc.Records()
	e.importDemo()
	if err := e.recs.Workspaces.PutBilling(e.ctx, testWS, records.Billing{Status: records.BillingActive, Plan: "local"}); err != nil {
		t.Fatal(err)
	}
	return e
}

// importDemo loads examples/demo-bench as the managed benchmark demo-bench.
func (e *env) importDemo() {
	path := "../../examples/catalog.toml"
	data, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	cat, err := benchmark.ParseCatalog(data, path)
	if err != nil {
		e.t.Fatal(err)
	}
	entry, ok := cat.Lookup("demo-bench")
	if !ok {
		e.t.Fatal("catalog has no demo-bench")
	}
	if _, err := pipelinetest.ImportCatalogEntry(e.ctx, e.recs, pipeline.PlatformWorkspace, entry, time.Now()); err != nil {
		e.t.Fatalf("import demo-bench: %v", err)
	}
}

func (e *env) submit(cfgTOML string) run.Run {
	e.t.Helper()
	cfg, err := runconfig.Parse([]byte(cfgTOML))
	if err != nil {
		e.t.Fatalf("parse config: %v", err)
	}
	res, err := e.svc.Submit(e.ctx, pipeline.SubmitRequest{Workspace: testWS, User: testUser, Config: cfg})
	if err != nil {
		e.t.Fatalf("Submit: %v", err)
	}
	return res.Run
}

func (e *env) handler(name string) func(context.Context, []byte) error {
	switch name {
	case "plan":
		return e.svc.HandlePlan
	case "slots":
		return e.svc.HandleSlot
	case "completions":
		return e.svc.HandleCompletion
	}
	return e.svc.HandleResult
}

// pumpOnce delivers every visible message of every queue once and feeds new
// change records to Recompute; it reports whether anything happened.
func (e *env) pumpOnce() bool {
	e.t.Helper()
	if e.chaos != nil {
		return e.chaosPumpOnce()
	}
	progressed := false
	for _, name := range queueNames {
		q := e.queues[name]
		var msgs []queue.Message
		for len(msgs) < 10*max(1, e.workers) {
			got, err := q.Receive(e.ctx, queue.MaxBatch, time.Minute, 0)
			if err != nil {
				e.t.Fatalf("receive %s: %v", name, err)
			}
			if len(got) == 0 {
				break
			}
			msgs = append(msgs, got...)
		}
		progressed = progressed || len(msgs) > 0
		e.handleAll(name, q, msgs)
	}
	return e.recompute() || progressed
}

// handleAll handles and deletes msgs, on up to e.workers goroutines.
func (e *env) handleAll(name string, q *sqlite.Queue, msgs []queue.Message) {
	e.t.Helper()
	errs := make(chan error, len(msgs))
	sem := make(chan struct{}, max(1, e.workers))
	var wg sync.WaitGroup
	for _, m := range msgs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := e.handler(name)(e.ctx, m.Body); err != nil {
				errs <- fmt.Errorf("handle %s message %s: %w", name, m.Body, err)
				return
			}
			if err := q.Delete(e.ctx, m.Receipt); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatal(err)
	}
}

type delivery struct {
	queue string
	msg   queue.Message
}

// chaosPumpOnce receives every visible message of every queue, delivers each
// twice in a shuffled order across queues, then acknowledges them; change
// records likewise go to Recompute twice, shuffled.
func (e *env) chaosPumpOnce() bool {
	e.t.Helper()
	var got []delivery
	for _, name := range queueNames {
		for {
			msgs, err := e.queues[name].Receive(e.ctx, queue.MaxBatch, time.Minute, 0)
			if err != nil {
				e.t.Fatal(err)
			}
			if len(msgs) == 0 {
				break
			}
			for _, m := range msgs {
				got = append(got, delivery{name, m})
			}
		}
	}
	twice := append(slices.Clone(got), got...)
	e.chaos.Shuffle(len(twice), func(i, j int) { twice[i], twice[j] = twice[j], twice[i] })
	for _, d := range twice {
		if err := e.handler(d.queue)(e.ctx, d.msg.Body); err != nil {
			e.t.Fatalf("handle %s message %s: %v", d.queue, d.msg.Body, err)
		}
	}
	for _, d := range got {
		if err := e.queues[d.queue].Delete(e.ctx, d.msg.Receipt); err != nil {
			e.t.Fatal(err)
		}
	}
	changes, next, err := e.db.Stream().Read(e.ctx, e.cp, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(changes) > 0 {
		twice := append(slices.Clone(changes), changes...)
		e.chaos.Shuffle(len(twice), func(i, j int) { twice[i], twice[j] = twice[j], twice[i] })
		for _, part := range [][]store.Change{twice[:len(twice)/2], twice[len(twice)/2:]} {
			if err := e.svc.Recompute(e.ctx, part); err != nil {
				e.t.Fatalf("Recompute: %v", err)
			}
		}
		e.cp = next
	}
	return len(got) > 0 || len(changes) > 0
}

func (e *env) recompute() bool {
	changes, next, err := e.db.Stream().Read(e.ctx, e.cp, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(changes) == 0 {
		return false
	}
	if err := e.svc.Recompute(e.ctx, changes); err != nil {
		e.t.Fatalf("Recompute: %v", err)
	}
	e.cp = next
	return true
}

// pumpUntil pumps until the run reaches a terminal status (or the timeout).
func (e *env) pumpUntil(runID string, timeout time.Duration) run.Run {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	lastWatch := time.Now()
	idle := time.NewTicker(20 * time.Millisecond)
	defer idle.Stop()
	for time.Now().Before(deadline) {
		if !e.pumpOnce() {
			<-idle.C
		}
		if time.Since(lastWatch) > 500*time.Millisecond {
			if err := e.svc.Watch(e.ctx); err != nil {
				e.t.Fatalf("Watch: %v", err)
			}
			lastWatch = time.Now()
		}
		r, err := e.recs.Runs.Run(e.ctx, runID)
		if err != nil {
			e.t.Fatal(err)
		}
		if r.Status.Terminal() {
			for e.pumpOnce() {
			}
			return r
		}
	}
	r, _ := e.recs.Runs.Run(e.ctx, runID)
	slots, _, _ := e.recs.Runs.Slots(e.ctx, runID, records.AllSlots, "", 1000)
	for _, sl := range slots {
		if sl.Status != run.SlotDone {
			e.t.Logf("slot %s: %s gen %d launch %s sandbox %s stop %q", sl.ID, sl.Status, sl.Generation, sl.LaunchID, sl.SandboxID, sl.StopReason)
			objs, _ := e.blobs.List(e.ctx, pipeline.OutputPrefix(runID, sl.ID, sl.Generation))
			e.t.Logf("   %d blobs", len(objs))
		}
	}
	live, _ := e.driver.List(e.ctx, runID)
	e.t.Logf("driver lists %d sandboxes; tally %+v", len(live), e.tally(runID))
	e.t.Fatalf("run %s still %s after %v", runID, r.Status, timeout)
	return r
}

func (e *env) results(runID string) []run.Result {
	e.t.Helper()
	res, err := e.recs.Runs.AllResults(e.ctx, runID)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) tally(runID string) run.Tally {
	e.t.Helper()
	t, err := e.recs.Runs.RunTally(e.ctx, runID)
	if err != nil {
		e.t.Fatal(err)
	}
	return t
}

func (e *env) logSteps(runID string) map[string]int {
	e.t.Helper()
	steps := map[string]int{}
	cursor := ""
	for {
		lines, next, err := e.recs.Runs.Logs(e.ctx, runID, cursor, 1000)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, l := range lines {
			steps[l.Step]++
		}
		if next == "" {
			return steps
		}
		cursor = next
	}
}

// recordSpecs makes the instant driver record the spec of every launch
// (each passes, reward 1) and returns what it has recorded so far.
func (e *env) recordSpecs() func() []sandbox.Spec {
	var mu sync.Mutex
	var specs []sandbox.Spec
	e.driver.(*pipelinetest.InstantDriver).Reward = func(spec sandbox.Spec) float64 {
		mu.Lock()
		defer mu.Unlock()
		specs = append(specs, spec)
		return 1
	}
	return func() []sandbox.Spec {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(specs)
	}
}
