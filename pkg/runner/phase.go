package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxCapturedOutput bounds each captured stdout/stderr file of a phase.
const maxCapturedOutput = 16 << 20

// waitDelay is how long a phase's output pipes may stay open after its main
// process ended (a background process holding them) before they are closed.
const waitDelay = 2 * time.Second

// phase is one sandboxed step of a trial: install, agent or verifier.
type phase struct {
	name    string
	cmd     phaseCommand
	timeout time.Duration // 0 = none
	cgroup  *cgroup       // resource limits; nil = none
	watch   *memWatch     // samples the phase's memory use; nil = none
	stdout  string        // host path the phase's stdout is written to
	stderr  string
}

// phaseOutcome is how a phase ended.
type phaseOutcome struct {
	StartedAt, FinishedAt time.Time
	ExitCode              int // -1 when killed by a signal or not started
	// Signal is the signal that killed the phase's process (0 = none).
	Signal   syscall.Signal
	TimedOut bool
	// Canceled reports that the runner itself was asked to stop.
	Canceled bool
	// OOMKills counts the phase's processes the kernel killed for its
	// memory limit.
	OOMKills int
	// Memory says whose processes used the memory when OOMKills > 0 or
	// the phase was starved (the agent phase, where a memory cgroup was
	// watched); nil otherwise.
	Memory *MemoryReport
	// Starved is set when the runner ended the phase as memory-starved
	// (memstarve.go).
	Starved *Starvation
	// SetupRetries are the sandbox's own failures (bubblewrap failing to
	// set up, before the phase's command ran) that the phase was started
	// again after.
	SetupRetries []string
}

// setupAttempts bounds how often a phase is started when its sandbox fails
// to set up: nothing of the phase has run then, so starting it again is
// safe, and a transient kernel failure (bwrap's loopback setup in a new
// network namespace, seen failing with ECHILD under load) costs a few ms
// instead of a whole attempt.
const setupAttempts = 3

// errSandboxSetup marks a phase whose sandbox never got as far as its
// command: the platform's failure, never the agent's or the verifier's.
var errSandboxSetup = errors.New("the sandbox failed to set up before the phase's command ran")

// launched is a phase's process as it was started.
type launched struct {
	cmd *exec.Cmd
	// release frees what the start set up beside the process (its network).
	release func()
	// ran reports, once cmd has exited, whether the phase's own command
	// ever began; nil means the start cannot tell, and it did.
	ran func() bool
	// lingers: the environment outlives the phase (a pod, a container),
	// so what the phase started in the background keeps running when its
	// command exits, as after `docker exec`; only a timeout or the
	// runner's stop kills the phase's process group.
	lingers bool
}

// runPhase runs p under iso and waits for it. The error reports only that the
// phase could not be run at all; a non-zero exit or a timeout is an outcome.
func runPhase(ctx context.Context, iso isolation, p phase) (phaseOutcome, error) {
	out := phaseOutcome{ExitCode: -1}
	stdout, err := newCappedFile(p.stdout, maxCapturedOutput)
	if err != nil {
		return out, fmt.Errorf("%s phase: %w", p.name, err)
	}
	defer stdout.Close()
	stderr, err := newCappedFile(p.stderr, maxCapturedOutput)
	if err != nil {
		return out, fmt.Errorf("%s phase: %w", p.name, err)
	}
	defer stderr.Close()

	phaseCtx, cancel := ctx, context.CancelFunc(func() {})
	if p.timeout > 0 {
		phaseCtx, cancel = context.WithTimeout(ctx, p.timeout)
	}
	defer cancel()
	if testHookPhaseContext != nil {
		phaseCtx = testHookPhaseContext(p.name, phaseCtx)
	}

	out.StartedAt = time.Now().UTC()
	for attempt := 1; ; attempt++ {
		ran, err := waitPhase(ctx, phaseCtx, iso, p, stdout, stderr, &out)
		var failure string
		switch {
		case errors.Is(err, errSandboxSetup):
			// bwrap died before it reported its sandbox.
			failure = fmt.Sprintf("%v: %s", err, lastLine(p.stderr))
		case err != nil:
			return out, err
		case ran || out.TimedOut || out.Canceled:
			return out, nil
		default:
			failure = fmt.Sprintf("exit code %d: %s", out.ExitCode, lastLine(p.stderr))
		}
		if attempt == setupAttempts {
			return out, fmt.Errorf("%s phase: %w (%d tries; the last: %s)", p.name, errSandboxSetup, attempt, failure)
		}
		out.SetupRetries = append(out.SetupRetries, failure)
		if err := errors.Join(stdout.reset(), stderr.reset()); err != nil {
			return out, fmt.Errorf("%s phase: %w", p.name, err)
		}
	}
}

// testHookPhaseContext, when set (by tests only), may replace a phase's
// context: a test ends the agent phase through the timeout's own path once
// the mock model is in the state it waits for, rather than after a time.
var testHookPhaseContext func(phase string, ctx context.Context) context.Context

// waitPhase starts p once and waits for it, filling out's exit; ran
// reports whether the phase's command began.
func waitPhase(ctx, phaseCtx context.Context, iso isolation, p phase, stdout, stderr io.Writer, out *phaseOutcome) (ran bool, err error) {
	l, err := startPhase(iso, p, stdout, stderr)
	if err != nil {
		out.FinishedAt = time.Now().UTC()
		return false, fmt.Errorf("%s phase: %w", p.name, err)
	}
	defer l.release()
	cmd := l.cmd
	p.watch.begin(cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-phaseCtx.Done():
		p.watch.end() // before the kill, which is no memory's doing
		killGroup(cmd.Process.Pid)
		p.cgroup.killAll()
		waitErr = <-done
		out.TimedOut = errors.Is(phaseCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		out.Canceled = ctx.Err() != nil
	case <-p.watch.starved():
		// Crawling below its memory need: ended as the timeout would.
		p.watch.end()
		killGroup(cmd.Process.Pid)
		p.cgroup.killAll()
		waitErr = <-done
		out.Starved = p.watch.starvedBy()
	}
	p.watch.end()
	if !l.lingers {
		// Whatever the phase left behind in its process group goes too.
		killGroup(cmd.Process.Pid)
	}
	out.FinishedAt = time.Now().UTC()
	out.ExitCode = exitCode(waitErr)
	out.Signal = signalOf(waitErr)
	ran = l.ran == nil || l.ran()
	if waitErr != nil && out.ExitCode == -1 && !out.TimedOut && !out.Canceled && !isSignaled(waitErr) {
		return ran, fmt.Errorf("%s phase: wait: %w", p.name, waitErr)
	}
	return ran, nil
}

// lastLine is the last non-empty line of the file at path (a phase's
// captured stderr, where bubblewrap says why it failed), bounded.
func lastLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(stderr unreadable: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if line == "" {
		return "(no output)"
	}
	return clipLine(line, 300)
}

// clipLine bounds a line to about n bytes, cutting after its last whole
// word within them (never inside a UTF-8 sequence) and saying it was cut
// with "…".
func clipLine(line string, n int) string {
	if len(line) <= n {
		return line
	}
	cut := line[:n]
	for len(cut) > 0 && !utf8.RuneStart(line[len(cut)]) {
		cut = cut[:len(cut)-1] // back off to the start of the rune the cut went through
	}
	if i := strings.LastIndexFunc(cut, unicode.IsSpace); i > 0 {
		cut = cut[:i]
	}
	return strings.TrimRightFunc(cut, unicode.IsSpace) + "…"
}

// startPhase starts p's process: through the isolation when it starts
// phases itself, else as the isolation's command joined to p's cgroups.
// release frees what the start set up beside the process (its network).
func startPhase(iso isolation, p phase, stdout, stderr io.Writer) (launched, error) {
	if l, ok := iso.(launcher); ok {
		return l.launch(p.cmd, p.cgroup, stdout, stderr)
	}
	cmd, err := iso.command(p.cmd)
	if err != nil {
		return launched{}, err
	}
	prepareProcess(cmd)
	p.cgroup.wrap(cmd)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		return launched{}, fmt.Errorf("start: %w", err)
	}
	return launched{cmd: cmd, release: func() {}}, nil
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode() // -1 when killed by a signal
	}
	return -1
}

// signalOf is the signal that ended the process err reports on (0 = it
// exited, or never ran).
func signalOf(err error) syscall.Signal {
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return 0
	}
	if status, ok := exitErr.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		return status.Signal()
	}
	return 0
}

func isSignaled(err error) bool {
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return false
	}
	status, ok := exitErr.Sys().(syscall.WaitStatus)
	return ok && status.Signaled()
}

// cappedFile writes at most limit bytes to a file and discards the rest, so a
// chatty agent cannot fill the disk through its stdout. Writes may come
// from a copy that outlives the phase (a background process still holding
// a pod phase's output): they are kept within the cap, and dropped once
// the file is closed.
type cappedFile struct {
	mu        sync.Mutex
	closed    bool
	f         *os.File
	limit     int64
	remaining int64
	truncated bool
}

func newCappedFile(path string, limit int64) (*cappedFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create output file: %w", err)
	}
	return &cappedFile{f: f, limit: limit, remaining: limit}, nil
}

func (c *cappedFile) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if c.closed {
		return n, nil
	}
	if int64(len(p)) > c.remaining {
		p = p[:c.remaining]
		if !c.truncated {
			c.truncated = true
		}
	}
	if len(p) > 0 {
		w, err := c.f.Write(p)
		c.remaining -= int64(w)
		if err != nil {
			return w, err
		}
	}
	return n, nil
}

// reset empties the file for a new start of the phase.
func (c *cappedFile) reset() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.f.Truncate(0); err != nil {
		return fmt.Errorf("reset output file: %w", err)
	}
	if _, err := c.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reset output file: %w", err)
	}
	c.remaining = c.limit
	c.truncated = false
	return nil
}

func (c *cappedFile) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.truncated {
		_, _ = io.WriteString(c.f, "\n[output truncated by the runner]\n")
	}
	return c.f.Close()
}
