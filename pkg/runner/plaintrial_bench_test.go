package runner

import (
	"context"
	"path/filepath"
	"testing"

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
	for b.Loop() {
		benchTrial(b, task, img, nil)
	}
}
