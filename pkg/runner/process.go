package runner

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gauntlet-bench/gauntlet/pkg/confine"
)

// prctl options (linux/prctl.h).
const (
	prSetPdeathsig      = 1
	prSetDumpable       = 4
	prCapBSetDrop       = 24
	prSetChildSubreaper = 36
	prSetNoNewPrivs     = 38
)

// rootPhaseDroppedCaps leave the bounding set of a phase that runs as root
// (the verifier under container isolation): with them it could read the
// runner's memory and environment (CAP_SYS_PTRACE), remount or escape
// (CAP_SYS_ADMIN), or reach the kernel and raw devices.
var rootPhaseDroppedCaps = []uintptr{
	16, // CAP_SYS_MODULE
	17, // CAP_SYS_RAWIO
	19, // CAP_SYS_PTRACE
	21, // CAP_SYS_ADMIN
}

func prctl(option int, arg uintptr) error {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, uintptr(option), arg, 0, 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// execPhase is the exec-phase helper: it runs as the phase's user (the
// runner started it with the agent's credentials, or as root for the
// verifier), sets no-new-privileges so no setuid binary of the image can
// give the phase back root, drops the dangerous capabilities of a root
// phase, and execs the phase's command with the environment it was given.
func execPhase(args []string, stderr io.Writer) int {
	// Capabilities and no-new-privileges belong to a thread, not the
	// process: every prctl below and the exec must run on one OS thread,
	// or the exec'ing thread keeps what another thread dropped.
	runtime.LockOSThread()
	fs := flag.NewFlagSet(execPhaseCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dropCaps := fs.Bool("drop-caps", false, "drop "+capNames+" from the bounding set")
	uid := fs.Int("uid", -1, "become this uid (and drop every capability) before the exec")
	gid := fs.Int("gid", -1, "with --uid: become this gid")
	groups := fs.String("groups", "", "with --uid: comma-separated supplementary gids")
	dockerCaps := fs.Bool("docker-caps", false, "keep only Docker's default capabilities in the bounding set")
	nproc := fs.Int("nproc", 0, "set RLIMIT_NPROC (the most processes of the phase's real uid) to this before the exec")
	startedFD := fs.Int("started-fd", -1, "write one byte to this fd (and close it) once the sandbox is set up, just before the exec")
	seccompFD := fs.Int("seccomp-fd", -1, "read a seccomp program (struct sock_filter array) from this fd and load it just before the exec")
	chdir := fs.String("chdir", "", "change to this directory before the exec")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: sandbox-runner exec-phase [--drop-caps | --docker-caps] [--uid N --gid G [--groups A,B]] [--nproc N] [--chdir DIR] [--seccomp-fd N] [--started-fd N] -- program args...")
		return 127
	}
	var filter []byte
	if *seccompFD >= 0 {
		// Read before anything is dropped: the fd is the runner's pipe.
		f := os.NewFile(uintptr(*seccompFD), "seccomp")
		data, err := io.ReadAll(io.LimitReader(f, 1<<20))
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "sandbox-runner exec-phase: read the seccomp filter: %v\n", err)
			return 127
		}
		filter = data
	}
	if err := prctl(prSetNoNewPrivs, 1); err != nil {
		fmt.Fprintf(stderr, "sandbox-runner exec-phase: set no-new-privileges: %v\n", err)
		return 127
	}
	// The inheritable set is not the bounding set's to limit: a process
	// entered with setns (not bwrap's child) keeps the one it came with,
	// and a file's inheritable capabilities would pick from it at the exec.
	if err := setCapabilities(nil, true); err != nil {
		fmt.Fprintf(stderr, "sandbox-runner exec-phase: %v\n", err)
		return 127
	}
	if *dropCaps {
		for _, c := range rootPhaseDroppedCaps {
			if err := prctl(prCapBSetDrop, c); err != nil && !errors.Is(err, syscall.EINVAL) {
				fmt.Fprintf(stderr, "sandbox-runner exec-phase: drop capability %d: %v\n", c, err)
				return 127
			}
		}
	}
	if *dockerCaps {
		for c := uintptr(0); c <= 63; c++ {
			if slices.Contains(dockerDefaultCapNums, c) {
				continue
			}
			if err := prctl(prCapBSetDrop, c); err != nil && !errors.Is(err, syscall.EINVAL) {
				fmt.Fprintf(stderr, "sandbox-runner exec-phase: drop capability %d: %v\n", c, err)
				return 127
			}
		}
		// Entered into a running sandbox by a root runner, the helper holds
		// every capability: keep only Docker's (bwrap's child got them
		// from bwrap; this makes them the same either way).
		if err := setCapabilities(dockerDefaultCapNums, false); err != nil {
			fmt.Fprintf(stderr, "sandbox-runner exec-phase: %v\n", err)
			return 127
		}
	}
	if *uid >= 0 {
		if err := becomeUser(*uid, *gid, *groups); err != nil {
			fmt.Fprintf(stderr, "sandbox-runner exec-phase: %v\n", err)
			return 127
		}
	}
	if *nproc > 0 {
		// The kernel counts every process (thread) of the real uid against
		// it at fork; it does not bind root or CAP_SYS_RESOURCE, so it is a
		// limit only for an unprivileged, dedicated uid (the agent's).
		lim := unix.Rlimit{Cur: uint64(*nproc), Max: uint64(*nproc)}
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
			fmt.Fprintf(stderr, "sandbox-runner exec-phase: set RLIMIT_NPROC %d: %v\n", *nproc, err)
			return 127
		}
	}
	if *chdir != "" {
		if err := os.Chdir(*chdir); err != nil {
			fmt.Fprintf(stderr, "sandbox-runner exec-phase: %v\n", err)
			return 127
		}
	}
	if filter != nil {
		// The last step before the exec: the filter refuses much of what
		// the steps above needed.
		if err := confine.InstallSeccomp(filter); err != nil {
			fmt.Fprintf(stderr, "sandbox-runner exec-phase: %v\n", err)
			return 127
		}
	}
	if *startedFD >= 0 {
		// From here on a failure is the phase's own (its program), not
		// the sandbox's: the runner tells the two apart by this byte.
		started := os.NewFile(uintptr(*startedFD), "started")
		_, _ = started.Write([]byte{1})
		started.Close()
	}
	path, err := exec.LookPath(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "sandbox-runner exec-phase: %v\n", err)
		return 127
	}
	err = syscall.Exec(path, fs.Args(), os.Environ())
	fmt.Fprintf(stderr, "sandbox-runner exec-phase: exec %s: %v\n", path, err)
	return 127
}

// becomeUser empties the capability bounding set, then sets the
// supplementary groups, gid and uid (all three of each): with every uid
// non-zero the kernel clears the permitted and effective capabilities, and
// no-new-privileges (set before) keeps setuid binaries from restoring them.
func becomeUser(uid, gid int, groups string) error {
	if uid <= 0 || gid < 0 {
		return fmt.Errorf("--uid %d --gid %d: want a non-root uid and a gid", uid, gid)
	}
	gids := []int{}
	for _, g := range strings.Split(groups, ",") {
		if g == "" {
			continue
		}
		n, err := strconv.Atoi(g)
		if err != nil {
			return fmt.Errorf("--groups %q: %w", groups, err)
		}
		gids = append(gids, n)
	}
	for c := uintptr(0); c <= 63; c++ {
		if err := prctl(prCapBSetDrop, c); err != nil && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := syscall.Setgroups(gids); err != nil {
		return fmt.Errorf("set groups: %w", err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("set gid %d: %w", gid, err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("set uid %d: %w", uid, err)
	}
	return nil
}

// setCapabilities narrows the thread's effective and permitted sets to
// keep (nil: leaves them) and empties its inheritable set when
// clearInheritable or keep is given. Capabilities not held are not added.
func setCapabilities(keep []uintptr, clearInheritable bool) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	if keep != nil {
		var mask [2]uint32
		for _, c := range keep {
			mask[c/32] |= 1 << (c % 32)
		}
		for i := range data {
			data[i].Effective &= mask[i]
			data[i].Permitted &= mask[i]
		}
	}
	if clearInheritable || keep != nil {
		for i := range data {
			data[i].Inheritable = 0
		}
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("set capabilities: %w", err)
	}
	return nil
}

const capNames = "CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_PTRACE and CAP_SYS_ADMIN"

// killAll is the kill-all helper: started under the agent's uid, it sends
// SIGKILL to every process that uid may signal, i.e. all of the agent's. The
// kernel walks the process list under a lock that fork also takes, so no
// process forked meanwhile escapes.
func killAll(stderr io.Writer) int {
	if os.Getuid() == 0 {
		fmt.Fprintln(stderr, "sandbox-runner kill-all: refusing to run as root")
		return 2
	}
	if err := syscall.Kill(-1, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		fmt.Fprintf(stderr, "sandbox-runner kill-all: %v\n", err)
		return 1
	}
	return 0
}

// hardenRunner makes the runner's process non-dumpable (its /proc files and
// memory then need CAP_SYS_PTRACE, which no phase has, even as the same
// uid) and overwrites the values of the sensitive variables in its original
// environment block, which /proc/<pid>/environ shows (os.Unsetenv only edits
// Go's copy). It reports what it could not do; neither failure stops the
// runner, since another uid cannot read that block anyway.
func hardenRunner(sensitive func(key string) bool) []string {
	var notes []string
	if err := prctl(prSetDumpable, 0); err != nil {
		notes = append(notes, fmt.Sprintf("could not make the runner non-dumpable: %v", err))
	}
	if n, err := scrubEnvironBlock(sensitive); err != nil {
		notes = append(notes, fmt.Sprintf("could not scrub %d sensitive variables from /proc/self/environ: %v", n, err))
	}
	return notes
}

// scrubEnvironBlock overwrites, in the process's original environment block
// (the memory /proc/self/environ reads), the value of every variable
// sensitive names with NUL bytes. Go copied the environment at start-up, so
// nothing in the program reads that block again.
func scrubEnvironBlock(sensitive func(key string) bool) (int, error) {
	start, end, err := environBounds()
	if err != nil {
		return 0, err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, start); err != nil {
		return 0, fmt.Errorf("read environment block: %w", err)
	}
	scrubbed := 0
	offset := 0
	for _, entry := range bytes.Split(block, []byte{0}) {
		key, value, ok := bytes.Cut(entry, []byte("="))
		if ok && len(value) > 0 && sensitive(string(key)) {
			at := start + int64(offset+len(key)+1)
			if _, err := mem.WriteAt(make([]byte, len(value)), at); err != nil {
				return scrubbed + 1, fmt.Errorf("overwrite %s: %w", key, err)
			}
			scrubbed++
		}
		offset += len(entry) + 1
	}
	return scrubbed, nil
}

// environBounds reads env_start and env_end (fields 50 and 51) of /proc/self/stat.
func environBounds() (start, end int64, err error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command name, which may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, errors.New("unreadable /proc/self/stat")
	}
	fields := strings.Fields(string(stat[i+1:])) // fields[0] is field 3
	if len(fields) < 49 {
		return 0, 0, errors.New("/proc/self/stat lacks env_start and env_end (Linux < 3.5)")
	}
	start, err1 := strconv.ParseInt(fields[47], 10, 64)
	end, err2 := strconv.ParseInt(fields[48], 10, 64)
	if err1 != nil || err2 != nil || end < start || start == 0 {
		return 0, 0, errors.New("unreadable env_start and env_end in /proc/self/stat")
	}
	return start, end, nil
}
