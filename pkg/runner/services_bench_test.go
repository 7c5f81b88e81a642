package runner

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
)

// BenchmarkSidecarTrial measures what one sidecar service adds to an
// attempt, side by side with the same attempt without it: a whole image
// trial (layer, pod, the command agent, the verifier, teardown) of the
// runner's fixture task, then the same task with one service beside main —
// "idle": a minbase service running `sleep infinity`, started; "healthy":
// the python stand-in serving HTTP, main waiting for service_healthy (its
// healthcheck polled every 100 ms). Each sub-benchmark reports its median
// attempt in ms; the ratios go in docs/BENCHMARKS.md.
func BenchmarkSidecarTrial(b *testing.B) {
	idle := `services:
  main:
    depends_on: [idle]
  idle:
    image: debian:bookworm-slim
    command: ["sleep", "infinity"]
`
	healthy := apiCompose(apiServer("gauntlet", "bench"), apiHealthy)
	minbase := map[string]ServiceImage{"idle": {Image: Image{Ref: "test/minbase", Rootfs: testrootfs.Dir(b), Env: []string{"PATH=/usr/bin:/bin"}}}}
	for _, c := range []struct {
		name     string
		compose  string
		services map[string]ServiceImage
	}{
		{"plain", "", nil},
		{"idle", idle, minbase},
		{"healthy", healthy, pythonServices(b)},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := fixtureDir(b)
			if c.compose != "" {
				dir = sidecarTask(b, c.compose, "")
			}
			img := testImage(b)
			var times []time.Duration
			for i := 0; b.Loop(); i++ {
				work := b.TempDir()
				spec := baseSpec(b, "command")
				spec.Task.Dir = dir
				spec.Command = "echo gauntlet > /app/answer.txt"
				opts := Options{Image: &img, Services: c.services, Isolation: IsolationBwrap, SelfPath: runnerBinary,
					WorkDir: filepath.Join(work, "work"), OutDir: filepath.Join(work, "out")}
				began := time.Now()
				tr, err := run(context.Background(), spec, opts, harness.All())
				if err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(began))
				if r, ok := tr.Reward(); !ok || r != 1 {
					b.Fatalf("reward %v, %v; exception %+v", r, ok, tr.ExceptionInfo)
				}
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "attempt-ms-median")
		})
	}
}
