// Package executortest is the contract suite of executor.Executor, run
// against every isolation of the sandbox-runner the way containerd's
// snapshotter suite runs against every snapshotter: exit codes, the signal
// and the OOM flag of a typed exit, the environment, user and working
// directory, read-only and writable mounts, network modes, limits, and a
// tear-down that leaves no process behind.
package executortest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/runner/executor"
)

// Case is one isolation under test.
type Case struct {
	// Exec is the isolation's executor.
	Exec executor.Executor
	// Path is the PATH the processes get.
	Path string
	// DefaultUID is the uid a process with no User runs as.
	DefaultUID int
	// OtherUser is a User the isolation can run a process as, and OtherUID
	// its uid ("" skips the case: the isolation runs one user only).
	OtherUser string
	OtherUID  int
	// Skip names the cases the isolation cannot hold, each with why (the
	// gap shows in the test's output).
	Skip map[string]string
}

// Run runs the suite; newCase builds the isolation once per case.
func Run(t *testing.T, newCase func(t *testing.T) Case) {
	cases := []struct {
		name string
		run  func(t *testing.T, c Case)
	}{
		{"ExitZero", testExitZero},
		{"ExitCode", testExitCode},
		{"Signal", testSignal},
		{"Env", testEnv},
		{"Cwd", testCwd},
		{"User", testUser},
		{"Mounts", testMounts},
		{"NetworkNone", testNetworkNone},
		{"NetworkPublic", testNetworkPublic},
		{"MemoryLimit", testMemoryLimit},
		{"PidsLimit", testPidsLimit},
		{"Cancel", testCancel},
		{"TeardownLeavesNoProcess", testTeardown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCase(t)
			if why, ok := c.Skip[tc.name]; ok {
				t.Skipf("not held by this isolation: %s", why)
			}
			tc.run(t, c)
		})
	}
}

// run runs p with its output captured.
func run(t *testing.T, c Case, p executor.Process) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut syncBuffer
	p.Stdout, p.Stderr = &out, &errOut
	if p.Env == nil {
		p.Env = []string{"PATH=" + c.Path}
	}
	err = c.Exec.Run(t.Context(), p)
	return out.String(), errOut.String(), err
}

func sh(script string) []string { return []string{"sh", "-c", script} }

func mustSucceed(t *testing.T, c Case, p executor.Process) string {
	t.Helper()
	out, errOut, err := run(t, c, p)
	if err != nil {
		t.Fatalf("Run(%q) = %v, want success; stderr: %s", p.Args, err, errOut)
	}
	return strings.TrimSpace(out)
}

func exitError(t *testing.T, err error) *executor.ExitError {
	t.Helper()
	var ee *executor.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Run error = %v (%T), want an *executor.ExitError", err, err)
	}
	return ee
}

func testExitZero(t *testing.T, c Case) {
	if out := mustSucceed(t, c, executor.Process{Args: sh("echo ok")}); out != "ok" {
		t.Errorf("stdout = %q, want %q", out, "ok")
	}
}

func testExitCode(t *testing.T, c Case) {
	_, _, err := run(t, c, executor.Process{Args: sh("exit 7")})
	ee := exitError(t, err)
	if ee.Code != 7 || ee.Signal != 0 || ee.OOMKilled {
		t.Errorf("exit = %+v, want code 7, no signal, not OOM-killed", *ee)
	}
}

func testSignal(t *testing.T, c Case) {
	_, _, err := run(t, c, executor.Process{Args: sh("kill -KILL $$")})
	ee := exitError(t, err)
	if ee.Signal != syscall.SIGKILL || ee.Code != 128+int(syscall.SIGKILL) || ee.OOMKilled {
		t.Errorf("exit = %+v, want signal SIGKILL, code 137, not OOM-killed", *ee)
	}
}

func testEnv(t *testing.T, c Case) {
	t.Setenv("EXECUTORTEST_RUNNER_ONLY", "leaked")
	out := mustSucceed(t, c, executor.Process{
		Args: sh(`printf '%s|%s' "$GIVEN" "${EXECUTORTEST_RUNNER_ONLY-unset}"`),
		Env:  []string{"PATH=" + c.Path, "GIVEN=a value with spaces"},
	})
	if out != "a value with spaces|unset" {
		t.Errorf("environment = %q, want the given variable and none of the runner's", out)
	}
}

func testCwd(t *testing.T, c Case) {
	if out := mustSucceed(t, c, executor.Process{Args: sh("pwd"), Cwd: "/tmp"}); out != "/tmp" {
		t.Errorf("pwd = %q, want /tmp", out)
	}
}

func testUser(t *testing.T, c Case) {
	if out := mustSucceed(t, c, executor.Process{Args: sh("id -u")}); out != strconv.Itoa(c.DefaultUID) {
		t.Errorf("default user's uid = %s, want %d", out, c.DefaultUID)
	}
	if c.OtherUser == "" {
		t.Skip("the isolation runs its one user only")
	}
	if out := mustSucceed(t, c, executor.Process{Args: sh("id -u"), User: c.OtherUser}); out != strconv.Itoa(c.OtherUID) {
		t.Errorf("user %q's uid = %s, want %d", c.OtherUser, out, c.OtherUID)
	}
}

func testMounts(t *testing.T, c Case) {
	ro, rw := t.TempDir(), t.TempDir()
	for _, d := range []string{ro, rw} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ro, "given.txt"), []byte("from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustSucceed(t, c, executor.Process{
		Args: sh(`cat /mnt/ro/given.txt; echo; (echo x > /mnt/ro/written) 2>/dev/null && echo ro-writable || echo ro-refused; echo from-the-process > /mnt/rw/written && echo rw-written`),
		Mounts: []executor.Mount{
			{Source: ro, Target: "/mnt/ro", ReadOnly: true},
			{Source: rw, Target: "/mnt/rw"},
		},
	})
	if want := "from the host\nro-refused\nrw-written"; out != want {
		t.Errorf("mounts: output %q, want %q", out, want)
	}
	if _, err := os.Stat(filepath.Join(ro, "written")); err == nil {
		t.Error("a write through the read-only mount reached the host")
	}
	if got, err := os.ReadFile(filepath.Join(rw, "written")); err != nil || string(got) != "from-the-process\n" {
		t.Errorf("the writable mount's file on the host = %q, %v; want the process's write", got, err)
	}
}

// interfaces lists the network interfaces the process sees.
func interfaces(t *testing.T, c Case, n executor.Network) []string {
	t.Helper()
	out := mustSucceed(t, c, executor.Process{Args: sh(`tail -n +3 /proc/net/dev | cut -d: -f1`), Network: n})
	return strings.Fields(out)
}

func testNetworkNone(t *testing.T, c Case) {
	if got := interfaces(t, c, executor.Network{Mode: executor.NetworkNone}); len(got) != 1 || got[0] != "lo" {
		t.Errorf("interfaces with no network = %q, want loopback only", got)
	}
	if got := interfaces(t, c, executor.Network{}); len(got) != 1 || got[0] != "lo" {
		t.Errorf("interfaces with no mode given = %q, want loopback only (fail closed)", got)
	}
}

func testNetworkPublic(t *testing.T, c Case) {
	got := interfaces(t, c, executor.Network{Mode: executor.NetworkPublic})
	if len(got) < 2 {
		t.Errorf("interfaces with the public network = %q, want one besides loopback", got)
	}
}

func testMemoryLimit(t *testing.T, c Case) {
	// tail keeps its whole last line: 512 MB without a newline.
	_, errOut, err := run(t, c, executor.Process{Args: sh("head -c 512m /dev/zero | tail -n 1 >/dev/null"), Limits: executor.Limits{MemoryMB: 64}})
	ee := exitError(t, err)
	if !ee.OOMKilled {
		t.Errorf("exit = %+v, want OOMKilled past a 64 MB limit; stderr: %s", *ee, errOut)
	}
	if out := mustSucceed(t, c, executor.Process{Args: sh("echo fits"), Limits: executor.Limits{MemoryMB: 64}}); out != "fits" {
		t.Errorf("stdout under the limit = %q", out)
	}
}

func testPidsLimit(t *testing.T, c Case) {
	// dash gives up at the first failed fork (bash would retry for 30 s).
	out, _, err := run(t, c, executor.Process{
		Args:   sh(`i=0; while [ $i -lt 64 ]; do sleep 60 & i=$((i+1)); done; echo all-forked`),
		Limits: executor.Limits{Pids: 16},
	})
	if err == nil || strings.Contains(out, "all-forked") {
		t.Errorf("64 processes under a pids limit of 16: err %v, stdout %q; want a failed fork", err, out)
	}
}

func testCancel(t *testing.T, c Case) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := &signalWriter{marker: "started", fire: cancel}
	err := c.Exec.Run(ctx, executor.Process{Args: sh("echo started; exec sleep 300"), Env: []string{"PATH=" + c.Path}, Stdout: started})
	ee := exitError(t, err)
	if !errors.Is(err, context.Canceled) || ee.Code == 0 {
		t.Errorf("Run after cancel = %v (%+v), want an exit wrapping context.Canceled", err, *ee)
	}
}

func testTeardown(t *testing.T, c Case) {
	marker := fmt.Sprintf("executortest-%d-%d", os.Getpid(), time.Now().UnixNano())
	// A background process, outliving the process's own command.
	out := mustSucceed(t, c, executor.Process{Args: []string{"bash", "-c", "(exec -a " + marker + " sleep 300) >/dev/null 2>&1 & echo left"}})
	if out != "left" {
		t.Fatalf("stdout = %q", out)
	}
	if pids := processesNamed(marker); len(pids) > 0 {
		t.Errorf("processes %v of the run outlived Run", pids)
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// processesNamed lists the live processes whose argv[0] is name.
func processesNamed(name string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		if string(argv0) != name {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
				continue // a zombie: gone, not yet reaped
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// syncBuffer is a bytes.Buffer safe for the output copies' goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// signalWriter calls fire once its output holds marker.
type signalWriter struct {
	syncBuffer
	marker string
	once   sync.Once
	fire   func()
}

func (w *signalWriter) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if strings.Contains(w.String(), w.marker) {
		w.once.Do(w.fire)
	}
	return n, err
}
