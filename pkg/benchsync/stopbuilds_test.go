package benchsync

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"
)

// stoppingBuilder is a jobBuilder that can also stop its builds.
type stoppingBuilder struct {
	*jobBuilder
	smu     sync.Mutex
	stopped []string
}

func (s *stoppingBuilder) StopBuilds(_ context.Context, handles []string) error {
	s.smu.Lock()
	defer s.smu.Unlock()
	s.stopped = append(s.stopped, handles...)
	return nil
}

// TestRemovedBenchmarksBuildsStop: a benchmark removed while its sync is
// parked on running builds has those builds stopped when the resume
// arrives, and nothing else is synced.
func TestRemovedBenchmarksBuildsStop(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	reg.push(t, "library/app:1", "app.txt", "v1")
	e := newEnv(t, writeImageTasks(t, []imageTask{
		{name: "built-a", dockerfile: "FROM app:1\nCOPY a.txt /a.txt\n", files: map[string]string{"environment/a.txt": "a"}},
		{name: "built-b", dockerfile: "FROM app:1\nCOPY b.txt /b.txt\n", files: map[string]string{"environment/b.txt": "b"}},
	}))
	jobs := &stoppingBuilder{jobBuilder: &jobBuilder{reg: reg, t: t, polls: 5, starts: map[string]int{}, looks: map[string]int{}, keys: map[string]string{}}}
	e.svc.envs = &Environments{Resolver: reg, Builder: jobs, ResumeAfter: 30 * time.Second}
	q := &sentQueue{}
	queued := Queued{Service: e.svc, Queue: q}
	b, err := e.svc.Add(ctx, ws, "envs")
	if err != nil {
		t.Fatal(err)
	}
	if err := queued.Run(ctx, NewSyncMessage(ws, b.Key)); err != nil {
		t.Fatalf("Run: %v", err)
	}
	resume := sentResume(t, q, 30*time.Second)
	if len(jobs.stopped) != 0 {
		t.Fatalf("builds stopped before the removal: %v", jobs.stopped)
	}
	if err := e.svc.Delete(ctx, ws, b.Key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	e.clock.Advance(30 * time.Second)
	if err := queued.Run(ctx, resume); err != nil {
		t.Fatalf("Run(resume of the removed benchmark): %v", err)
	}
	want := slices.Sorted(maps.Values(resume.Resume.Builds))
	if !slices.Equal(jobs.stopped, want) {
		t.Errorf("stopped builds = %v, want the parked sync's %v", jobs.stopped, want)
	}
	if len(q.sent) != 0 {
		t.Errorf("the resume of a removed benchmark sent %d messages", len(q.sent))
	}
	for h, n := range jobs.looks {
		t.Errorf("build %s looked at %d times after the removal", h, n)
	}
}
