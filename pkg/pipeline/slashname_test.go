package pipeline_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/api"
	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// A task named as Harbor names package tasks ("org/name") is selected by
// task_names, runs, and is stored under one path segment per slot.
func TestSlashTaskNameRuns(t *testing.T) {
	e := newEnv(t, envOptions{})
	dir, err := filepath.Abs("../../examples/demo-bench/fix-median")
	if err != nil {
		t.Fatal(err)
	}
	ht, err := harbor.LoadTask(dir)
	if err != nil {
		t.Fatal(err)
	}
	task, err := pipelinetest.BenchmarkTask(ht)
	if err != nil {
		t.Fatal(err)
	}
	task.Name = "demo/fix-median"
	m, err := benchmark.HarborManifest("demo/pkg", "1", "", []benchmark.Task{task})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.recs.Benchmarks.PutManifest(e.ctx, testWS, m, map[string]records.TaskFiles{task.Name: {Dir: dir}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := e.recs.Benchmarks.PutBenchmark(e.ctx, records.Benchmark{Workspace: testWS, Key: m.Key, Name: m.Name, Source: m.Source,
		Status: records.SyncReady, Synced: 1, Total: 1, TaskCount: 1, ReadyVersion: m.Version, ReadyDigest: m.Digest,
		CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	r := e.submit(`
[experiment]
benchmark = "` + m.Key + `"
[tasks]
task_names = ["demo/fix-median"]
[[agents]]
harness = "oracle"
`)
	r = e.pumpUntil(r.ID, 2*time.Minute)
	if r.Status != run.Finished {
		t.Fatalf("run ended %s (%s), want finished", r.Status, r.Reason)
	}
	results := e.results(r.ID)
	if len(results) != 1 {
		t.Fatalf("%d results, want 1", len(results))
	}
	res := results[0]
	if res.Task != "demo/fix-median" || res.Outcome != run.Passed {
		t.Errorf("result: task %q outcome %s (%s), want demo/fix-median passed", res.Task, res.Outcome, res.Message)
	}
	if want := "/slots/0/demo~fix-median/1/"; !strings.Contains(res.ArtifactsPrefix, want) {
		t.Errorf("artifacts prefix %q, want the task as one segment (%s)", res.ArtifactsPrefix, want)
	}
	objs, err := e.blobs.List(e.ctx, res.ArtifactsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if !hasKey(objs, res.ArtifactsPrefix+"result.json") {
		t.Errorf("blobs under %s = %v, want result.json", res.ArtifactsPrefix, objs)
	}

	// The API takes the result id with its slash as one escaped segment,
	// as the client and the console send it.
	h := api.NewWithAuthenticator(api.Config{Records: api.RecordsOf(e.recs), Runs: e.svc, Blobs: e.blobs, Secrets: e.secrets}, fixedAuth{})
	req := httptest.NewRequest(http.MethodGet, "/v1/runs/"+r.ID+"/results/"+url.PathEscape(v1.ResultID(0, 1, "demo/fix-median")), nil)
	req.Header.Set("Authorization", "Bearer t")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"task":"demo/fix-median"`) {
		t.Errorf("GET result 0-1-demo%%2Ffix-median = %d %.300s; want 200 with the task", rec.Code, rec.Body.String())
	}
}

// fixedAuth lets every request in as the test workspace's user.
type fixedAuth struct{}

func (fixedAuth) Authenticate(context.Context, string) (api.Identity, error) {
	return api.Identity{Workspace: testWS, User: testUser}, nil
}
