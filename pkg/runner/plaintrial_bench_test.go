package runner

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// benchTrial runs one in-process image trial of the oracle on taskDir
// (img, and vimg for a separate verifier) and checks it passed.
func benchTrial(b *testing.B, taskDir string, img Image, vimg *Image) {
	b.Helper()
	spec := baseSpec(b, "oracle")
	spec.Task = sandbox.TaskRef{Name: "task", Dir: taskDir}
	dir := b.TempDir()
	opts := Options{Image: &img, VerifierImage: vimg, Isolation: IsolationBwrap, SelfPath: runnerBinary,
		WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out")}
	tr, err := run(context.Background(), spec, opts, harness.All())
	if err != nil {
		b.Fatal(err)
	}
	if tr.VerifierResult == nil || tr.VerifierResult.Rewards["reward"] != 1 {
		b.Fatalf("trial did not pass: %+v %+v", tr.VerifierResult, tr.ExceptionInfo)
	}
}

// BenchmarkPlainTrial times a whole plain (shared-verifier) trial in
// process: the fixture task's oracle in the test image, its verifier in
// the same pod, tear-down. It builds on helpers older than separate
// verifiers, so the same file measures the commit before them.
func BenchmarkPlainTrial(b *testing.B) {
	img := testImage(b)
	task := fixtureDir(b)
	cpuLoop(b, func() { benchTrial(b, task, img, nil) })
}

// cpuLoop runs one b.Loop of f and reports, beside the wall time, the
// CPU time per op of the runner and every process it waited for (bwrap,
// pod-init, the phases): steadier than wall time on a loaded machine.
func cpuLoop(b *testing.B, f func()) {
	b.Helper()
	before := cpuTime()
	n := 0
	for b.Loop() {
		f()
		n++
	}
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/1000/float64(n), "cpu-ms/op")
}

func cpuTime() time.Duration {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	total := time.Duration(0)
	for _, u := range []syscall.Rusage{self, children} {
		total += time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	return total
}
