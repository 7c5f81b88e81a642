package benchsync

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// meetingBuilder builds into the test registry once `want` builds are in
// flight at the same time, and fails a build that waits for that longer
// than a generous deadline (builds run one after another never meet).
type meetingBuilder struct {
	reg  *testRegistry
	t    *testing.T
	want int

	mu       sync.Mutex
	inFlight int
	met      chan struct{}
	starts   map[string]int // build key → builds
}

func (m *meetingBuilder) Build(ctx context.Context, r BuildRequest) (string, error) {
	m.mu.Lock()
	m.starts[r.Key]++
	m.inFlight++
	if m.inFlight == m.want {
		close(m.met)
	}
	m.mu.Unlock()
	select {
	case <-m.met:
	case <-time.After(30 * time.Second):
		return "", errors.New("no other build ran beside this one")
	case <-ctx.Done():
		return "", ctx.Err()
	}
	m.reg.push(m.t, "library/built:"+r.Key[:12], "built.txt", r.Key)
	return m.reg.Resolve(ctx, "built:"+r.Key[:12], nil)
}

// TestSyncBuildsSideBySide: with ParallelBuilds 2 the builds of two tasks
// run at once, and two tasks with the same Dockerfile and context (one
// build key) share one build.
func TestSyncBuildsSideBySide(t *testing.T) {
	ctx := context.Background()
	reg := newTestRegistry(t)
	reg.push(t, "library/app:1", "app.txt", "v1")
	location := writeImageTasks(t, []imageTask{
		{name: "one", dockerfile: "FROM app:1\nRUN echo one\n"},
		{name: "two", dockerfile: "FROM app:1\nRUN echo two\n"},
		{name: "two-again", dockerfile: "FROM app:1\nRUN echo two\n"},
	})
	e := newEnv(t, location)
	mb := &meetingBuilder{reg: reg, t: t, want: 2, met: make(chan struct{}), starts: map[string]int{}}
	e.svc.envs = &Environments{Resolver: reg, Builder: mb, ParallelBuilds: 2}
	b, err := e.svc.Add(ctx, ws, "envs")
	if err != nil {
		t.Fatal(err)
	}
	e.sync(t, b.Key)
	m, _ := e.manifest(t, e.benchmark(t, b.Key))
	for _, name := range []string{"one", "two", "two-again"} {
		task, ok := m.Task(name)
		if !ok || task.Environment == nil || task.Environment.Pinned == "" || task.Environment.Unavailable != "" {
			t.Fatalf("task %s: %+v, want a built image", name, task.Environment)
		}
	}
	if len(mb.starts) != 2 {
		t.Errorf("builds per key: %v, want two keys", mb.starts)
	}
	for key, n := range mb.starts {
		if n != 1 {
			t.Errorf("build key %s built %d times, want once", key[:12], n)
		}
	}
}
