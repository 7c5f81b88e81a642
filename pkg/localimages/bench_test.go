package localimages_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/localimages"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// Shape of one benchmark run: every task's oracle attempts, four at a time
// (the machine has two cores).
const (
	benchTasks       = 10
	benchAttempts    = 3
	benchConcurrency = 4
)

// BenchmarkAttemptsPerSecond measures the local platform's attempt
// throughput end to end — plan, dispatch, a real sandbox per attempt
// (agent phase running the oracle's solve.sh, verifier phase running
// test.sh), grade, ingest, recompute — with every attempt in its task's
// image (overlay over the cached rootfs, quota filesystem, cgroups, private
// namespaces) beside the same tasks on the host's root filesystem
// (bwrap-host, the development mode). One op is one run of benchTasks ×
// benchAttempts attempts, from submit until the run is finished; the sync
// (one pull and unpack of the Debian + python3 base) is outside the clock.
func BenchmarkAttemptsPerSecond(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("image sandboxes need root here")
	}
	for _, mode := range []struct{ name, isolation, image string }{
		{"sandbox=image", "bwrap", "python:3.13-slim-bookworm"},
		{"sandbox=host", "bwrap-host", ""},
	} {
		b.Run(mode.name, func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			catalog := benchTaskSet(b, dir, mode.image)
			logger := slog.New(slog.NewTextHandler(io.Discard, nil))
			opts := local.Options{DataDir: filepath.Join(dir, "data"), RunnerPath: runnerBin, Catalog: catalog,
				Isolation: mode.isolation, WatchInterval: time.Second, Logger: logger,
				Pipeline: pipeline.Options{GateDelay: 20 * time.Millisecond, RetryBackoff: 50 * time.Millisecond}}
			if mode.image != "" {
				_, mirrors := imagetest.BaseImages(b)
				store, err := image.Open(filepath.Join(dir, "images"), image.Options{Mirrors: mirrors, Logger: logger})
				if err != nil {
					b.Fatal(err)
				}
				if opts.Environments, err = localimages.Environments(localimages.Config{Store: store, Mirrors: mirrors, BuildDir: buildCache(b)}); err != nil {
					b.Fatal(err)
				}
				opts.Images = localimages.SandboxImages(store, nil)
			}
			p, err := local.Open(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			recs := p.Records()
			if bm, err := recs.Benchmarks.Benchmark(ctx, pipeline.PlatformWorkspace, "bench"); err != nil || bm.Status != records.SyncReady {
				b.Fatalf("benchmark = %+v, %v; want ready", bm, err)
			}
			if err := recs.Workspaces.PutBilling(ctx, "ws1", records.Billing{Status: records.BillingActive, Plan: "local"}); err != nil {
				b.Fatal(err)
			}
			if err := p.Start(ctx); err != nil {
				b.Fatal(err)
			}
			cfg := fmt.Sprintf("[experiment]\nbenchmark = \"bench\"\n[execution]\nattempts_per_task = %d\nmax_concurrent_attempts = %d\nmax_retries = 0\n[[agents]]\nharness = \"oracle\"\n",
				benchAttempts, benchConcurrency)
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			b.ResetTimer()
			for range b.N {
				res, err := p.Service().Submit(ctx, pipeline.SubmitRequest{Workspace: "ws1", User: "u1", Document: []byte(cfg)})
				if err != nil {
					b.Fatal(err)
				}
				var r run.Run
				for {
					if r, err = recs.Runs.Run(ctx, res.Run.ID); err != nil {
						b.Fatal(err)
					}
					if r.Status.Terminal() {
						break
					}
					<-tick.C
				}
				b.StopTimer()
				t, err := recs.Runs.RunTally(ctx, r.ID)
				if err != nil {
					b.Fatal(err)
				}
				if r.Status != run.Finished || t.Passed != int64(benchTasks*benchAttempts) {
					b.Fatalf("run %s: %+v; want finished with every attempt passed", r.Status, t)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*benchTasks*benchAttempts)/b.Elapsed().Seconds(), "attempts/s")
		})
	}
}

// benchTaskSet writes benchTasks trivial Harbor tasks (the oracle writes a
// file the verifier checks) in image, or on the host when image is "", and
// a catalog naming them; it returns the catalog's path.
func benchTaskSet(b *testing.B, dir, image string) string {
	b.Helper()
	tasks := filepath.Join(dir, "tasks")
	env := "network_mode = \"no-network\"\n"
	if image != "" {
		env = fmt.Sprintf("docker_image = %q\n", image) + env
	}
	for i := range benchTasks {
		task := filepath.Join(tasks, fmt.Sprintf("task-%02d", i))
		writeFile(b, filepath.Join(task, "task.toml"), "schema_version = \"1.4\"\n[metadata]\ncategory = \"bench\"\n[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 30.0\n[environment]\n"+env)
		writeFile(b, filepath.Join(task, "instruction.md"), "Write done into /app/out.\n")
		writeFile(b, filepath.Join(task, "solution", "solve.sh"), "#!/bin/sh\nmkdir -p /app && echo done > /app/out\n")
		writeFile(b, filepath.Join(task, "tests", "test.sh"), "#!/bin/sh\nif grep -qx done /app/out; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n")
	}
	catalog := filepath.Join(dir, "catalog.toml")
	writeFile(b, catalog, fmt.Sprintf("[[benchmarks]]\nkey = \"bench\"\nname = \"bench\"\ndir = %q\nharness_requirement = \"optional\"\n", tasks))
	return catalog
}
