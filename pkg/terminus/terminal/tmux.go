package terminal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Tmux is the terminal as the published Terminus-2 drives it: a tmux
// session of the image's own tmux, typed into with send-keys and read with
// capture-pane. It is the optional alternative to Terminal (terminus-2
// --terminal tmux).
type Tmux struct {
	bin, dir string
	settle   time.Duration
	shellPID int
	// beforeType is the history when keys were last typed: a change from
	// it answers them.
	beforeType string
}

// tmuxSession is the session's name on its private server.
const tmuxSession = "terminus"

// StartTmux starts a tmux server of its own (a socket in a new temporary
// directory) with one session running the shell.
func StartTmux(opts Options) (*Tmux, error) {
	bin, err := exec.LookPath("tmux")
	if err != nil {
		return nil, fmt.Errorf("tmux terminal: %w", err)
	}
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
	dir, err := os.MkdirTemp("", "terminus-tmux-")
	if err != nil {
		return nil, fmt.Errorf("tmux terminal: %w", err)
	}
	// history-limit applies to panes created after it is set: it goes in
	// the server's configuration, read before the session's pane exists.
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("set -g history-limit %d\nset -g status off\n", opts.Scrollback)), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("tmux terminal: %w", err)
	}
	t := &Tmux{bin: bin, dir: dir, settle: opts.Settle}
	args := append([]string{"-f", conf, "new-session", "-d", "-s", tmuxSession,
		"-x", strconv.Itoa(opts.Cols), "-y", strconv.Itoa(opts.Rows)}, shell...)
	cmd := t.command(args...)
	cmd.Dir = opts.Dir
	cmd.Env = opts.Env
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("tmux new-session: %v: %s", err, bytes.TrimSpace(out))
	}
	pid, err := t.run("display-message", "-p", "-t", tmuxSession, "#{pane_pid}")
	if err != nil {
		_ = t.Close()
		return nil, err
	}
	if t.shellPID, err = strconv.Atoi(strings.TrimSpace(pid)); err != nil {
		_ = t.Close()
		return nil, fmt.Errorf("tmux terminal: pane pid %q", pid)
	}
	return t, nil
}

func (t *Tmux) command(args ...string) *exec.Cmd {
	return exec.Command(t.bin, append([]string{"-S", filepath.Join(t.dir, "socket")}, args...)...)
}

func (t *Tmux) run(args ...string) (string, error) {
	out, err := t.command(args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("tmux %s: %v: %s", args[0], err, bytes.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("tmux %s: %w", args[0], err)
	}
	return string(out), nil
}

// Type sends keystrokes with tmux send-keys, which — as for the published
// agent — takes a string that is a key name as that key and anything else
// literally.
func (t *Tmux) Type(keystrokes string) error {
	if keystrokes == "" {
		return nil
	}
	t.beforeType = t.History()
	_, err := t.run("send-keys", "-t", tmuxSession, "--", keystrokes)
	return err
}

// Screen is the visible pane.
func (t *Tmux) Screen() string {
	out, _ := t.run("capture-pane", "-p", "-t", tmuxSession)
	return trimBlankTail(out)
}

// History is the pane's scrollback and screen.
func (t *Tmux) History() string {
	out, _ := t.run("capture-pane", "-p", "-S", "-", "-t", tmuxSession)
	return trimBlankTail(out)
}

// Exited reports whether the shell, and with it the session, has ended.
// (The shell's pid can outlive it as a zombie where nothing reaps orphans.)
func (t *Tmux) Exited() bool {
	_, err := t.run("has-session", "-t", tmuxSession)
	return err != nil
}

// pollInterval is how often Wait looks at the pane: tmux has no output
// events to wait on.
const pollInterval = 50 * time.Millisecond

// Wait waits up to max, ending early under the same rule as
// Terminal.Wait: the shell is the pane's foreground process group, the
// pane changed since keys were last typed, and it has not changed for the
// settle time.
func (t *Tmux) Wait(ctx context.Context, max time.Duration) time.Duration {
	start := time.Now()
	deadline := start.Add(max)
	last, lastChange, changed := t.beforeType, start, false
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return time.Since(start)
		case <-tick.C:
		}
		if t.Exited() {
			break
		}
		if h := t.History(); h != last {
			last, lastChange, changed = h, time.Now(), true
		}
		if changed && time.Since(lastChange) >= t.settle && t.shellInForeground() {
			break
		}
	}
	return time.Since(start)
}

// shellInForeground reads the foreground process group of the shell's
// terminal from /proc/<pid>/stat (its tpgid): the pane's tty cannot be
// asked directly, TIOCGPGRP answers only a terminal's own session.
func (t *Tmux) shellInForeground() bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", t.shellPID))
	if err != nil {
		return false
	}
	// pid (comm) state ppid pgrp session tty_nr tpgid …; comm may hold
	// spaces and parentheses, so count from the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 6 {
		return false
	}
	tpgid, err := strconv.Atoi(fields[5])
	return err == nil && tpgid == t.shellPID
}

// Close stops the tmux server and removes its directory.
func (t *Tmux) Close() error {
	_, err := t.run("kill-server")
	if t.Exited() {
		err = nil // the server ended with the shell's session
	}
	_ = os.RemoveAll(t.dir)
	return err
}

// WaitFor waits until cond holds for the pane's history (looked at every
// poll interval) or ctx ends, and reports whether it held.
func (t *Tmux) WaitFor(ctx context.Context, cond func(history string) bool) bool {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if cond(t.History()) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}
