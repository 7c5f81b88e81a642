package pipeline_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// shortSpace is a SpaceChecker whose data dir is below its floor while short
// is set.
type shortSpace struct{ short atomic.Bool }

func (s *shortSpace) Check() error {
	if s.short.Load() {
		return &diskspace.Error{Dir: "/data", FreeBytes: 1 << 20, FloorBytes: 64 << 20}
	}
	return nil
}

// withSpace rebuilds e's service on the same adapters with a space checker
// and options.
func (e *env) withSpace(space pipeline.SpaceChecker, driver sandbox.Driver, opts pipeline.Options) {
	e.t.Helper()
	opts.RetryBackoff, opts.GateDelay = 10*time.Millisecond, 20*time.Millisecond
	svc, err := pipeline.New(pipeline.Ports{Table: e.db.Table(), Plan: e.queues["plan"], Slots: e.queues["slots"],
		Completions: e.queues["completions"], Results: e.queues["results"], Blobs: e.blobs, Secrets: e.secrets,
		Sandboxes: driver, Space: space}, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.svc, e.driver = svc, driver
}

func TestSlotsWaitForSpaceWithoutLaunchingOrSpendingRetries(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	launches := e.recordSpecs()
	space := &shortSpace{}
	space.short.Store(true)
	e.withSpace(space, e.driver, pipeline.Options{MaxGateDelay: 50 * time.Millisecond})
	r := e.submit(oneOracle) // max_retries = 0
	waited := func() bool {
		slots, _, err := e.recs.Runs.Slots(e.ctx, r.ID, records.AllSlots, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, sl := range slots {
			if sl.Status != run.SlotQueued || sl.Deferrals < 3 {
				return false
			}
		}
		return len(slots) == r.TotalSlots()
	}
	deadline := time.Now().Add(time.Minute)
	idle := time.NewTicker(10 * time.Millisecond)
	defer idle.Stop()
	for !waited() {
		if time.Now().After(deadline) {
			t.Fatal("slots were not put off three times each while space was short")
		}
		if !e.pumpOnce() {
			<-idle.C // the put-off slot messages are delayed
		}
	}
	if n := len(launches()); n != 0 {
		t.Fatalf("%d sandboxes launched below the floor, want 0", n)
	}
	space.short.Store(false)
	r = e.pumpUntil(r.ID, time.Minute)
	if r.Status != run.Finished {
		t.Fatalf("run ended %s (%s), want finished", r.Status, r.Reason)
	}
	for _, res := range e.results(r.ID) {
		if !res.Final() || res.Generation != 0 || res.Outcome != run.Passed {
			t.Errorf("slot %s: generation %d %s retried=%v, want one passing generation 0", res.SlotID, res.Generation, res.Outcome, res.Retried)
		}
	}
	// The test agent reports its usage itself (no model gateway): self-reported.
	if want, got := (run.Tally{Done: 3, Passed: 3, UsageSelfReported: 3}), e.tally(r.ID); cmp.Diff(want, got, cmpCounts) != "" {
		t.Errorf("tally (-want +got):\n%s", cmp.Diff(want, got, cmpCounts))
	}
}

// fullLauncher refuses the first fails launches of each slot as a driver on
// a full data dir does, then launches through next.
type fullLauncher struct {
	sandbox.Driver
	fails int
	mu    sync.Mutex
	seen  map[string]int
}

func (d *fullLauncher) Launch(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	d.mu.Lock()
	n := d.seen[spec.SlotID]
	d.seen[spec.SlotID]++
	d.mu.Unlock()
	if n < d.fails {
		err := fmt.Errorf("create sandbox dir: %w", &diskspace.Error{Dir: "/data", Err: syscall.ENOSPC})
		return sandbox.Handle{}, err
	}
	return d.Driver.Launch(ctx, spec)
}

func TestAttemptsTheFullDiskStoppedRunAgainWithoutSpendingRetries(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	// More failures than max_retries (0) and the platform's own retry limit
	// together: had either paid for them, the slots would end errored.
	fails := pipeline.PlatformRetryLimit + 2
	e.withSpace(&shortSpace{}, &fullLauncher{Driver: e.driver, fails: fails, seen: map[string]int{}}, pipeline.Options{})
	r := e.submit(oneOracle)
	r = e.pumpUntil(r.ID, time.Minute)
	if r.Status != run.Finished {
		t.Fatalf("run ended %s (%s), want finished", r.Status, r.Reason)
	}
	type view struct {
		Generation          int
		Outcome             run.Outcome
		Retried, OutOfSpace bool
		PlatformRetry       bool
	}
	var want []view
	for g := range fails {
		want = append(want, view{g, run.Errored, true, true, true})
	}
	want = append(want, view{fails, run.Passed, false, false, false})
	bySlot := map[string][]view{}
	for _, res := range e.results(r.ID) {
		bySlot[res.SlotID] = append(bySlot[res.SlotID], view{res.Generation, res.Outcome, res.Retried, res.OutOfSpace, res.PlatformRetry})
	}
	if len(bySlot) != r.TotalSlots() {
		t.Fatalf("results for %d slots, want %d", len(bySlot), r.TotalSlots())
	}
	for id, got := range bySlot {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("slot %s results (-want +got):\n%s", id, diff)
		}
		slot, err := e.recs.Runs.Slot(e.ctx, r.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if slot.SpaceRetries != fails || slot.PlatformRetries != 0 || slot.InfraRetries() != 0 {
			t.Errorf("slot %s: space retries %d, platform retries %d, infra retries %d; want %d, 0, 0",
				id, slot.SpaceRetries, slot.PlatformRetries, slot.InfraRetries(), fails)
		}
	}
	if steps := e.logSteps(r.ID); steps["retry"] != fails*r.TotalSlots() {
		t.Errorf("run log has %d retry lines, want %d", steps["retry"], fails*r.TotalSlots())
	}
}
