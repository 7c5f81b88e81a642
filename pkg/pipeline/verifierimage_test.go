package pipeline_test

import (
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

const pinnedV = "127.0.0.1:5000/grader@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

// Dispatch hands each sandbox its task's pinned separate-verifier image
// (only to the task that has one) and the run's trial-level artifacts.
func TestDispatchCarriesVerifierImageAndTrialArtifacts(t *testing.T) {
	e := newEnv(t, envOptions{instant: true})
	var mu sync.Mutex
	got := map[string]string{}
	e.driver.(*pipelinetest.InstantDriver).Reward = func(spec sandbox.Spec) float64 {
		mu.Lock()
		defer mu.Unlock()
		got[spec.Task.Name] = spec.VerifierImage + " " + strings.Join(spec.Artifacts, ",")
		return 1
	}
	dir := t.TempDir()
	var tasks []benchmark.Task
	files := map[string]records.TaskFiles{}
	for _, name := range []string{"sep", "plain"} {
		writeTask(t, dir, name, 60)
		ht, err := harbor.LoadTask(dir + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		bt, err := pipelinetest.BenchmarkTask(ht)
		if err != nil {
			t.Fatal(err)
		}
		bt.Environment = &benchmark.Environment{Source: benchmark.ImagePull, Image: "app:1", Pinned: pinnedA, Digest: pinnedA[strings.Index(pinnedA, "@")+1:]}
		if name == "sep" {
			bt.Environment.Verifier = &benchmark.Environment{Source: benchmark.ImagePull, Image: "grader:1", Pinned: pinnedV, Digest: pinnedV[strings.Index(pinnedV, "@")+1:]}
		}
		tasks = append(tasks, bt)
		files[name] = records.TaskFiles{Dir: dir + "/" + name}
	}
	entry := benchmark.CatalogEntry{Key: "sepv", Name: "sepv", Dir: dir, HarnessRequirement: benchmark.HarnessOptional, PassThreshold: 1}
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
	res, err := e.svc.Submit(e.ctx, pipeline.SubmitRequest{Workspace: testWS, User: testUser, Document: []byte(`artifacts = ["/app/out.json"]
[experiment]
benchmark = "sepv"
[[agents]]
harness = "oracle"
`)})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if done := e.pumpUntil(res.Run.ID, 20*time.Second); done.Status != run.Finished {
		t.Fatalf("run %s, want finished", done.Status)
	}
	want := map[string]string{"sep": pinnedV + " /app/out.json", "plain": " /app/out.json"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("specs (-want +got):\n%s", diff)
	}
}
