package pipeline_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

const pinnedA = "127.0.0.1:5000/app@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// importEnvBench stores a ready benchmark "envs" whose tasks carry
// environments as a sync with image preparation writes them: "a" pinned,
// "b" unavailable, and "c" unavailable too when allBroken.
func importEnvBench(t *testing.T, e *env, allBroken bool) {
	t.Helper()
	dir := t.TempDir()
	var tasks []benchmark.Task
	files := map[string]records.TaskFiles{}
	for _, name := range []string{"a", "b", "c"} {
		writeTask(t, dir, name, 60)
		ht, err := harbor.LoadTask(dir + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		bt, err := pipelinetest.BenchmarkTask(ht)
		if err != nil {
			t.Fatal(err)
		}
		bt.DockerImage = "app:1"
		bt.StorageMB = 30720 // reaches the sandbox spec (the cloud sizes its disk by it)
		bt.Environment = &benchmark.Environment{Source: benchmark.ImagePull, Image: "app:1", Pinned: pinnedA, Digest: pinnedA[strings.Index(pinnedA, "@")+1:]}
		if name == "b" || (allBroken && name != "b") {
			bt.Environment = &benchmark.Environment{Source: benchmark.ImagePull, Image: "ghost:9", Unavailable: "task " + name + ": image ghost:9: 404 Not Found"}
		}
		tasks = append(tasks, bt)
		files[name] = records.TaskFiles{Dir: dir + "/" + name}
	}
	entry := benchmark.CatalogEntry{Key: "envs", Name: "envs", Dir: dir, HarnessRequirement: benchmark.HarnessOptional, PassThreshold: 1}
	m, err := entry.Manifest("local", tasks)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.recs.Benchmarks.PutManifest(e.ctx, pipeline.PlatformWorkspace, m, files); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := e.recs.Benchmarks.PutBenchmark(e.ctx, records.Benchmark{Workspace: pipeline.PlatformWorkspace, Key: m.Key, Name: m.Name, Source: m.Source,
		Status: records.SyncReady, ReadyVersion: m.Version, ReadyDigest: m.Digest, TaskCount: len(tasks), CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
}

const envsRun = `
[experiment]
benchmark = "envs"
[[agents]]
harness = "oracle"
`

func TestUnavailableTasksGetNoSlotsAndImagesArePinned(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	var mu sync.Mutex
	images := map[string]string{}
	e.driver.(*pipelinetest.InstantDriver).Reward = func(spec sandbox.Spec) float64 {
		mu.Lock()
		defer mu.Unlock()
		images[spec.Task.Name] = spec.Image
		if spec.StorageMB != 30720 {
			images[spec.Task.Name] += " storage_mb " + strconv.Itoa(spec.StorageMB)
		}
		return 1
	}
	importEnvBench(t, e, false)
	res, err := e.svc.Submit(e.ctx, pipeline.SubmitRequest{Workspace: testWS, User: testUser, Document: []byte(envsRun)})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	r := res.Run
	want := []run.UnavailableTask{{Name: "b", Reason: "task b: image ghost:9: 404 Not Found"}}
	if diff := cmp.Diff(want, r.UnavailableTasks); diff != "" || !cmp.Equal(r.Tasks, []string{"a", "c"}) || !r.FullTaskList {
		t.Errorf("run tasks %v, full %v, unavailable (-want +got):\n%s", r.Tasks, r.FullTaskList, diff)
	}
	if len(res.Warnings) == 0 || !strings.Contains(strings.Join(res.Warnings, "\n"), `1 selected tasks are unavailable and get no attempts: "b"`) {
		t.Errorf("warnings = %q", res.Warnings)
	}
	done := e.pumpUntil(r.ID, 20*time.Second)
	if done.Status != run.Finished || done.TotalSlots() != 2 {
		t.Fatalf("run %s with %d slots, want finished with 2", done.Status, done.TotalSlots())
	}
	if diff := cmp.Diff(map[string]string{"a": pinnedA, "c": pinnedA}, images); diff != "" {
		t.Errorf("sandbox images (-want +got):\n%s", diff)
	}
	if steps := e.logSteps(r.ID); steps["unavailable"] != 1 {
		t.Errorf("log steps %v, want one unavailable line", steps)
	}
}

func TestSubmitRejectsWhenEverySelectedTaskIsUnavailable(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	importEnvBench(t, e, true)
	problems := e.rejected(e.svc, envsRun)
	p, ok := findProblem(problems, pipeline.CodeTasksUnavailable, "tasks")
	if !ok || !strings.Contains(p.Message, "every selected task is unavailable (3)") || !strings.Contains(p.Message, "image ghost:9") {
		t.Errorf("problems = %+v, want %s naming the reasons", problems, pipeline.CodeTasksUnavailable)
	}
}

func TestEnvironmentCheckFindsBrokenAndTrivialTasks(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	// The oracle fails on "a" (a broken environment); nop passes on "c" (a
	// trivial task); "b" is unavailable.
	e.driver.(*pipelinetest.InstantDriver).Reward = func(spec sandbox.Spec) float64 {
		switch {
		case spec.Harness == "oracle" && spec.Task.Name == "a", spec.Harness == "nop" && spec.Task.Name != "c":
			return 0
		}
		return 1
	}
	importEnvBench(t, e, false)
	c, err := e.svc.StartCheck(e.ctx, testWS, testUser, "envs")
	if err != nil {
		t.Fatalf("StartCheck: %v", err)
	}
	if c.Status != records.CheckRunning || c.Run == "" || c.Version != "local" {
		t.Fatalf("started check = %+v", c)
	}
	again, err := e.svc.StartCheck(e.ctx, testWS, testUser, "envs")
	if err != nil || again.Run != c.Run {
		t.Fatalf("StartCheck again = %+v, %v; want the same check (run %s)", again, err, c.Run)
	}
	e.pumpUntil(c.Run, 20*time.Second)
	done, err := e.svc.Check(e.ctx, testWS, "envs", "local")
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != records.CheckDone || !cmp.Equal(done.Broken(), []string{"a"}) || !cmp.Equal(done.Trivial(), []string{"c"}) {
		t.Fatalf("check = %+v, want a broken and c trivial", done)
	}
	verdicts := map[string]records.CheckVerdict{}
	for _, tc := range done.Tasks {
		verdicts[tc.Task] = tc.Verdict
	}
	want := map[string]records.CheckVerdict{"a": records.CheckBroken, "b": records.CheckUnavailable, "c": records.CheckTrivial}
	if diff := cmp.Diff(want, verdicts); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	// Stored: a later read returns it without recomputing.
	stored, err := e.recs.Benchmarks.EnvCheck(e.ctx, testWS, "envs", "local")
	if err != nil || stored.Status != records.CheckDone {
		t.Errorf("stored check = %+v, %v", stored, err)
	}
}
