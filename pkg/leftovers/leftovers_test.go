package leftovers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/internal/leftovercheck"
)

func TestAttemptOfArgNeedsAPathBoundary(t *testing.T) {
	r := &reclaimer{spellings: []string{"/data/sandboxes"}}
	for arg, want := range map[string]string{
		"/data/sandboxes/a1/work/spec.json":                    "a1",
		"--bind=/data/sandboxes/a2/root":                       "a2",
		"lowerdir=/img,upperdir=/data/sandboxes/a3/disk/up":    "a3",
		"/src:/data/sandboxes/a4":                              "a4",
		"/data/sandboxes/a5,nodev":                             "a5",
		"/x/data/sandboxes/b1/work":                            "",
		"/data/sandboxes-other/b2":                             "",
		"/data/sandboxes/":                                     "",
		"/data/sandboxes/..":                                   "",
		"/data/sandboxes":                                      "",
		"see /x/data/sandboxes/b3 and then /data/sandboxes/a6": "a6",
	} {
		if got := r.attemptOfArg(arg); got != want {
			t.Errorf("attemptOfArg(%q) = %q, want %q", arg, got, want)
		}
	}
}

// needRoot skips nothing: these tests need root and util-linux (losetup,
// unshare), as every sandbox test does.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the leftovers tests need root (loop devices, mounts, other users' processes)")
	}
	for _, bin := range []string{"losetup", "unshare", "mount"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("the leftovers tests need util-linux's %s: %v", bin, err)
		}
	}
}

// start starts a process that stays until killed and reaps it when it ends;
// done is closed then.
func start(t *testing.T, dir string, name string, args ...string) (pid int, done chan struct{}) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return cmd.Process.Pid, done
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func exited(done chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// TestReclaimEndsEveryKindOfLeftoverAndNothingElse leaves in a sandboxes
// dir what a crash leaves — a process working in an attempt, one naming an
// attempt's path (with a child), one in a mount namespace of its own holding
// a mount in an attempt, a loop device on an attempt's file — beside a kept (live) attempt and another dir's
// processes, and checks Reclaim ends exactly the leftovers, and finds
// nothing the second time.
func TestReclaimEndsEveryKindOfLeftoverAndNothingElse(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	dir := filepath.Join(root, "sandboxes")
	other := filepath.Join(root, "other", "sandboxes", "b1")
	mkdirs(t, filepath.Join(dir, "a1"), filepath.Join(dir, "a2"), filepath.Join(dir, "a3", "m"), filepath.Join(dir, "a4"),
		filepath.Join(dir, "live"), other)

	_, cwdDone := start(t, filepath.Join(dir, "a1"), "sleep", "600")
	sh, argDone := start(t, root, "sh", "-c", "sleep 600; :", filepath.Join(dir, "a2", "work", "spec.json"))
	waitFor(t, "the sh of a2 to start its sleep", func() bool {
		children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", sh, sh))
		return len(strings.TrimSpace(string(children))) > 0
	})
	ready := filepath.Join(root, "ns-ready")
	_, nsDone := start(t, root, "unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs tmpfs "$1" && touch "$2" && exec sleep 600`, "sh", filepath.Join(dir, "a3", "m"), ready)
	waitFor(t, "the namespace's mount", func() bool { _, err := os.Stat(ready); return err == nil })

	img := filepath.Join(dir, "a4", "disk.img")
	if err := os.WriteFile(img, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "--detach", loop).Run() })

	_, liveDone := start(t, filepath.Join(dir, "live"), "sleep", "600")
	_, otherDone := start(t, other, "sleep", "600")
	_, boundaryDone := start(t, root, "sh", "-c", "sleep 600; :", "/x"+filepath.Join(dir, "a9"))

	before := leftovercheck.Find(t, dir)
	if len(before.Processes) != 5 || len(before.LoopDevices) != 1 {
		t.Fatalf("before Reclaim: %s; want 5 processes (a1, a2's sh, a3, live and the /x… one) and a4's loop device", before)
	}
	rep, err := Reclaim(context.Background(), Options{Dir: dir, Keep: func(id string) bool { return id == "live" }})
	if err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	want := Report{Processes: 4, LoopDevices: 1, Dirs: 4} // a2's sleep is found as its sh's child
	if rep != want {
		t.Errorf("report = %+v, want %+v", rep, want)
	}
	for name, done := range map[string]chan struct{}{"a1 (cwd)": cwdDone, "a2 (command line)": argDone, "a3 (mount namespace)": nsDone} {
		if !reaped(done) {
			t.Errorf("the process of %s is still alive", name)
		}
	}
	for name, done := range map[string]chan struct{}{"the live attempt": liveDone, "the other dir": otherDone, "the /x… path": boundaryDone} {
		if exited(done) {
			t.Errorf("the process of %s was killed", name)
		}
	}
	after := leftovercheck.Find(t, dir)
	if want := []string{"live"}; len(after.Dirs) != 1 || after.Dirs[0] != "live" || len(after.LoopDevices) != 0 ||
		len(after.Without("/live").Without("/x"+dir).Processes) != 0 {
		t.Errorf("after Reclaim: %s; want only the live attempt's dir and process %v", after, want)
	}
	if again, err := Reclaim(context.Background(), Options{Dir: dir, Keep: func(id string) bool { return id == "live" }}); err != nil || !again.Empty() {
		t.Errorf("second Reclaim = %+v, %v; want nothing found", again, err)
	}
}

// reaped waits (bounded) for a killed process to be reaped.
func reaped(done chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

func TestReclaimOfAMissingDirFindsNothing(t *testing.T) {
	rep, err := Reclaim(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "none")})
	if err != nil || !rep.Empty() {
		t.Fatalf("Reclaim = %+v, %v; want nothing", rep, err)
	}
}

// privateNSEnv, set, makes the test binary run
// TestReclaimUnmountsMountsOfItsOwnNamespace's body: its parent starts it in
// a private mount namespace, so its mount copies into nobody else's.
const privateNSEnv = "LEFTOVERS_TEST_IN_PRIVATE_MOUNT_NS"

// TestReclaimUnmountsMountsOfItsOwnNamespace mounts in an attempt in the
// caller's own mount namespace (as a runner without a namespace of its own
// would leave it) and checks Reclaim unmounts it, innermost first, before
// removing the dir.
func TestReclaimUnmountsMountsOfItsOwnNamespace(t *testing.T) {
	needRoot(t)
	if os.Getenv(privateNSEnv) == "" {
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", os.Args[0],
			"-test.run=^TestReclaimUnmountsMountsOfItsOwnNamespace$", "-test.v")
		cmd.Env = append(os.Environ(), privateNSEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("in a private mount namespace: %v\n%s", err, out)
		}
		return
	}
	dir := filepath.Join(t.TempDir(), "sandboxes")
	outer := filepath.Join(dir, "a1", "m")
	inner := filepath.Join(outer, "inner")
	mkdirs(t, outer)
	if out, err := exec.Command("mount", "-t", "tmpfs", "tmpfs", outer).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	mkdirs(t, inner)
	if out, err := exec.Command("mount", "-t", "tmpfs", "tmpfs", inner).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	rep, err := Reclaim(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	if want := (Report{Unmounted: 2, Dirs: 1}); rep != want {
		t.Errorf("report = %+v, want %+v", rep, want)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), dir) {
		t.Errorf("still mounted in %s:\n%s", dir, mounts)
	}
	if _, err := os.Stat(filepath.Join(dir, "a1")); !os.IsNotExist(err) {
		t.Errorf("attempt dir a1: %v, want it removed", err)
	}
}
