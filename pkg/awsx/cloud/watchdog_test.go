package cloud_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/infra/config"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud/cloudtest"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// cloudLostGrace is the LostGrace the cloud's pipeline runs with:
// cloud.Pipeline sets none, so pipeline's default. docs/RELIABILITY.md
// quotes the worst case this test measures from it.
const cloudLostGrace = 2 * time.Minute

// testClock is the pipeline's clock, moved by the test.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// scheduleRate reads an EventBridge Scheduler rate expression.
func scheduleRate(t *testing.T, expr string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours)\)$`).FindStringSubmatch(expr)
	if m == nil {
		t.Fatalf("watchdog schedule %q is not a rate(N minutes|hours) expression", expr)
	}
	n, _ := strconv.Atoi(m[1])
	if m[2][0] == 'h' {
		return time.Duration(n) * time.Hour
	}
	return time.Duration(n) * time.Minute
}

// TestLostFargateTaskRequeuedByTheWatchdog measures the cloud's recovery of
// a Fargate task lost with its STOPPED event, on the emulators and the ECS
// fake (the real ecssandbox driver, ListTasks + DescribeTasks). The
// watchdog runs at the stack's schedule (infra/config's default) on a test
// clock: its first tick after the loss records the sandbox missing, and
// the tick that finds it missing for longer than LostGrace sends the Lost
// completion; the grader and the ingester then queue the slot again with a
// new generation and the dispatcher launches a new task. The worst case
// (the loss just after a tick) is ticks × rate; docs/RELIABILITY.md quotes
// it.
func TestLostFargateTaskRequeuedByTheWatchdog(t *testing.T) {
	ctx := context.Background()
	w := startWatchedRun(t)
	env, p, svc, clock, rate, first, grade, runID := w.env, w.p, w.svc, w.clock, w.rate, w.first, w.grade, w.runID
	var err error

	// A tick sees the task; right after it the task is lost, event and all.
	if err := svc.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if lost := env.ECS.LoseRunning(); len(lost) != 1 {
		t.Fatalf("lost %v, want the one task", lost)
	}
	ticks := 0
	var lostCompletion []queue.Message
	for ticks < 20 && len(lostCompletion) == 0 {
		clock.Advance(rate)
		ticks++
		if err := svc.Watch(ctx); err != nil {
			t.Fatalf("watch tick %d: %v", ticks, err)
		}
		if lostCompletion, err = p.Ports.Completions.Receive(ctx, 10, time.Minute, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(lostCompletion) != 1 {
		t.Fatalf("no Lost completion after %d watchdog ticks", ticks)
	}
	c, err := cloud.DecodeCompletion(lostCompletion[0].Body)
	if err != nil || c.Reason != sandbox.Lost || c.SlotID != first.ID || c.Generation != first.Generation {
		t.Fatalf("completion = %+v, %v; want Lost of slot %s generation %d", c, err, first.ID, first.Generation)
	}
	// The first tick records the sighting; the sandbox is lost on the first
	// tick at which it has been missing for LostGrace.
	wantTicks := 1 + int((cloudLostGrace+rate-1)/rate)
	if ticks != wantTicks {
		t.Errorf("Lost after %d ticks, want %d (rate %s, LostGrace %s)", ticks, wantTicks, rate, cloudLostGrace)
	}
	detected := time.Duration(ticks) * rate
	t.Logf("watchdog schedule %s, LostGrace %s: a lost Fargate task is declared lost %d ticks after the last tick that saw it: %s worst case, %s best case",
		config.Defaults().WatchdogSchedule, cloudLostGrace, ticks, detected, detected-rate)

	// Grade, ingest, dispatch: the slot runs again with a new generation.
	if err := grade(ctx, lostCompletion[0].Body); err != nil {
		t.Fatalf("grade: %v", err)
	}
	if err := p.Ports.Completions.Delete(ctx, lostCompletion[0].Receipt); err != nil {
		t.Fatal(err)
	}
	consume(t, ctx, p.Ports.Results, svc.HandleResult, 1, 30*time.Second)
	start := time.Now()
	consume(t, ctx, p.Ports.Slots, svc.HandleSlot, 1, 30*time.Second)
	again := onlySlot(t, ctx, svc, runID)
	if again.Generation <= first.Generation || again.Status != run.SlotRunning || len(env.ECS.Requests("RunTask")) != 2 {
		t.Fatalf("after the Lost completion: slot generation %d (was %d) %s, %d RunTask calls; want a new generation running on a second task",
			again.Generation, first.Generation, again.Status, len(env.ECS.Requests("RunTask")))
	}
	t.Logf("Lost completion → grader → ingester → relaunch: %s on the emulators (the re-queue's delay included)", time.Since(start).Round(time.Millisecond))
}

// consume handles want messages of q, polling until they arrive or within
// passes; each handled message is deleted.
func consume(t *testing.T, ctx context.Context, q queue.Queue, handle func(context.Context, []byte) error, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for got := 0; got < want; {
		msgs, err := q.Receive(ctx, 10, time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if err := handle(ctx, m.Body); err != nil {
				t.Fatalf("handle %s: %v", m.Body, err)
			}
			if err := q.Delete(ctx, m.Receipt); err != nil {
				t.Fatal(err)
			}
			got++
		}
		if got < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d messages within %s", got, want, within)
			}
			<-tick.C
		}
	}
}

func onlySlot(t *testing.T, ctx context.Context, svc *pipeline.Service, runID string) run.Slot {
	t.Helper()
	slots, _, err := svc.Records().Runs.Slots(ctx, runID, records.AllSlots, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 1 {
		t.Fatalf("run %s has %d slots, want 1: %s", runID, len(slots), fmt.Sprint(slots))
	}
	return slots[0]
}

// watchedRun is one oracle slot running on the ECS fake, on the emulators,
// with the pipeline on a test clock and the watchdog at the stack's rate.
type watchedRun struct {
	env   *cloudtest.Env
	p     *cloud.Platform
	svc   *pipeline.Service
	clock *testClock
	rate  time.Duration
	runID string
	first run.Slot
	grade func(context.Context, []byte) error
}

func startWatchedRun(t *testing.T) watchedRun {
	t.Helper()
	ctx := context.Background()
	w := watchedRun{rate: scheduleRate(t, config.Defaults().WatchdogSchedule), env: cloudtest.NewEnv(t)}
	vars := w.env.Setenv(t, nil)
	needs := cloud.Needs{Plan: true, Slots: true, Completions: true, Results: true, Blobs: true, Secrets: true, Sandboxes: true, MaxSandboxes: true}
	cfg, err := cloud.Load(needs, cloudtest.Getenv(vars))
	if err != nil {
		t.Fatal(err)
	}
	if w.p, err = cloud.Connect(ctx, cfg, discard); err != nil {
		t.Fatal(err)
	}
	w.clock = &testClock{now: time.Now().UTC()}
	w.svc, err = pipeline.New(w.p.Ports, pipeline.Options{MaxSandboxes: cfg.MaxSandboxes, LostGrace: cloudLostGrace, Now: w.clock.Now, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	seed(t, ctx, w.svc, w.p.Blobs)
	rc, err := runconfig.Parse([]byte(`
[experiment]
benchmark = "demo-bench"
[tasks]
task_names = ["csv-summary"]
[execution]
attempts_per_task = 1
max_concurrent_attempts = 1
[[agents]]
harness = "oracle"
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.svc.Submit(ctx, pipeline.SubmitRequest{Workspace: e2eWS, User: e2eUser, Config: rc})
	if err != nil {
		t.Fatal(err)
	}
	w.runID = res.Run.ID
	completions := cloud.Completions(w.svc.Grade, discard)
	w.grade = func(ctx context.Context, b []byte) error { return completions(ctx, queue.Message{Body: b}) }

	consume(t, ctx, w.p.Ports.Plan, w.svc.HandlePlan, 1, 30*time.Second)
	consume(t, ctx, w.p.Ports.Slots, w.svc.HandleSlot, 1, 30*time.Second)
	w.first = onlySlot(t, ctx, w.svc, w.runID)
	if w.first.Status != run.SlotRunning || len(w.env.ECS.Requests("RunTask")) != 1 {
		t.Fatalf("after dispatch: slot %s, %d RunTask calls; want running on one task", w.first.Status, len(w.env.ECS.Requests("RunTask")))
	}
	return w
}

// TestFargateTaskWhoseEventWasDroppedIsGradedFromECS: a task runs to the
// end (the runner uploaded result.json and exited 0) but its STOPPED event
// never reaches the completions queue. ECS still describes the stopped
// task, so the watchdog's tick after the one that finds it missing sends
// the completion as ECS reports it: the attempt is graded from its own
// result (passed), neither declared lost after LostGrace nor run again.
func TestFargateTaskWhoseEventWasDroppedIsGradedFromECS(t *testing.T) {
	ctx := context.Background()
	w := startWatchedRun(t)
	spec := sandbox.Spec{LaunchID: w.first.LaunchID, SlotID: w.first.ID, Task: sandbox.TaskRef{Name: w.first.Task}, Harness: "oracle",
		Output: sandbox.Output{Prefix: pipeline.OutputPrefix(w.runID, w.first.ID, w.first.Generation)}}
	if err := pipelinetest.StageResult(ctx, w.p.Blobs, spec, 1, w.first.LaunchedAt); err != nil {
		t.Fatal(err)
	}
	if err := w.svc.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if ended := w.env.ECS.ExitRunning(sandbox.ExitOK); len(ended) != 1 {
		t.Fatalf("ended %v, want the one task", ended)
	}
	var got []queue.Message
	ticks := 0
	for ticks < 5 && len(got) == 0 {
		w.clock.Advance(w.rate)
		ticks++
		if err := w.svc.Watch(ctx); err != nil {
			t.Fatalf("watch tick %d: %v", ticks, err)
		}
		var err error
		if got, err = w.p.Ports.Completions.Receive(ctx, 10, time.Minute, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 1 || ticks != 2 {
		t.Fatalf("%d completions after %d ticks, want one on the second tick after the task ended", len(got), ticks)
	}
	c, err := cloud.DecodeCompletion(got[0].Body)
	if err != nil || c.Reason != sandbox.Exited || c.ExitCode != sandbox.ExitOK || c.SlotID != w.first.ID || c.Generation != w.first.Generation || c.LaunchID != w.first.LaunchID {
		t.Fatalf("completion = %+v, %v; want Exited 0 of slot %s generation %d", c, err, w.first.ID, w.first.Generation)
	}
	if err := w.grade(ctx, got[0].Body); err != nil {
		t.Fatalf("grade: %v", err)
	}
	consume(t, ctx, w.p.Ports.Results, w.svc.HandleResult, 1, 30*time.Second)
	results, err := w.svc.Records().Runs.AllResults(ctx, w.runID)
	if err != nil || len(results) != 1 || results[0].Outcome != run.Passed || results[0].Retried {
		t.Fatalf("results = %+v (%v), want the one attempt passed from its own result.json", results, err)
	}
	if n := len(w.env.ECS.Requests("RunTask")); n != 1 {
		t.Errorf("RunTask calls = %d, want 1: nothing ran again", n)
	}
}
