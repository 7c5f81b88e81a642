package runner

import (
	"path/filepath"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// TestBundleFile runs a task from a local .tar.gz, as `gauntlet local` does
// for tasks synced from a git registry (their bundle is a file of the local
// blob store).
func TestBundleFile(t *testing.T) {
	requireBwrap(t)
	bundle := filepath.Join(t.TempDir(), "task.tar.gz")
	if err := writeTarGz(fixtureDir(t), bundle); err != nil {
		t.Fatal(err)
	}
	spec := baseSpec(t, "oracle")
	spec.Task = sandbox.TaskRef{Name: "task", BundleFile: bundle}
	r := runTrial(t, spec, Options{})
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("reward = %v, want 1", got)
	}
	spec.Task.Dir = fixtureDir(t)
	if _, err := Run(t.Context(), spec, Options{WorkDir: t.TempDir(), OutDir: t.TempDir()}); err == nil {
		t.Error("Run with both dir and bundle_file succeeded, want an error")
	}
}
