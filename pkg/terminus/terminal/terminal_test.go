package terminal

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestKeys(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"ls -la\n", "ls -la\n"},
		{"C-c", "\x03"},
		{"c-C", "\x03"},
		{"^D", "\x04"},
		{"C-[", "\x1b"},
		{"Enter", "\r"},
		{"escape", "\x1b"},
		{"M-b", "\x1bb"},
		{"M-Enter", "\x1b\r"},
		{"Up", "\x1b[A"},
		{"F5", "\x1b[15~"},
		{"C-cat", "C-cat"},
		{"Enter\n", "Enter\n"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := string(Keys(tc.in)); got != tc.want {
			t.Errorf("Keys(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// term is what both terminals offer; the tests below run against each.
type term interface {
	Type(keystrokes string) error
	Wait(ctx context.Context, max time.Duration) time.Duration
	WaitFor(ctx context.Context, cond func(history string) bool) bool
	Screen() string
	History() string
	Exited() bool
	Close() error
}

var terminals = []struct {
	name  string
	start func(Options) (term, error)
}{
	{"pty", func(o Options) (term, error) { return Start(o) }},
	{"tmux", func(o Options) (term, error) { return StartTmux(o) }},
}

// eachTerminal runs test against the pty terminal and the tmux one.
func eachTerminal(t *testing.T, test func(t *testing.T, term term)) {
	for _, tc := range terminals {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "tmux" {
				if _, err := exec.LookPath("tmux"); err != nil {
					t.Fatalf("the tmux terminal's tests need tmux: apt-get install tmux (%v)", err)
				}
			}
			test(t, startBash(t, tc.start))
		})
	}
}

func startBash(t *testing.T, start func(Options) (term, error)) term {
	t.Helper()
	term, err := start(Options{Shell: []string{"bash", "--norc", "--noprofile", "-i"},
		Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "PS1=$ ", "HOME=" + t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = term.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if !term.WaitFor(ctx, func(h string) bool { return strings.HasSuffix(h, "$") }) {
		t.Fatalf("no prompt; screen:\n%s", term.Screen())
	}
	return term
}

func TestTerminalRunsCommands(t *testing.T) { eachTerminal(t, testRunsCommands) }

func testRunsCommands(t *testing.T, term term) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := term.Type("printf 'a\\rb%s\\n' done\n"); err != nil {
		t.Fatal(err)
	}
	// The terminal applies the carriage return: "a" is overwritten.
	if !term.WaitFor(ctx, func(h string) bool { return strings.Contains(h, "\nbdone\n") }) {
		t.Fatalf("output never appeared; history:\n%s", term.History())
	}
	// A command that finished with the shell back in the foreground ends
	// a long wait early.
	if err := term.Type("echo second\n"); err != nil {
		t.Fatal(err)
	}
	if waited := term.Wait(ctx, time.Minute); waited >= time.Minute {
		t.Errorf("Wait = %v, want an early end at the prompt", waited)
	}
	if h := term.History(); !strings.Contains(h, "\nsecond\n$") {
		t.Errorf("history after the wait:\n%s", h)
	}
	// A shell that exits is seen to.
	if err := term.Type("exit\n"); err != nil {
		t.Fatal(err)
	}
	term.Wait(ctx, 10*time.Second)
	if !term.Exited() {
		t.Errorf("the shell typed exit but is still there")
	}
}

func TestTerminalInterruptAndScrollback(t *testing.T) { eachTerminal(t, testInterruptAndScrollback) }

func testInterruptAndScrollback(t *testing.T, term term) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The job prints once it runs in the foreground, so C-c cannot reach
	// the shell before the job has started.
	if err := term.Type("sh -c 'echo started; exec sleep 600'\n"); err != nil {
		t.Fatal(err)
	}
	if !term.WaitFor(ctx, func(h string) bool { return strings.HasSuffix(h, "\nstarted") }) {
		t.Fatalf("no echo; history:\n%s", term.History())
	}
	if err := term.Type("C-c"); err != nil {
		t.Fatal(err)
	}
	if !term.WaitFor(ctx, func(h string) bool { return strings.HasSuffix(h, "^C\n$") }) {
		t.Fatalf("C-c did not interrupt; history:\n%s", term.History())
	}
	// More lines than the screen holds go to the scrollback, and History
	// keeps them all.
	if err := term.Type("seq 1 100\n"); err != nil {
		t.Fatal(err)
	}
	if !term.WaitFor(ctx, func(h string) bool { return strings.HasSuffix(h, "100\n$") }) {
		t.Fatalf("seq output missing; history:\n%s", term.History())
	}
	h := term.History()
	for i := 1; i <= 100; i++ {
		if !strings.Contains(h, fmt.Sprintf("\n%d\n", i)) {
			t.Fatalf("history lacks line %d:\n%s", i, h)
		}
	}
	if s := term.Screen(); strings.Contains(s, "\n1\n") || len(strings.Split(s, "\n")) > DefaultRows {
		t.Errorf("screen holds more than %d rows:\n%s", DefaultRows, s)
	}
}
