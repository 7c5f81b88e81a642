package benchsync

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// jobBuilder stands in for a build service whose builds outlive the call
// that starts them (CodeBuild): Build starts a build and answers
// BuildRunning; asked again with the handle, the build is still running
// for polls more looks, then pushes its image to the registry.
type jobBuilder struct {
	reg   *testRegistry
	t     *testing.T
	polls int

	mu     sync.Mutex
	starts map[string]int    // build key → builds started
	looks  map[string]int    // handle → looks
	keys   map[string]string // handle → build key
}

func (j *jobBuilder) Build(ctx context.Context, r BuildRequest) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if r.Running == "" {
		j.starts[r.Key]++
		h := "job-" + r.Key[:8]
		j.keys[h] = r.Key
		return "", &BuildRunning{Handle: h}
	}
	if j.keys[r.Running] != r.Key {
		j.t.Errorf("Build of %s handed handle %s of build key %s", r.Key, r.Running, j.keys[r.Running])
	}
	if j.looks[r.Running]++; j.looks[r.Running] <= j.polls {
		return "", &BuildRunning{Handle: r.Running}
	}
	j.reg.push(j.t, "library/built:"+r.Key[:12], "built.txt", r.Key)
	return j.reg.Resolve(ctx, "built:"+r.Key[:12], nil)
}

// sentQueue records what is sent.
type sentQueue struct {
	queue.Queue
	sent []queue.Outgoing
}

func (q *sentQueue) Send(_ context.Context, msgs ...queue.Outgoing) error {
	q.sent = append(q.sent, msgs...)
	return nil
}

// TestSyncParksOnRunningBuilds: a sync whose builds run on parks at
// "Preparing images · k / n" with a resume message naming the builds; the
// resume takes the sync over (a redelivered original or a stale resume
// does not), polls the builds without starting them again, and finishes
// the sync when they have pushed. One build per build key in all.
func TestSyncParksOnRunningBuilds(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	reg.push(t, "library/app:1", "app.txt", "v1")
	e := newEnv(t, writeImageTasks(t, []imageTask{
		{name: "pulls", environment: "docker_image = \"app:1\"\n"},
		{name: "built-a", dockerfile: "FROM app:1\nCOPY a.txt /a.txt\n", files: map[string]string{"environment/a.txt": "a"}},
		{name: "built-b", dockerfile: "FROM app:1\nCOPY b.txt /b.txt\n", files: map[string]string{"environment/b.txt": "b"}},
	}))
	jobs := &jobBuilder{reg: reg, t: t, polls: 1, starts: map[string]int{}, looks: map[string]int{}, keys: map[string]string{}}
	e.svc.envs = &Environments{Resolver: reg, Builder: jobs, ResumeAfter: 30 * time.Second}
	q := &sentQueue{}
	queued := Queued{Service: e.svc, Queue: q}
	b, err := e.svc.Add(ctx, ws, "envs")
	if err != nil {
		t.Fatal(err)
	}

	// First delivery: both builds start, the sync parks and sends its resume.
	if err := queued.Run(ctx, NewSyncMessage(ws, b.Key)); err != nil {
		t.Fatalf("Run: %v", err)
	}
	resume := sentResume(t, q, 30*time.Second)
	if len(resume.Resume.Builds) != 2 {
		t.Fatalf("resume builds = %v, want the two Dockerfile tasks'", resume.Resume.Builds)
	}
	parked := e.benchmark(t, b.Key)
	if parked.Status != records.SyncSyncing || parked.Phase != records.SyncPhaseImages || parked.Synced != 1 || parked.Total != 3 {
		t.Fatalf("parked benchmark: %s %s %d/%d, want syncing images 1/3", parked.Status, parked.Phase, parked.Synced, parked.Total)
	}

	// A redelivery of the first message finds the sync held.
	e.clock.Advance(5 * time.Second)
	if err := e.svc.Sync(ctx, NewSyncMessage(ws, b.Key)); !errors.Is(err, ErrSyncInProgress) {
		t.Fatalf("redelivered first message: %v, want ErrSyncInProgress", err)
	}

	// The resume: the builds are looked at, still running; it parks again.
	e.clock.Advance(30 * time.Second)
	if err := queued.Run(ctx, resume); err != nil {
		t.Fatalf("Run(resume): %v", err)
	}
	resume2 := sentResume(t, q, 30*time.Second)
	if !resume2.Resume.ParkedAt.After(resume.Resume.ParkedAt) {
		t.Errorf("second park at %s, not after the first %s", resume2.Resume.ParkedAt, resume.Resume.ParkedAt)
	}
	if got := e.benchmark(t, b.Key); got.Phase != records.SyncPhaseImages || got.Synced != 1 {
		t.Errorf("re-parked benchmark: %s %d/%d, want images 1/3", got.Phase, got.Synced, got.Total)
	}
	// The first resume, delivered again, is stale.
	e.clock.Advance(time.Second)
	if err := e.svc.Sync(ctx, resume); !errors.Is(err, ErrSyncInProgress) {
		t.Fatalf("stale resume: %v, want ErrSyncInProgress", err)
	}

	// The second resume finds both pushed and finishes the sync.
	e.clock.Advance(30 * time.Second)
	if err := queued.Run(ctx, resume2); err != nil {
		t.Fatalf("Run(second resume): %v", err)
	}
	if len(q.sent) != 0 {
		t.Fatalf("the finished sync sent %d more messages", len(q.sent))
	}
	ready := e.benchmark(t, b.Key)
	if ready.Status != records.SyncReady {
		t.Fatalf("after the builds: %s (%s), want ready", ready.Status, ready.SyncError)
	}
	m, _ := e.manifest(t, ready)
	for _, name := range []string{"built-a", "built-b"} {
		task, _ := m.Task(name)
		env := task.Environment
		if env == nil || env.Source != benchmark.ImageBuild || !strings.Contains(env.Pinned, "/built@sha256:") || env.Unavailable != "" {
			t.Errorf("%s environment = %+v, want built and pinned", name, env)
			continue
		}
		if jobs.starts[env.BuildKey] != 1 {
			t.Errorf("%s: %d builds started, want 1", name, jobs.starts[env.BuildKey])
		}
		if _, err := e.rec.Benchmarks.ImageBuild(ctx, env.BuildKey); err != nil {
			t.Errorf("%s: build record: %v", name, err)
		}
	}
	// Delivered again, the last resume changes nothing.
	if err := queued.Run(ctx, resume2); err != nil || len(q.sent) != 0 {
		t.Fatalf("redelivered last resume: %v, %d sent", err, len(q.sent))
	}
}

// sentResume takes the one resume message sent and checks its delay.
func sentResume(t *testing.T, q *sentQueue, delay time.Duration) SyncMessage {
	t.Helper()
	if len(q.sent) != 1 {
		t.Fatalf("%d messages sent, want the resume", len(q.sent))
	}
	out := q.sent[0]
	q.sent = nil
	if out.Delay != delay {
		t.Errorf("resume delay = %s, want %s", out.Delay, delay)
	}
	m, err := DecodeSyncMessage(out.Body)
	if err != nil {
		t.Fatalf("resume body %s: %v", out.Body, err)
	}
	if m.SchemaVersion != SchemaVersionResume || m.Resume == nil {
		t.Fatalf("resume = %+v, want schema version %d with a resume", m, SchemaVersionResume)
	}
	return m
}

// TestRefreshParksOnRunningBuilds: a refresh whose new content needs a
// build parks under its refresh lease; the benchmark stays ready at its
// version, and the resume switches it once the build pushed.
func TestRefreshParksOnRunningBuilds(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	reg.push(t, "library/app:1", "app.txt", "v1")
	reg.push(t, "library/app:2", "app.txt", "v2")
	tasks := []imageTask{{name: "built", dockerfile: "FROM app:1\n"}}
	location := writeImageTasks(t, tasks)
	e := newEnv(t, location)
	jobs := &jobBuilder{reg: reg, t: t, starts: map[string]int{}, looks: map[string]int{}, keys: map[string]string{}}
	e.svc.envs = &Environments{Resolver: reg, Builder: jobs}
	q := &sentQueue{}
	queued := Queued{Service: e.svc, Queue: q}
	b, err := e.svc.Add(ctx, ws, "envs")
	if err != nil {
		t.Fatal(err)
	}
	if err := queued.Run(ctx, NewSyncMessage(ws, b.Key)); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if err := queued.Run(ctx, sentResume(t, q, DefaultResumeAfter)); err != nil {
		t.Fatal(err)
	}
	first := e.benchmark(t, b.Key)
	if first.Status != records.SyncReady {
		t.Fatalf("after the first build: %s (%s)", first.Status, first.SyncError)
	}

	// The task's base moves to app:2: the refresh needs a new build.
	writeImageTasksAt(t, location, []imageTask{{name: "built", dockerfile: "FROM app:2\n"}})
	e.clock.Advance(2 * time.Hour)
	msgs, err := e.svc.Refresh(ctx, e.clock.Now(), time.Hour)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Refresh = %v, %v; want the one benchmark", msgs, err)
	}
	if err := queued.Run(ctx, msgs[0]); err != nil {
		t.Fatal(err)
	}
	resume := sentResume(t, q, DefaultResumeAfter)
	if !resume.Refresh || resume.LastSynced != msgs[0].LastSynced {
		t.Errorf("refresh resume = %+v, want the refresh with its last_synced", resume)
	}
	mid := e.benchmark(t, b.Key)
	if mid.Status != records.SyncReady || mid.ReadyVersion != first.ReadyVersion {
		t.Errorf("while the refresh builds: %s at %s, want ready at %s", mid.Status, mid.ReadyVersion, first.ReadyVersion)
	}
	if st := e.syncState(t, ws, b.Key); !st.Refreshing() || st.RefreshSynced != 0 || st.RefreshTotal != 1 {
		t.Errorf("refresh state while parked = %+v, want refreshing 0/1", st)
	}
	e.clock.Advance(time.Minute)
	if err := queued.Run(ctx, resume); err != nil {
		t.Fatal(err)
	}
	after := e.benchmark(t, b.Key)
	if after.Status != records.SyncReady || after.ReadyDigest == first.ReadyDigest {
		t.Fatalf("after the refresh's build: %s digest %s, want ready at new content", after.Status, after.ReadyDigest)
	}
	if len(q.sent) != 0 {
		t.Errorf("the finished refresh sent %d messages", len(q.sent))
	}
}
