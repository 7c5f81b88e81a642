package runner

import (
	"os"
	"os/exec"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/runner/executor/executortest"
)

// executorChildEnv names the isolation a re-executed test binary runs the
// contract against: the rootless and the container modes change the
// runner process itself (its user namespace; a child subreaper), so each
// runs in a process of its own.
const executorChildEnv = "GAUNTLET_EXECUTOR_CONTRACT_CHILD"

const imagePath = "/usr/local/bin:/usr/bin:/bin"

// TestExecutorContract runs the executor contract suite against every
// isolation of the runner: the image as root and as a non-root user (the
// pod's user namespace), rootless, the host's rootfs, a plain process and
// the Fargate in-container mode. The ECS driver's fake runs no container
// (it answers ECS's API only), so no process runs there to hold a
// contract; the in-container mode is what runs inside the Fargate task,
// and it runs here.
func TestExecutorContract(t *testing.T) {
	switch os.Getenv(executorChildEnv) {
	case "rootless":
		t.Run("rootless", func(t *testing.T) { executortest.Run(t, rootlessCase) })
		return
	case "container":
		t.Run("fargate-container", func(t *testing.T) { executortest.Run(t, containerCase(t)) })
		return
	}
	t.Run("image-root", func(t *testing.T) {
		executortest.Run(t, func(t *testing.T) executortest.Case {
			return executortest.Case{Exec: newImageExecutor(bwrapPath(t), runnerBinary, testImage(t), OverlayAuto, t.TempDir()),
				Path: imagePath, DefaultUID: 0, OtherUser: "nobody", OtherUID: 65534}
		})
	})
	t.Run("image-user", func(t *testing.T) {
		executortest.Run(t, func(t *testing.T) executortest.Case {
			img := testImage(t)
			img.User = "nobody"
			return executortest.Case{Exec: newImageExecutor(bwrapPath(t), runnerBinary, img, OverlayAuto, t.TempDir()),
				Path: imagePath, DefaultUID: 65534, OtherUser: "root", OtherUID: 0}
		})
	})
	t.Run("host-rootfs", func(t *testing.T) {
		executortest.Run(t, func(t *testing.T) executortest.Case {
			return executortest.Case{Exec: newHostExecutor(bwrapPath(t), t.TempDir()), Path: imagePath, DefaultUID: 0,
				Skip: map[string]string{"Signal": "bwrap's own pid 1 reports a command killed by signal n as exit code 128+n, so the signal is not seen (the code is)"}}
		})
	})
	t.Run("process", func(t *testing.T) {
		executortest.Run(t, func(t *testing.T) executortest.Case {
			return executortest.Case{Exec: newProcessExecutor(t.TempDir()), Path: os.Getenv("PATH"), DefaultUID: os.Geteuid(),
				Skip: map[string]string{
					"Mounts":      "a plain process sees the host's paths (it refuses mounts)",
					"NetworkNone": "a plain process has the host's network (--isolation=process warns so)",
				}}
		})
	})
	t.Run("rootless", func(t *testing.T) {
		runExecutorChild(t, "rootless", "unshare", "--map-root-user", "--mount", "--propagation", "private", "--")
	})
	t.Run("fargate-container", func(t *testing.T) { runExecutorChild(t, "container") })
}

func bwrapPath(t *testing.T) string {
	t.Helper()
	requireBwrap(t)
	p, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rootlessCase is the image isolation of a runner that is root of a user
// namespace of its own (unshare --map-root-user: its uid alone, as root).
func rootlessCase(t *testing.T) executortest.Case {
	e := newImageExecutor(bwrapPath(t), runnerBinary, testImage(t), OverlayAuto, t.TempDir())
	if !e.rootless {
		t.Fatal("the rootless contract runs in a user namespace of its own, and the runner is not in one")
	}
	return executortest.Case{Exec: e, Path: imagePath, DefaultUID: 0,
		Skip: map[string]string{
			"MemoryLimit": "a rootless runner has no cgroup of its own: memory and cpu limits are not enforced (the trial's limits say so)",
			"PidsLimit":   "a rootless runner enforces the pids limit as a non-root user's RLIMIT_NPROC, and this namespace maps no uid but root",
		}}
}

// containerCase is the Fargate in-container mode, the runner being this
// (re-executed, dedicated) test process: root, and its orphans' reaper.
func containerCase(t *testing.T) func(t *testing.T) executortest.Case {
	if err := prctl(prSetChildSubreaper, 1); err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T) executortest.Case {
		iso := &containerIsolation{self: runnerBinary, uid: DefaultAgentUID, gid: DefaultAgentGID}
		return executortest.Case{Exec: &containerExecutor{iso: iso}, Path: os.Getenv("PATH"), DefaultUID: DefaultAgentUID,
			OtherUser: "root", OtherUID: 0,
			Skip: map[string]string{
				"Mounts":      "the container is the sandbox: its processes see its own paths (it refuses mounts)",
				"NetworkNone": "the container has one network, the Fargate task's (its security group governs egress)",
				"MemoryLimit": "the container's memory is the Fargate task size; the runner can make no cgroup of its own there (its OOM kills are counted from the container's cgroup)",
			}}
	}
}

// runExecutorChild re-executes this test binary, through wrap, to run the
// contract against one isolation in a process of its own.
func runExecutorChild(t *testing.T, isolation string, wrap ...string) {
	args := append(wrap, os.Args[0], "-test.run", "^TestExecutorContract$", "-test.v", "-test.count", "1")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), executorChildEnv+"="+isolation)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the %s contract (a process of its own): %v\n%s", isolation, err, out)
	}
	t.Logf("the %s contract, in a process of its own:\n%s", isolation, out)
}
