// Package terminal is the real terminal terminus-2 types into: a shell on a
// pseudo-terminal (github.com/creack/pty) whose output feeds a terminal
// screen emulator (github.com/charmbracelet/x/vt) with scrollback, so the
// agent sees what a person at a 160×40 terminal would see — cursor
// movement, carriage returns, clears and full-screen programs included —
// rather than a raw byte stream.
package terminal

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

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Defaults of Options.
const (
	DefaultCols       = 160
	DefaultRows       = 40
	DefaultScrollback = 20000
	// DefaultSettle is how long the output must stay quiet, with the shell
	// in the foreground again, before Wait ends a wait early.
	DefaultSettle = 150 * time.Millisecond
)

// Options configures Start.
type Options struct {
	// Shell is the program and its arguments; nil runs bash interactively.
	Shell []string
	// Dir is the shell's working directory ("" = the current one).
	Dir string
	// Env is the shell's environment (nil = this process's), with TERM set
	// to xterm-256color, which the emulator understands.
	Env []string
	// Cols, Rows and Scrollback size the screen (0 = the defaults).
	Cols, Rows, Scrollback int
	// Settle overrides DefaultSettle.
	Settle time.Duration
}

// Terminal is a running shell on a pty and the screen it draws.
type Terminal struct {
	cmd    *exec.Cmd
	master *os.File
	settle time.Duration

	mu         sync.Mutex
	emu        *vt.Emulator
	lastOutput time.Time
	outputs    uint64 // chunks of output read so far
	// outputsAtSend is outputs when keys were last sent: output after it
	// answers them.
	outputsAtSend uint64
	changed       chan struct{}

	input chan []byte // keystrokes queued for the writer
	done  chan struct{}
	exit  error
}

// Start starts the shell on a new pty.
func Start(opts Options) (*Terminal, error) {
	if opts.Cols <= 0 {
		opts.Cols = DefaultCols
	}
	if opts.Rows <= 0 {
		opts.Rows = DefaultRows
	}
	if opts.Scrollback <= 0 {
		opts.Scrollback = DefaultScrollback
	}
	if opts.Settle <= 0 {
		opts.Settle = DefaultSettle
	}
	shell := opts.Shell
	if len(shell) == 0 {
		shell = []string{"bash", "-i"}
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	env = setEnv(env, "TERM", "xterm-256color")
	env = setEnv(env, "COLUMNS", fmt.Sprint(opts.Cols))
	env = setEnv(env, "LINES", fmt.Sprint(opts.Rows))

	cmd := exec.Command(shell[0], shell[1:]...)
	cmd.Dir = opts.Dir
	cmd.Env = env
	master, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(opts.Cols), Rows: uint16(opts.Rows)})
	if err != nil {
		return nil, fmt.Errorf("start %s on a pty: %w", shell[0], err)
	}
	emu := vt.NewEmulator(opts.Cols, opts.Rows)
	emu.SetScrollbackSize(opts.Scrollback)
	t := &Terminal{cmd: cmd, master: master, settle: opts.Settle, emu: emu,
		changed: make(chan struct{}), input: make(chan []byte, 64), done: make(chan struct{})}
	go t.readOutput()
	go t.answerQueries()
	go t.writeInput()
	go func() {
		t.exit = cmd.Wait()
		close(t.done)
	}()
	return t, nil
}

func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// readOutput feeds everything the shell prints into the emulator.
func (t *Terminal) readOutput() {
	buf := make([]byte, 32<<10)
	for {
		n, err := t.master.Read(buf)
		if n > 0 {
			t.mu.Lock()
			_, _ = t.emu.Write(buf[:n])
			t.lastOutput = time.Now()
			t.outputs++
			close(t.changed)
			t.changed = make(chan struct{})
			t.mu.Unlock()
		}
		if err != nil {
			return // EIO once the shell and every process on the pty are gone
		}
	}
}

// answerQueries sends the emulator's answers to terminal queries (cursor
// position, device attributes) back to the shell, as a real terminal does;
// programs such as readline block waiting for them otherwise.
func (t *Terminal) answerQueries() {
	buf := make([]byte, 4096)
	for {
		n, err := t.emu.Read(buf)
		if n > 0 {
			t.queue(append([]byte(nil), buf[:n]...))
		}
		if err != nil {
			return
		}
	}
}

// writeInput writes queued keystrokes to the pty in order. Writing happens
// off the caller's goroutine because a pty accepts only a few kilobytes
// that the program has not read yet.
func (t *Terminal) writeInput() {
	for {
		select {
		case b := <-t.input:
			if _, err := t.master.Write(b); err != nil {
				return
			}
		case <-t.done:
			return
		}
	}
}

func (t *Terminal) queue(b []byte) {
	select {
	case t.input <- b:
	case <-t.done:
	}
}

// Send types keystrokes: the bytes reach the shell exactly as given.
func (t *Terminal) Send(keys []byte) error {
	select {
	case <-t.done:
		return t.exitError()
	default:
	}
	if len(keys) > 0 {
		t.mu.Lock()
		t.outputsAtSend = t.outputs
		t.mu.Unlock()
		t.queue(append([]byte(nil), keys...))
	}
	return nil
}

// Type types a keystrokes string: a key name as that key, anything else
// literally (Keys).
func (t *Terminal) Type(keystrokes string) error {
	return t.Send(Keys(keystrokes))
}

func (t *Terminal) exitError() error {
	if t.exit != nil {
		return fmt.Errorf("the terminal's shell has exited: %w", t.exit)
	}
	return errors.New("the terminal's shell has exited")
}

// Exited reports whether the shell has ended.
func (t *Terminal) Exited() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// Screen is the visible screen as text, trailing blank lines dropped.
func (t *Terminal) Screen() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return trimBlankTail(t.emu.String())
}

// History is the scrollback followed by the visible screen, as text. While
// a full-screen program holds the alternate screen, History shows that
// screen after the main scrollback.
func (t *Terminal) History() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for _, line := range t.emu.Scrollback().Lines() {
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	b.WriteString(t.emu.String())
	return trimBlankTail(b.String())
}

func trimBlankTail(s string) string {
	return strings.TrimRight(s, " \n")
}

// Wait waits up to max after keystrokes were sent. It ends early once the
// command line is idle again: the shell is the pty's foreground process
// group (no job is running), output has arrived since the keys were sent, and
// nothing more has come for the settle time. A program that reads the
// terminal itself (an editor, a REPL, a pager) keeps the full wait, as does
// a command whose keystrokes produced no output at all. It returns the
// time waited.
func (t *Terminal) Wait(ctx context.Context, max time.Duration) time.Duration {
	start := time.Now()
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	t.mu.Lock()
	seenAtStart := t.outputsAtSend
	t.mu.Unlock()
	for {
		t.mu.Lock()
		changed, outputs, last := t.changed, t.outputs, t.lastOutput
		t.mu.Unlock()
		var settle <-chan time.Time
		var timer *time.Timer
		if outputs > seenAtStart {
			quiet := time.Since(last)
			if quiet >= t.settle && t.shellInForeground() {
				return time.Since(start)
			}
			wait := t.settle - quiet
			if wait <= 0 {
				// The shell is not in the foreground: look again later.
				wait = t.settle
			}
			timer = time.NewTimer(wait)
			settle = timer.C
		}
		stop := false
		select {
		case <-ctx.Done():
			stop = true
		case <-deadline.C:
			stop = true
		case <-t.done:
			stop = true
		case <-changed:
		case <-settle:
		}
		if timer != nil {
			timer.Stop()
		}
		if stop {
			return time.Since(start)
		}
	}
}

// shellInForeground reports whether the pty's foreground process group is
// the shell's own, i.e. no job started from the command line is running.
func (t *Terminal) shellInForeground() bool {
	// SyscallConn rather than Fd: Fd would switch the pty to blocking
	// mode under the reader goroutine.
	rc, err := t.master.SyscallConn()
	if err != nil {
		return false
	}
	pgrp, ioctlErr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) {
		pgrp, ioctlErr = unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
	}); err != nil || ioctlErr != nil {
		return false
	}
	return pgrp == t.cmd.Process.Pid
}

// Close ends the shell and everything it started in its session and
// releases the pty.
func (t *Terminal) Close() error {
	if t.cmd.Process != nil {
		// The shell leads its own session and process group (pty.Start
		// sets Setsid); jobs it started have groups of their own, which
		// the hang-up of the terminal reaches.
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGHUP)
		_ = t.cmd.Process.Signal(syscall.SIGHUP)
	}
	select {
	case <-t.done:
	case <-time.After(2 * time.Second):
		_ = t.cmd.Process.Kill()
		<-t.done
	}
	// Closing the emulator's answer pipe ends answerQueries; Emulator.Close
	// would set a flag that its Read reads without a lock.
	if c, ok := t.emu.InputPipe().(io.Closer); ok {
		_ = c.Close()
	}
	err := t.master.Close()
	if errors.Is(err, os.ErrClosed) || errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// WaitFor waits until cond holds for the terminal's history (checked after
// every chunk of output) or ctx ends, and reports whether it held.
func (t *Terminal) WaitFor(ctx context.Context, cond func(history string) bool) bool {
	for {
		t.mu.Lock()
		changed := t.changed
		t.mu.Unlock()
		if cond(t.History()) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.done:
			return cond(t.History())
		case <-changed:
		}
	}
}
