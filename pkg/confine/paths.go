package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MaskedPaths are the paths runc hides in a Docker container by default
// (moby's oci.DefaultLinuxSpec): a file is covered by an empty file, a
// directory by an empty read-only tmpfs. They expose the host's kernel
// memory, keyrings, timers and hardware.
var MaskedPaths = []string{
	"/proc/acpi",
	"/proc/asound",
	"/proc/interrupts",
	"/proc/kcore",
	"/proc/keys",
	"/proc/latency_stats",
	"/proc/sched_debug",
	"/proc/scsi",
	"/proc/timer_list",
	"/proc/timer_stats",
	"/sys/devices/virtual/powercap",
	"/sys/firmware",
}

// ReadonlyPaths are the paths runc makes read-only in a Docker container by
// default: the kernel's settings (/proc/sys), the sysrq trigger and the
// interrupt, bus and filesystem controls. As root of the host's user
// namespace an agent could otherwise set kernel.core_pattern to a pipe and
// have the host run its program at the next crash.
var ReadonlyPaths = []string{
	"/proc/bus",
	"/proc/fs",
	"/proc/irq",
	"/proc/sys",
	"/proc/sysrq-trigger",
}

// MaskFileName is the name of the empty file bound over masked files. An empty regular
// file reads as runc's /dev/null does (nothing); /dev/null itself cannot
// be used, since bwrap binds it nodev and a read would get EACCES.
const MaskFileName = ".confine-masked"

// WriteMaskFile creates the empty, read-only file BwrapProcArgs binds over
// masked files, in dir (a directory of the runner's own, never one a
// sandbox can write), and returns its path.
func WriteMaskFile(dir string) (string, error) {
	path := filepath.Join(dir, MaskFileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o444)
	if err != nil {
		return "", fmt.Errorf("confine: mask file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("confine: mask file: %w", err)
	}
	return path, nil
}

// BwrapProcArgs returns bubblewrap arguments that mask and make read-only
// the /proc paths of MaskedPaths and ReadonlyPaths, to follow bwrap's
// --proc /proc. maskFile is WriteMaskFile's file. Paths this kernel does
// not have are skipped, as runc skips them. The read-only paths are bound
// from the runner's /proc: what they show (sysctls of the reader's network,
// UTS and IPC namespaces) depends on the reading process's namespaces, not
// on the procfs instance. The /sys paths have no argument: a sandbox gets
// no sysfs at all.
func BwrapProcArgs(maskFile string) ([]string, error) {
	var args []string
	for _, p := range MaskedPaths {
		if !strings.HasPrefix(p, "/proc/") {
			continue
		}
		info, err := os.Stat(p)
		switch {
		case err != nil:
			continue
		case info.IsDir():
			args = append(args, "--perms", "0555", "--tmpfs", p, "--remount-ro", p)
		case maskFile == "":
			return nil, fmt.Errorf("confine: no mask file to cover %s with", p)
		default:
			args = append(args, "--ro-bind", maskFile, p)
		}
	}
	for _, p := range ReadonlyPaths {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		args = append(args, "--ro-bind", p, p)
	}
	return args, nil
}
