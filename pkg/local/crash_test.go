package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/internal/leftovercheck"
	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
	"github.com/gauntlet-bench/gauntlet/pkg/leftovers"
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
//
// It runs on the image bench: every attempt in an image sandbox, with a
// loop-mounted filesystem and an overlay, as `gauntlet local` runs
// Harbor tasks.
var crashSuiteConfig = strings.NewReplacer("attempts_per_task = 3", "attempts_per_task = 5",
	`benchmark = "demo-bench"`, `benchmark = "image-bench"`).Replace(crashConfig)

// TestCrashSuite kills the platform (SIGKILL) at each kill point of one
// run in turn, with the platform's production watchdog timing (minutes of
// grace), restarts it, and checks that every slot in flight at the kill is
// launched again within seconds (the restart reconcile, not the watchdog),
// and at the end that every slot has exactly one final result and none
// errored. After each restart every process the crash left (a bwrap that
// outlived its runner) has ended, and once the run is over nothing is left
// of any sandbox: no process, no loop device, no sandbox dir. Recovery
// times and leftovers are logged (docs/RELIABILITY.md quotes them).
func TestCrashSuite(t *testing.T) {
	dir := t.TempDir()
	sandboxes := filepath.Join(dir, "sandboxes")
	// Should the test fail midway, nothing of it stays on the machine.
	t.Cleanup(func() { _, _ = leftovers.Reclaim(context.Background(), leftovers.Options{Dir: sandboxes}) })
	catalog, rootfs := imageBenchCatalog(t), testrootfs.Dir(t)
	r := submitWith(t, withImageSandboxes(testOptions(dir, runnerBin), catalog, rootfs), crashSuiteConfig)
	env := []string{prodTimingEnv + "=1", helperCatalogEnv + "=" + catalog, helperRootfsEnv + "=" + rootfs}
	db, err := sqlite.Open(filepath.Join(dir, "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recs := records.New(db.Table())
	ctx := context.Background()
	state := func() (run.Run, run.Tally, []run.Slot) {
		got, _ := recs.Runs.Run(ctx, r.ID)
		tally, _ := recs.Runs.RunTally(ctx, r.ID)
		active, _, _ := recs.Runs.Slots(ctx, r.ID, records.ActiveSlots, "", 500)
		return got, tally, active
	}
	var worst time.Duration
	var leftByCrashes leftovercheck.Found
	proc := startHelper(t, dir, env...)
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
		// The runners die with the platform (parent-death signal), their
		// children with them; what outlives them is what the crash left.
		var left leftovercheck.Found
		waitFor(t, 30*time.Second, "the crashed platform's sandboxes to settle", func() bool {
			left = leftovercheck.Find(t, sandboxes)
			return len(left.Without("--spec "+sandboxes).Processes) == len(left.Processes) && !anyDying(left.Processes)
		})
		for _, p := range left.Processes {
			t.Logf("left by the crash at %s: %.300s", kp.name, p)
		}
		leftByCrashes.Processes = append(leftByCrashes.Processes, left.Processes...)
		leftByCrashes.LoopDevices = append(leftByCrashes.LoopDevices, left.LoopDevices...)
		leftByCrashes.Dirs = append(leftByCrashes.Dirs, left.Dirs...)
		restart := time.Now()
		proc = startHelper(t, dir, env...)
		waitFor(t, 2*time.Minute, "the slots in flight at the kill to launch again", func() bool {
			for _, old := range inFlight {
				sl, err := recs.Runs.Slot(ctx, r.ID, old.ID)
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
		waitFor(t, time.Minute, "the processes the crash left to end", func() bool {
			return len(left.StillIn(leftovercheck.Find(t, sandboxes)).Processes) == 0
		})
		t.Logf("kill point %-11s: %2d/%d slots done, %d in flight at the kill; all launched again %.2f s after the restart; the crash left %d processes, %d loop devices, %d sandbox dirs",
			kp.name, tally.Done, r.TotalSlots(), len(inFlight), took.Seconds(), len(left.Processes), len(left.LoopDevices), len(left.Dirs))
	}
	restart := time.Now()
	waitFor(t, 3*time.Minute, "the run to end", func() bool {
		got, _ := recs.Runs.Run(ctx, r.ID)
		return got.Status.Terminal()
	})
	t.Logf("after the last restart the run ended in %.2f s; worst relaunch after a restart %.2f s (%d kills)",
		time.Since(restart).Seconds(), worst.Seconds(), len(killPoints))
	checkEverySlotOnce(t, recs, r)
	checkNothingLeft(t, sandboxes)
	t.Logf("the %d crashes left %d processes, %d loop devices and %d sandbox dirs; after recovery 0 are left",
		len(killPoints), len(leftByCrashes.Processes), len(leftByCrashes.LoopDevices), len(leftByCrashes.Dirs))
}

// checkNothingLeft asserts that, the run being over, nothing is left of
// any sandbox in sandboxes (a sandbox that just ended may take a moment to
// go): anything still there is a leftover of a crash that recovery missed.
func checkNothingLeft(t *testing.T, sandboxes string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for left := leftovercheck.Find(t, sandboxes); !left.Empty(); left = leftovercheck.Find(t, sandboxes) {
		if time.Now().After(deadline) {
			t.Fatalf("after recovery and the run's end: %s; want nothing left", left)
		}
		<-tick.C
	}
}

// anyDying reports whether a process of lines (leftovercheck lines) has a
// SIGKILL pending: it is on its way out, not left over.
func anyDying(lines []string) bool {
	for _, l := range lines {
		pid, _, _ := strings.Cut(strings.TrimPrefix(l, "pid "), " ")
		status, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			continue // gone
		}
		for _, line := range strings.Split(string(status), "\n") {
			key, mask, ok := strings.Cut(line, ":")
			if !ok || (key != "SigPnd" && key != "ShdPnd") {
				continue
			}
			bits, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			if err == nil && bits&(1<<(syscall.SIGKILL-1)) != 0 {
				return true
			}
		}
	}
	return false
}

// checkEverySlotOnce asserts the run finished with exactly one final result
// per slot and no errored attempt (crashes are the platform's fault, so
// they never use max_retries).
func checkEverySlotOnce(t *testing.T, recs *records.Store, r run.Run) {
	t.Helper()
	ctx := context.Background()
	got, _ := recs.Runs.Run(ctx, r.ID)
	if got.Status != run.Finished {
		t.Fatalf("run ended %s (%s), want finished", got.Status, got.Reason)
	}
	results, err := recs.Runs.AllResults(ctx, r.ID)
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
