package localsandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox/sandboxtest"
)

// TestContract runs the sandbox port's contract suite on the local driver
// with bubblewrap isolation and the real sandbox-runner.
func TestContract(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatalf("bubblewrap is required for the sandbox tests: apt-get install bubblewrap (%v)", err)
	}
	instruction, err := os.ReadFile(filepath.Join(taskDir(t), "instruction.md"))
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.Run(t, func(t *testing.T, env sandboxtest.Env) sandboxtest.Harness {
		d, err := New(Config{DataDir: t.TempDir(), RunnerPath: runnerBinary, Blobs: env.Blobs, Completions: env.Completions,
			StopGrace: 500 * time.Millisecond})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { _ = d.Close() })
		return sandboxtest.Harness{
			Driver: d, Task: sandbox.TaskRef{Name: "task", Dir: taskDir(t)}, Instruction: string(instruction),
			BadTask:       sandbox.TaskRef{Name: "missing", Dir: filepath.Join(t.TempDir(), "no-such-task")},
			RunsWorkloads: true,
		}
	})
}
