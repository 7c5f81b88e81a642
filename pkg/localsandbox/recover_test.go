package localsandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gauntlet-bench/gauntlet/internal/leftovercheck"
	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
	"github.com/gauntlet-bench/gauntlet/pkg/leftovers"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// The crash helper: crashHelperEnv set to a data dir turns the test binary
// into a platform that launches crashHelperSandboxes image sandboxes there
// (runner, bwrap and image rootfs from the other variables) and waits to be
// killed.
const (
	crashHelperEnv       = "LOCALSANDBOX_CRASH_HELPER_DATA_DIR"
	crashHelperRunnerEnv = "LOCALSANDBOX_CRASH_HELPER_RUNNER"
	crashHelperBwrapEnv  = "LOCALSANDBOX_CRASH_HELPER_BWRAP"
	crashHelperRootfsEnv = "LOCALSANDBOX_CRASH_HELPER_ROOTFS"
	crashHelperSandboxes = 2
)

func runCrashHelper(dataDir string) int {
	task, err := filepath.Abs(taskDirPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d, err := New(Config{DataDir: dataDir, RunnerPath: os.Getenv(crashHelperRunnerEnv), BwrapPath: os.Getenv(crashHelperBwrapEnv),
		Blobs: &memBlobs{objects: map[string][]byte{}}, Completions: &chanQueue{ch: make(chan []byte, 16)},
		Images: &cachedImages{dir: os.Getenv(crashHelperRootfsEnv)}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := range crashHelperSandboxes {
		if _, err := d.Launch(context.Background(), specIn(task, fmt.Sprintf("crash-%d", i), "command", "sleep 600")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	select {} // until killed
}

// heldBwrap writes a bwrap that holds bubblewrap's monitor just before it
// releases the sandbox's init (--userns-block-fd on a FIFO nobody writes):
// the window in which a crash leaves that init blocked forever. The monitor
// has reported the init's pid, so the runner carries on as usual.
func heldBwrap(t *testing.T) string {
	t.Helper()
	real, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatalf("bubblewrap is required for the sandbox tests: %v", err)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "hold")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened read-write, the FIFO never reports end of file.
	script := fmt.Sprintf("#!/bin/sh\nexec 9<>'%s'\nexec '%s' --unshare-user --userns-block-fd 9 \"$@\"\n", fifo, real)
	wrapper := filepath.Join(dir, "bwrap")
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// heldInits lists the processes of sandboxes under dir that run the held
// bwrap (its monitors and the inits they hold).
func heldInits(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, pid := range processesWithArg(t, "--userns-block-fd 9") {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		if strings.Contains(string(cmdline), dir+"/") {
			out = append(out, pid)
		}
	}
	return out
}

// TestRecoverEndsWhatACrashedPlatformLeft kills (SIGKILL) a platform whose
// sandboxes' bwrap had not started their phase, checks the crash leaked
// what issue 21 found (bwrap inits outliving their runners, holding the
// attempts' loop devices, and the sandbox dirs), then recovers the data dir
// with a new driver that already runs a sandbox of its own: every leftover
// ends, the live sandbox is untouched, and recovering again finds nothing.
func TestRecoverEndsWhatACrashedPlatformLeft(t *testing.T) {
	rootfs := testrootfs.Dir(t)
	dataDir := t.TempDir()
	sandboxes := filepath.Join(dataDir, "sandboxes")
	t.Cleanup(func() { _, _ = leftovers.Reclaim(context.Background(), leftovers.Options{Dir: sandboxes}) })
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), crashHelperEnv+"="+dataDir, crashHelperRunnerEnv+"="+runnerBinary,
		crashHelperBwrapEnv+"="+heldBwrap(t), crashHelperRootfsEnv+"="+rootfs)
	helper.Stdout, helper.Stderr = os.Stderr, os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = helper.Process.Kill()
		_ = helper.Wait()
	}()
	// A monitor and its held init per sandbox.
	waitFor(t, func() bool { return len(heldInits(t, sandboxes)) == 2*crashHelperSandboxes })
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	// The runners die with the platform and the monitors with them; the
	// inits stay.
	waitFor(t, func() bool {
		return len(processesWithArg(t, "--spec "+sandboxes)) == 0 && len(heldInits(t, sandboxes)) == crashHelperSandboxes
	})
	leaked := leftovercheck.Find(t, sandboxes)
	if len(leaked.Processes) != crashHelperSandboxes || len(leaked.LoopDevices) != crashHelperSandboxes || len(leaked.Dirs) != crashHelperSandboxes {
		t.Fatalf("the crash left %s; want each sandbox's held bwrap init, loop device and dir", leaked)
	}

	f := newFixtureOn(t, dataDir)
	const marker = "1000.6161"
	live, err := f.driver.Launch(context.Background(), spec(t, "live", "command", "sleep "+marker))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(processesWithArg(t, "sleep "+marker)) > 0 })
	rep, err := f.driver.Recover(context.Background())
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if rep.Processes != crashHelperSandboxes || rep.Dirs != crashHelperSandboxes {
		t.Errorf("Recover = %+v, want %d processes and %d dirs", rep, crashHelperSandboxes, crashHelperSandboxes)
	}
	now := leftovercheck.Find(t, sandboxes)
	if still := leaked.StillIn(now); !still.Empty() {
		t.Errorf("after Recover, of what the crash left: %s; want nothing", still)
	}
	if len(now.Dirs) != 1 || now.Dirs[0] != live.ID || len(processesWithArg(t, "sleep "+marker)) == 0 {
		t.Errorf("after Recover: %s; want the live sandbox's dir and agent", now)
	}
	if again, err := f.driver.Recover(context.Background()); err != nil || !again.Empty() {
		t.Errorf("second Recover = %+v, %v; want nothing found", again, err)
	}
	if err := f.driver.Stop(context.Background(), live.ID); err != nil {
		t.Fatal(err)
	}
	if c := f.nextCompletion(t); c.SandboxID != live.ID || c.Reason != sandbox.UserStopped {
		t.Errorf("completion = %+v, want the live sandbox stopped by Stop", c)
	}
	// Nothing is left once the live sandbox has ended too.
	waitFor(t, func() bool { return leftovercheck.Find(t, sandboxes).Empty() })
}

// TestRecoverLeavesTheSandboxesOfAnotherLiveDriverAlone checks the owner
// lock: while a driver that recovered a data dir is open, another one's
// Recover touches nothing and says why; once it is closed, it succeeds.
func TestRecoverLeavesTheSandboxesOfAnotherLiveDriverAlone(t *testing.T) {
	first := newFixture(t)
	if _, err := first.driver.Recover(context.Background()); err != nil {
		t.Fatalf("first Recover: %v", err)
	}
	stray := filepath.Join(first.dataDir, "sandboxes", "local-stray")
	if err := os.MkdirAll(stray, 0o700); err != nil {
		t.Fatal(err)
	}
	second := newFixtureOn(t, first.dataDir)
	_, err := second.driver.Recover(context.Background())
	if !errors.Is(err, ErrSandboxesInUse) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("second Recover = %v, want ErrSandboxesInUse naming pid %d", err, os.Getpid())
	}
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("the first driver's sandbox dir: %v, want it untouched", err)
	}
	if err := first.driver.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := second.driver.Recover(context.Background())
	if err != nil || rep.Dirs != 1 {
		t.Errorf("Recover after the first driver closed = %+v, %v; want the stray dir removed", rep, err)
	}
}
