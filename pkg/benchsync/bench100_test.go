package benchsync

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/hub"
	"github.com/gauntlet-bench/gauntlet/pkg/hub/hubtest"
)

// hundredTasks writes 100 distinct task directories (the 15 demo tasks,
// each instruction made unique) under dir/tasks and returns their names.
func hundredTasks(b *testing.B, dir string) []string {
	b.Helper()
	demo, err := os.ReadDir(exampleTasks)
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	for i := range 100 {
		name := fmt.Sprintf("t-%03d", i)
		dst := filepath.Join(dir, "tasks", name)
		copyExample(b, demo[i%len(demo)].Name(), dst)
		f, err := os.OpenFile(filepath.Join(dst, "instruction.md"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(f, "\n(variant %d)\n", i)
		f.Close()
		names = append(names, name)
	}
	return names
}

// BenchmarkAdd100TaskDataset resolves and downloads one 100-task dataset,
// Add then Sync into a fresh workspace per iteration (no image
// preparation), from three sources side by side, all over loopback HTTP:
// Harbor's package registry (hubtest: PostgREST queries, one RPC and one
// archive download per task, each verified), a registry.json whose tasks
// live in a git repository (git http-backend), and the same repository as
// a --repo dataset.
func BenchmarkAdd100TaskDataset(b *testing.B) {
	work := b.TempDir()
	names := hundredTasks(b, work)

	srv := hubtest.New(b)
	var ids []hub.TaskID
	for _, n := range names {
		ids = append(ids, srv.PublishTask(b, "bench", n, filepath.Join(work, "tasks", n), false))
	}
	srv.PublishDataset(b, "bench", "hundred", "", false, ids, nil)

	gitRoot := b.TempDir()
	bare := filepath.Join(gitRoot, "bench", "hundred.git")
	gitOutput(b, work, "init", "--quiet", "--initial-branch=main")
	gitOutput(b, work, "add", "tasks")
	gitOutput(b, work, "commit", "--quiet", "-m", "tasks")
	commit := gitOutput(b, work, "rev-parse", "HEAD")
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		b.Fatal(err)
	}
	gitOutput(b, work, "clone", "--quiet", "--bare", work, bare)
	gitOutput(b, bare, "config", "uploadpack.allowFilter", "true")
	gitOutput(b, bare, "config", "uploadpack.allowAnySHA1InWant", "true")
	repoURL := gitHTTPServerB(b, gitRoot) + "/bench/hundred.git"

	type task struct {
		Name      string `json:"name"`
		GitURL    string `json:"git_url"`
		GitCommit string `json:"git_commit_id"`
		Path      string `json:"path"`
	}
	entry := map[string]any{"name": "hundred", "version": "1.0", "description": ""}
	var tasks []task
	for _, n := range names {
		tasks = append(tasks, task{n, repoURL, commit, "tasks/" + n})
	}
	entry["tasks"] = tasks
	data, err := json.Marshal([]any{entry})
	if err != nil {
		b.Fatal(err)
	}
	regPath := filepath.Join(b.TempDir(), "registry.json")
	writeRegistry(b, regPath, string(data))

	e := newEnv(b, regPath)
	e.svc.pkgURL, e.svc.pkgKey = srv.URL, hubtest.PublishableKey
	ctx := context.Background()
	i := 0 // a fresh workspace per iteration, across -count repeats too
	for _, tc := range []struct {
		name string
		req  AddRequest
	}{
		{"package", AddRequest{Spec: "bench/hundred"}},
		{"registry.json+git", AddRequest{Spec: "hundred@1.0"}},
		{"repo", AddRequest{Repo: repoURL}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				w := fmt.Sprintf("ws-%s-%d", tc.name, i)
				i++
				added, err := e.svc.AddFrom(ctx, w, tc.req)
				if err != nil {
					b.Fatal(err)
				}
				if err := e.svc.Sync(ctx, NewSyncMessage(w, added.Key)); err != nil {
					b.Fatal(err)
				}
				if got, err := e.rec.Benchmarks.Benchmark(ctx, w, added.Key); err != nil || got.TaskCount != 100 {
					b.Fatalf("%s: %+v, %v; want 100 tasks ready", tc.name, got, err)
				}
			}
		})
	}
}
