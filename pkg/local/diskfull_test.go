package local_test

import (
	"context"
	"github.com/gauntlet-bench/gauntlet/internal/syncbuf"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/diskspace/diskspacetest"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
)

// TestDiskFullMidRunLosesNoSlot runs the platform on a real 160 MB tmpfs
// with a 16 MB floor and, while sandboxes run, fills it to the last byte
// until the platform has met the full disk; then frees 8 MB (below the
// floor) until the dispatcher has held a launch back for want of space;
// then frees the rest. Every slot must end exactly once with its true
// outcome (the oracle passes, the command agent fails), with no retry
// charged to max_retries (0 here) or to the platform's retry limit, and
// nothing dead-lettered.
func TestDiskFullMidRunLosesNoSlot(t *testing.T) {
	dir := diskspacetest.Mount(t, 160)
	r := submit(t, dir, crashConfig)
	ctx := context.Background()
	logs := &syncbuf.Buffer{}
	opts := testOptions(dir, runnerBin)
	opts.MinFreeMB = 16
	opts.SpaceInterval = 100 * time.Millisecond
	// The platform's grace before a sandbox missing from the driver's list
	// is declared lost is minutes; the tests' one second is shorter than
	// the stall a full disk puts on the completion path (the completion
	// waits for space like every other write), which is what this test
	// provokes: a minute keeps the grace longer than the stall, as it is.
	opts.Pipeline.LostGrace = time.Minute
	opts.Logger = slog.New(slog.NewMultiHandler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}),
		slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	p, err := local.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	recs := p.Records()
	waitFor(t, 2*time.Minute, "a few results and a running sandbox", func() bool {
		tally, _ := recs.Runs.RunTally(ctx, r.ID)
		active, _, _ := recs.Runs.Slots(ctx, r.ID, records.ActiveSlots, "", 10)
		return tally.Done >= 3 && len(active) > 0
	})
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	free := diskspacetest.Fill(t, dir)
	before, _ := recs.Runs.RunTally(ctx, r.ID)
	t.Logf("filled the data dir with %d of %d slots done", before.Done, r.TotalSlots())
	// Full until the sandboxes running now have ended under it: either a
	// write failed for want of space, or every active slot was settled
	// while the disk was full (SQLite reused its write-ahead log's pages).
	waitFor(t, 2*time.Minute, "the platform to meet the full disk", func() bool {
		active, _, _ := recs.Runs.Slots(ctx, r.ID, records.ActiveSlots, "", 10)
		return strings.Contains(logs.String(), "below its free-space floor") &&
			(strings.Contains(logs.String(), "the data dir is full") || len(active) == 0)
	})
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	// 8 MB free, below the 16 MB floor: launches are held back, by the
	// dispatcher (the slot's message is put off) or, when the slots poller
	// met the full disk, by the poller waiting for the floor.
	seen := len(logs.String())
	waitFor(t, 2*time.Minute, "a launch held back below the floor", func() bool {
		l := logs.String()
		return strings.Contains(l[seen:], "slot waits for storage space") || strings.Contains(l, "queue=slots err=")
	})
	if strings.Contains(logs.String()[seen:], "sandbox launched") {
		t.Error("a sandbox was launched below the floor")
	}
	free()
	waitFor(t, 3*time.Minute, "the run to end", func() bool {
		got, _ := recs.Runs.Run(ctx, r.ID)
		return got.Status.Terminal()
	})
	if got, _ := recs.Runs.Run(ctx, r.ID); got.Status != run.Finished {
		t.Fatalf("run ended %s (%s), want finished", got.Status, got.Reason)
	}
	results, err := recs.Runs.AllResults(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	finals, spaceRetries := map[string]int{}, 0
	for _, res := range results {
		switch {
		case res.Final():
			finals[res.SlotID]++
			if res.Outcome == run.Errored {
				t.Errorf("slot %s generation %d ended errored (%s: %s), want its true outcome", res.SlotID, res.Generation, res.ErrorClass, res.Message)
			}
		case res.OutOfSpace:
			spaceRetries++
		default:
			t.Errorf("slot %s generation %d was retried as something other than a wait for space (platform retry %v): %s",
				res.SlotID, res.Generation, res.PlatformRetry, res.Message)
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
	slots, _, err := recs.Runs.Slots(ctx, r.ID, records.AllSlots, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, sl := range slots {
		if sl.InfraRetries() != 0 || sl.PlatformRetries != 0 {
			t.Errorf("slot %s spent retries: %d of max_retries, %d platform retries", sl.ID, sl.InfraRetries(), sl.PlatformRetries)
		}
	}
	tally, _ := recs.Runs.RunTally(ctx, r.ID)
	if tally.Done != int64(r.TotalSlots()) || tally.Passed != 9 || tally.Failed != int64(r.TotalSlots())-9 || tally.Errored != 0 {
		t.Errorf("tally = %+v, want %d done: the 9 oracle slots passed, the others failed, none errored", tally, r.TotalSlots())
	}
	for _, name := range []string{local.PlanQueue, local.SlotsQueue, local.CompletionsQueue, local.ResultsQueue} {
		dlq, err := p.DB().Queue(name+"-dlq", sqlite.QueueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if dead, _ := dlq.Receive(ctx, 10, time.Minute, 0); len(dead) != 0 {
			t.Errorf("%d messages dead-lettered from %s", len(dead), name)
		}
	}
	t.Logf("%d attempts re-run after the disk filled under them", spaceRetries)
}
