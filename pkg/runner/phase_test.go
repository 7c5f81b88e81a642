package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/confine"
)

// hostPhase is a host-rootfs phase running script, its output under dir.
func hostPhase(t *testing.T, script string, mounts ...mount) phase {
	t.Helper()
	dir := t.TempDir()
	mounts = append([]mount{{host: t.TempDir(), target: AppMount, writable: true}}, mounts...)
	return phase{
		name: "agent_execution",
		cmd: phaseCommand{script: script, env: []string{"PATH=/usr/bin:/bin"}, mounts: mounts,
			netMode: netNone, tmpDir: t.TempDir(), maskFile: testMaskFile(t)},
		stdout: filepath.Join(dir, "stdout.txt"), stderr: filepath.Join(dir, "stderr.txt"),
	}
}

func hostBwrap(t *testing.T) string {
	t.Helper()
	requireBwrap(t)
	path, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPhaseThatRanAndFailedIsThePhasesOutcome(t *testing.T) {
	p := hostPhase(t, "echo failing >&2; exit 3")
	out, err := runPhase(context.Background(), bwrapIsolation{path: hostBwrap(t)}, p)
	if err != nil {
		t.Fatalf("runPhase: %v", err)
	}
	if out.ExitCode != 3 || len(out.SetupRetries) != 0 {
		t.Errorf("outcome = exit %d, setup retries %q; want exit 3 and none", out.ExitCode, out.SetupRetries)
	}
	if got, _ := os.ReadFile(p.stderr); string(got) != "failing\n" {
		t.Errorf("stderr = %q, want the phase's own output only", got)
	}
}

func TestPhaseWhoseSandboxNeverSetsUpIsThePlatformsFailure(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	p := hostPhase(t, "exit 0", mount{host: missing, target: "/data"})
	out, err := runPhase(context.Background(), bwrapIsolation{path: hostBwrap(t)}, p)
	if !errors.Is(err, errSandboxSetup) {
		t.Fatalf("runPhase error = %v, want errSandboxSetup", err)
	}
	if !strings.Contains(err.Error(), "3 tries") || !strings.Contains(err.Error(), missing) {
		t.Errorf("error %q does not say how often it tried and what bwrap said", err)
	}
	if len(out.SetupRetries) != setupAttempts-1 {
		t.Errorf("setup retries = %q, want %d", out.SetupRetries, setupAttempts-1)
	}
}

func TestPhaseIsStartedAgainAfterATransientSetupFailure(t *testing.T) {
	// A bwrap that fails once in the sandbox's setup (after it reported
	// the sandbox's pid, as a failed loopback setup does), then works.
	dir := t.TempDir()
	flaky := filepath.Join(dir, "bwrap")
	script := fmt.Sprintf("#!/bin/sh\nif [ ! -e %[1]s/failed ]; then touch %[1]s/failed; exec %[2]s --ro-bind %[1]s/missing /x \"$@\"; fi\nexec %[2]s \"$@\"\n", dir, hostBwrap(t))
	if err := os.WriteFile(flaky, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := hostPhase(t, "echo ran; exit 4")
	out, err := runPhase(context.Background(), bwrapIsolation{path: flaky}, p)
	if err != nil {
		t.Fatalf("runPhase: %v", err)
	}
	if out.ExitCode != 4 || len(out.SetupRetries) != 1 || !strings.Contains(out.SetupRetries[0], "bwrap:") {
		t.Errorf("outcome = exit %d, setup retries %q; want exit 4 after one retry naming bwrap's failure", out.ExitCode, out.SetupRetries)
	}
	stdout, _ := os.ReadFile(p.stdout)
	stderr, _ := os.ReadFile(p.stderr)
	if string(stdout) != "ran\n" || len(stderr) != 0 {
		t.Errorf("captured stdout %q, stderr %q; want only the run that started", stdout, stderr)
	}
}

// TestExecPhaseDropsEveryCapabilityOnTheThreadThatExecs runs the user
// helper many times, several at once: capabilities and no-new-privileges
// are per thread, so a helper whose goroutine moved to another OS thread
// between its prctl calls and the exec left a non-root phase with a full
// bounding set (seen in CI under load).
func TestExecPhaseDropsEveryCapabilityOnTheThreadThatExecs(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("the exec-phase helper's user switch needs root, as the runner has")
	}
	const runs, parallel = 120, 4
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for w := range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < runs; i += parallel {
				out, err := exec.Command(runnerBinary, execPhaseCommand, "--uid", "65534", "--gid", "65534", "--",
					"grep", "-E", "^(CapEff|CapPrm|CapBnd|NoNewPrivs):", "/proc/self/status").CombinedOutput()
				if err != nil {
					errs <- fmt.Errorf("run %d: %v: %s", i, err, out)
					continue
				}
				want := "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n"
				if string(out) != want {
					errs <- fmt.Errorf("run %d: the phase's process has\n%s\nwant\n%s", i, out, want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestResultSaysWhatTheSandboxEnforced: result.json lists what the image
// sandbox enforced (storage on its own filesystem, the agent phase's
// cgroup limits, the network namespaces), which the run's log shows.
func TestResultSaysWhatTheSandboxEnforced(t *testing.T) {
	r := runImageTrial(t, "true", testImage(t), Options{}, nil)
	var extra ResultExtra
	if err := json.Unmarshal(r.result.Extra[ResultExtraKey], &extra); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(extra.Limits, "\n")
	for _, want := range []string{"storage 10240 MB applied (platform default", "pids limit 1024 applied", "memory limit", "network: one network namespace for the trial (its pod's), each phase's mode applied at its start"} {
		if !strings.Contains(all, want) {
			t.Errorf("limits %q lack %q", extra.Limits, want)
		}
	}
}

// testMaskFile is the empty file a phase binds over /proc's masked files.
func testMaskFile(t testing.TB) string {
	t.Helper()
	path, err := confine.WriteMaskFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return path
}
