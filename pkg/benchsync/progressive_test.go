package benchsync

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

// gateBuilder builds at once, except a Dockerfile holding "gate": that
// build writes a line to its log and waits until the test opens the gate or
// its context ends (which it reports on cancelled).
type gateBuilder struct {
	reg       *testRegistry
	t         *testing.T
	open      chan struct{}
	cancelled chan struct{}
	once      sync.Once
}

func (g *gateBuilder) Build(ctx context.Context, r BuildRequest) (string, error) {
	fmt.Fprintf(r.Log, "building %s\n", r.Task)
	if strings.Contains(string(r.Dockerfile), "gate") {
		select {
		case <-g.open:
		case <-ctx.Done():
			g.once.Do(func() { close(g.cancelled) })
			return "", ctx.Err()
		}
	}
	g.reg.push(g.t, "library/built:"+r.Key[:12], "built.txt", r.Key)
	return g.reg.Resolve(ctx, "built:"+r.Key[:12], nil)
}

// TestSyncStoresTasksAsTheyAreReady: the manifest version is stored once
// every image is decided; the task whose build ends is ready in it (and
// runs may select it) while the other's build waits, whose log is stored
// while it runs. Removing the benchmark then cancels that build at once:
// Delete returns after the sync has, and nothing of the benchmark is left.
func TestSyncStoresTasksAsTheyAreReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := newTestRegistry(t)
	reg.push(t, "library/app:1", "app.txt", "v1")
	location := writeImageTasks(t, []imageTask{
		{name: "fast", dockerfile: "FROM app:1\nRUN echo fast\n"},
		{name: "slow", dockerfile: "FROM app:1\nRUN echo gate\n"},
	})
	e := newEnv(t, location)
	gb := &gateBuilder{reg: reg, t: t, open: make(chan struct{}), cancelled: make(chan struct{})}
	e.svc.envs = &Environments{Resolver: reg, Builder: gb, ParallelBuilds: 2}
	b, err := e.svc.Add(ctx, ws, "envs")
	if err != nil {
		t.Fatal(err)
	}
	synced := make(chan error, 1)
	go func() { synced <- e.svc.Sync(ctx, NewSyncMessage(ws, b.Key)) }()

	var version string
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	states := func() map[string]benchmark.TaskImageState {
		out := map[string]benchmark.TaskImageState{}
		for _, name := range []string{"fast", "slow"} {
			task, err := e.rec.Benchmarks.Task(ctx, ws, b.Key, version, name)
			if err == nil {
				out[name] = task.Environment.State()
			}
		}
		return out
	}
	for {
		cur := e.benchmark(t, b.Key)
		version = cur.PreparingVersion
		if version != "" {
			if st := states(); st["fast"] == benchmark.ImageReady && st["slow"] == benchmark.ImagePreparing {
				if cur.Status != records.SyncSyncing || cur.ReadyVersion != "" {
					t.Fatalf("benchmark while a build waits: %+v; want syncing, no ready version", cur)
				}
				break
			}
		}
		select {
		case err := <-synced:
			t.Fatalf("sync ended (%v) while a build should wait", err)
		case <-ctx.Done():
			t.Fatalf("no stored version with fast ready and slow preparing (version %q, states %v)", version, states())
		case <-tick.C:
		}
	}
	slow, err := e.rec.Benchmarks.Task(ctx, ws, b.Key, version, "slow")
	if err != nil {
		t.Fatal(err)
	}
	// The running build's log is stored within a flush interval.
	for {
		text := ""
		if rc, err := e.blobs.Get(ctx, slow.Environment.BuildLog); err == nil {
			data, _ := io.ReadAll(rc)
			rc.Close()
			text = string(data)
		}
		if strings.Contains(text, "building slow") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the running build's log was not stored: %q", text)
		case <-tick.C:
		}
	}

	if err := e.svc.Delete(ctx, ws, b.Key); err != nil {
		t.Fatal(err)
	}
	// Delete waited for the sync: the build has seen its cancellation and
	// the sync has returned (nil: the message is done).
	select {
	case <-gb.cancelled:
	default:
		t.Error("Delete returned before the waiting build was cancelled")
	}
	select {
	case err := <-synced:
		if err != nil {
			t.Errorf("Sync of the removed benchmark = %v, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("the sync did not return after the delete")
	}
	if _, err := e.rec.Benchmarks.Benchmark(ctx, ws, b.Key); err == nil {
		t.Error("the removed benchmark is still there")
	}
	if versions, err := e.rec.Benchmarks.ManifestVersions(ctx, ws, b.Key); err != nil || len(versions) != 0 {
		t.Errorf("manifest versions after the delete = %v, %v; want none", versions, err)
	}
}
