// Package leftovercheck lists, for tests, what is left of sandboxes in a
// sandboxes dir: live processes that mention it (command line, working
// directory, mounts), loop devices backed by a file in it (as util-linux's
// losetup reports them) and the entries of the dir. It is deliberately
// broader and simpler than package leftovers, whose work it checks.
package leftovercheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Found is what is left: one line per process, loop device and entry.
type Found struct {
	Processes   []string
	LoopDevices []string
	Dirs        []string
}

// Empty reports whether nothing is left.
func (f Found) Empty() bool { return len(f.Processes)+len(f.LoopDevices)+len(f.Dirs) == 0 }

// Without drops the lines that mention s (a live sandbox's id, say).
func (f Found) Without(s string) Found {
	drop := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if !strings.Contains(l, s) {
				out = append(out, l)
			}
		}
		return out
	}
	return Found{Processes: drop(f.Processes), LoopDevices: drop(f.LoopDevices), Dirs: drop(f.Dirs)}
}

// StillIn returns what of f is still in now: the same processes (pid and
// command line), loop devices and dirs.
func (f Found) StillIn(now Found) Found {
	key := func(line string) string {
		pid, _, _ := strings.Cut(line, " (")
		_, args, _ := strings.Cut(line, "): ")
		args, _, _ = strings.Cut(args, " [cwd ")
		return pid + " " + args
	}
	keep := func(before, after []string, key func(string) string) []string {
		listed := map[string]bool{}
		for _, l := range after {
			listed[key(l)] = true
		}
		var out []string
		for _, l := range before {
			if listed[key(l)] {
				out = append(out, l)
			}
		}
		return out
	}
	same := func(l string) string { return l }
	return Found{Processes: keep(f.Processes, now.Processes, key), LoopDevices: keep(f.LoopDevices, now.LoopDevices, same),
		Dirs: keep(f.Dirs, now.Dirs, same)}
}

func (f Found) String() string {
	return fmt.Sprintf("%d processes %q, %d loop devices %q, %d dirs %q",
		len(f.Processes), f.Processes, len(f.LoopDevices), f.LoopDevices, len(f.Dirs), f.Dirs)
}

// Find lists what is left in sandboxesDir; the calling process itself is
// not listed.
func Find(tb testing.TB, sandboxesDir string) Found {
	tb.Helper()
	needle := filepath.Clean(sandboxesDir) + "/"
	var f Found
	entries, _ := filepath.Glob("/proc/[0-9]*")
	self := strconv.Itoa(os.Getpid())
	for _, dir := range entries {
		pid := filepath.Base(dir)
		if pid == self {
			continue
		}
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		// The state follows the ")" that ends the command name.
		if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
			continue
		}
		cmdline, _ := os.ReadFile(dir + "/cmdline")
		cwd, _ := os.Readlink(dir + "/cwd")
		mounts, _ := os.ReadFile(dir + "/mountinfo")
		var why []string
		if bytes.Contains(cmdline, []byte(needle)) {
			why = append(why, "command line")
		}
		if strings.HasPrefix(cwd+"/", needle) {
			why = append(why, "cwd")
		}
		if bytes.Contains(mounts, []byte(needle)) {
			why = append(why, "mounts")
		}
		if len(why) > 0 {
			args := strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")
			f.Processes = append(f.Processes, fmt.Sprintf("pid %s (%s): %s [cwd %s]", pid, strings.Join(why, ", "), args, cwd))
		}
	}
	out, err := exec.Command("losetup", "--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE").Output()
	if err != nil {
		tb.Fatalf("losetup --list: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, needle) {
			f.LoopDevices = append(f.LoopDevices, line)
		}
	}
	names, err := os.ReadDir(sandboxesDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		tb.Fatalf("list %s: %v", sandboxesDir, err)
	}
	for _, e := range names {
		f.Dirs = append(f.Dirs, e.Name())
	}
	return f
}
