package local_test

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
)

// killPoint is a state of a run at which the crash suite SIGKILLs the
// platform.
type killPoint struct {
	name string
	// reached reports whether the run got there, given the results done
	// when this life of the platform started.
	reached func(r run.Run, tally run.Tally, active []run.Slot, doneAtStart int64) bool
}

var killPoints = []killPoint{
	{"planning", func(r run.Run, _ run.Tally, _ []run.Slot, _ int64) bool {
		return r.Status != run.Pending || r.SentBatches > 0
	}},
	{"dispatch", func(_ run.Run, _ run.Tally, active []run.Slot, _ int64) bool { return len(active) > 0 }},
	{"mid-attempt", func(_ run.Run, _ run.Tally, active []run.Slot, _ int64) bool {
		for _, sl := range active {
			if sl.Status == run.SlotRunning {
				return true
			}
		}
		return false
	}},
	{"ingest", func(_ run.Run, tally run.Tally, active []run.Slot, doneAtStart int64) bool {
		return tally.Done > doneAtStart && len(active) > 0
	}},
	{"recompute", func(_ run.Run, tally run.Tally, active []run.Slot, doneAtStart int64) bool {
		return tally.Done >= doneAtStart+2 && len(active) > 0
	}},
}

// crashSuiteConfig is crashConfig with 30 slots: five kill points, each
// after more progress than the one before, must all land before the run
// ends, also when the platform runs attempts faster than the test polls
// (18 slots once ran out before the recompute point on a loaded machine).
var crashSuiteConfig = strings.Replace(crashConfig, "attempts_per_task = 3", "attempts_per_task = 5", 1)

// TestCrashSuite kills the platform (SIGKILL) at each kill point of one
// run in turn, with the platform's production watchdog timing (minutes of
// grace), restarts it, and checks that every slot in flight at the kill is
// launched again within seconds (the restart reconcile, not the watchdog),
// and at the end that every slot has exactly one final result and none
// errored. Recovery times are logged (docs/RELIABILITY.md quotes them).
func TestCrashSuite(t *testing.T) {
	dir := t.TempDir()
	r := submit(t, dir, crashSuiteConfig)
	db, err := sqlite.Open(filepath.Join(dir, "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recs := records.New(db.Table())
	ctx := context.Background()
	state := func() (run.Run, run.Tally, []run.Slot) {
		got, _ := recs.Run(ctx, r.ID)
		tally, _ := recs.RunTally(ctx, r.ID)
		active, _, _ := recs.Slots(ctx, r.ID, records.ActiveSlots, "", 500)
		return got, tally, active
	}
	var worst time.Duration
	proc := startHelper(t, dir, prodTimingEnv+"=1")
	defer func() {
		_ = proc.Process.Signal(syscall.SIGKILL)
		_ = proc.Wait()
	}()
	_, tally, _ := state()
	doneAtStart := tally.Done
	for i, kp := range killPoints {
		// After a restart the next kill waits for one more result, so
		// each kill lands on new work, not on the slots just re-launched.
		progress := int64(min(i, 1))
		reached := true
		waitFor(t, 2*time.Minute, "kill point "+kp.name, func() bool {
			got, tally, active := state()
			if got.Status.Terminal() {
				reached = false
				return true
			}
			return tally.Done >= doneAtStart+progress && kp.reached(got, tally, active, doneAtStart)
		})
		if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = proc.Wait()
		if !reached {
			t.Fatalf("the run ended before kill point %s", kp.name)
		}
		_, tally, inFlight := state()
		doneAtStart = tally.Done
		restart := time.Now()
		proc = startHelper(t, dir, prodTimingEnv+"=1")
		waitFor(t, 2*time.Minute, "the slots in flight at the kill to launch again", func() bool {
			for _, old := range inFlight {
				sl, err := recs.Slot(ctx, r.ID, old.ID)
				if err != nil {
					return false
				}
				relaunched := sl.Generation > old.Generation && sl.Status != run.SlotQueued
				restarted := sl.Status != run.SlotQueued && sl.LaunchedAt.After(restart)
				if !relaunched && !restarted && sl.Status != run.SlotDone {
					return false
				}
			}
			return true
		})
		took := time.Since(restart)
		worst = max(worst, took)
		t.Logf("kill point %-11s: %2d/%d slots done, %d in flight at the kill; all launched again %.2f s after the restart",
			kp.name, tally.Done, r.TotalSlots(), len(inFlight), took.Seconds())
	}
	restart := time.Now()
	waitFor(t, 3*time.Minute, "the run to end", func() bool {
		got, _ := recs.Run(ctx, r.ID)
		return got.Status.Terminal()
	})
	t.Logf("after the last restart the run ended in %.2f s; worst relaunch after a restart %.2f s (%d kills)",
		time.Since(restart).Seconds(), worst.Seconds(), len(killPoints))
	checkEverySlotOnce(t, recs, r)
}

// checkEverySlotOnce asserts the run finished with exactly one final result
// per slot and no errored attempt (crashes are the platform's fault, so
// they never use max_retries).
func checkEverySlotOnce(t *testing.T, recs *records.Store, r run.Run) {
	t.Helper()
	ctx := context.Background()
	got, _ := recs.Run(ctx, r.ID)
	if got.Status != run.Finished {
		t.Fatalf("run ended %s (%s), want finished", got.Status, got.Reason)
	}
	results, err := recs.AllResults(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	finals := map[string]int{}
	for _, res := range results {
		if res.Final() {
			finals[res.SlotID]++
			if res.Outcome == run.Errored {
				t.Errorf("slot %s generation %d ended errored (%s: %s)", res.SlotID, res.Generation, res.ErrorClass, res.Message)
			}
		}
		if res.Retried && !res.PlatformRetry {
			t.Errorf("slot %s generation %d was retried against max_retries = 0: %s", res.SlotID, res.Generation, res.Message)
		}
	}
	if len(finals) != r.TotalSlots() {
		t.Errorf("%d slots have a final result, want %d", len(finals), r.TotalSlots())
	}
	for slot, n := range finals {
		if n != 1 {
			t.Errorf("slot %s has %d final results, want exactly 1", slot, n)
		}
	}
}
