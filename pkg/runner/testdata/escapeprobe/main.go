// Command escapeprobe is the escape suite's agent: run inside a sandbox, it
// tries to reach what a sandbox must not reach and prints one key=value
// line per attempt, saying what the kernel answered. It is built static by
// the test and mounted read-only into the sandbox; it then exits 1, so the
// attempt is recorded as the agent's failure.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	// Arguments: read=PATH, dial=HOST:PORT, ptrace=PID, list=DIR,
	// openw=PATH (open for writing, never written), create=PATH, the
	// word "syscalls" (the kernel interfaces Docker's seccomp profile
	// refuses) and the fixed probes below.
	for _, a := range os.Args[1:] {
		kind, arg, _ := strings.Cut(a, "=")
		switch kind {
		case "read":
			fmt.Printf("read %s=%s\n", arg, readProbe(arg))
		case "list":
			fmt.Printf("list %s=%s\n", arg, listProbe(arg))
		case "dial":
			fmt.Printf("dial %s=%s\n", arg, dialProbe(arg))
		case "openw":
			fmt.Printf("openw %s=%s\n", arg, openProbe(arg, os.O_WRONLY))
		case "create":
			fmt.Printf("create %s=%s\n", arg, openProbe(arg, os.O_WRONLY|os.O_CREATE|os.O_EXCL))
		case "syscalls":
			syscallProbes()
		case "ptrace":
			pid, err := strconv.Atoi(arg)
			if err != nil {
				fmt.Printf("ptrace %s=bad pid\n", arg)
				continue
			}
			fmt.Printf("ptrace %s=%s\n", arg, errText(unix.PtraceAttach(pid)))
		default:
			fmt.Printf("%s=unknown probe\n", a)
		}
	}
	if err := os.MkdirAll("/tmp/escape-mnt", 0o755); err != nil {
		fmt.Printf("mount=mkdir: %v\n", err)
	} else {
		fmt.Printf("mount=%s\n", errText(unix.Mount("none", "/tmp/escape-mnt", "tmpfs", 0, "")))
	}
	fmt.Printf("remount_root=%s\n", errText(unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND, "")))
	// Namespaces are made in a child: a multithreaded Go process cannot
	// unshare a user namespace itself.
	for _, ns := range []struct {
		name string
		flag uintptr
	}{{"userns", unix.CLONE_NEWUSER}, {"mountns", unix.CLONE_NEWNS}, {"netns", unix.CLONE_NEWNET}, {"pidns", unix.CLONE_NEWPID}} {
		cmd := exec.Command("/proc/self/exe", "-nop")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: ns.flag}
		fmt.Printf("clone_%s=%s\n", ns.name, errText(cmd.Run()))
	}
	fmt.Printf("unshare_userns_syscall=%s\n", errText(unshareOnOneThread()))
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	fmt.Printf("raw_socket=%s\n", errText(err))
	if err == nil {
		unix.Close(fd)
	}
	fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	fmt.Printf("packet_socket=%s\n", errText(err))
	if err == nil {
		unix.Close(fd)
	}
	var names []string
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			names = append(names, i.Name)
		}
	}
	sort.Strings(names)
	fmt.Printf("interfaces=%s\n", strings.Join(names, ","))
	fmt.Printf("visible_pids=%d\n", countPids())
	fmt.Printf("mknod=%s\n", errText(unix.Mknod("/tmp/escape-sda", unix.S_IFBLK|0o600, int(unix.Mkdev(8, 0)))))
	if _, err := os.ReadFile("/tmp/escape-sda"); err == nil {
		fmt.Println("mknod_read=ok")
	} else {
		fmt.Printf("mknod_read=%s\n", errText(err))
	}
	os.Exit(1)
}

func init() {
	if len(os.Args) == 2 && os.Args[1] == "-nop" {
		os.Exit(0)
	}
}

// unshareOnOneThread calls unshare(CLONE_NEWUSER) directly in a child that
// is still single-threaded: the raw syscall, as a C program would make it.
func unshareOnOneThread() error {
	cmd := exec.Command("/bin/sh", "-c", "exec unshare -U true")
	if _, err := exec.LookPath("unshare"); err != nil {
		return errors.New("no unshare tool")
	}
	return cmd.Run()
}

// openProbe opens path with flags and closes it at once: a kernel setting
// opened for writing is never written.
func openProbe(path string, flags int) string {
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return errText(err)
	}
	f.Close()
	return "ok"
}

// keep holds the probes' C strings: a uintptr does not keep its buffer
// alive.
var keep [][]byte

func cstr(s string) uintptr {
	b := append([]byte(s), 0)
	keep = append(keep, b)
	return uintptr(unsafe.Pointer(&b[0]))
}

// syscallProbes makes raw syscalls with arguments that make each harmless
// even when let through (a missing path, a bad fd), and prints what the
// kernel (or the seccomp filter) answered.
func syscallProbes() {
	missing := cstr("/nonexistent-escape-probe/x")
	for _, p := range []struct {
		name string
		nr   uintptr
		args [6]uintptr
	}{
		{"keyctl", unix.SYS_KEYCTL, [6]uintptr{unix.KEYCTL_GET_KEYRING_ID, ^uintptr(2)}},
		{"add_key", unix.SYS_ADD_KEY, [6]uintptr{}},
		{"bpf", unix.SYS_BPF, [6]uintptr{^uintptr(0)}},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [6]uintptr{}},
		{"init_module", unix.SYS_INIT_MODULE, [6]uintptr{0, 0, cstr("")}},
		{"kexec_load", unix.SYS_KEXEC_LOAD, [6]uintptr{0, 0, 0, ^uintptr(0)}},
		{"setns", unix.SYS_SETNS, [6]uintptr{^uintptr(0)}},
		{"userfaultfd", unix.SYS_USERFAULTFD, [6]uintptr{^uintptr(0)}},
		{"clock_settime", unix.SYS_CLOCK_SETTIME, [6]uintptr{unix.CLOCK_REALTIME, 0}},
		{"swapon", unix.SYS_SWAPON, [6]uintptr{missing}},
		{"reboot", unix.SYS_REBOOT, [6]uintptr{}},
		{"pivot_root", unix.SYS_PIVOT_ROOT, [6]uintptr{missing, missing}},
		{"acct", unix.SYS_ACCT, [6]uintptr{missing}},
		{"umount2", unix.SYS_UMOUNT2, [6]uintptr{cstr("/proc/sys")}},
		{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, [6]uintptr{^uintptr(0)}},
	} {
		_, _, errno := unix.RawSyscall6(p.nr, p.args[0], p.args[1], p.args[2], p.args[3], p.args[4], p.args[5])
		if errno == 0 {
			fmt.Printf("sys_%s=ok\n", p.name)
		} else {
			fmt.Printf("sys_%s=%s\n", p.name, unix.ErrnoName(errno))
		}
	}
}

func readProbe(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return errText(err)
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<16)
	for {
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err != nil {
			if n == 0 && !errors.Is(err, os.ErrClosed) && err.Error() != "EOF" {
				return "read error: " + errText(err)
			}
			break
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}

func listProbe(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return errText(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return "[" + strings.Join(names, ",") + "]"
}

func dialProbe(addr string) string {
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return "unreachable"
	}
	c.Close()
	return "connected"
}

func countPids() int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return n
}

// errText names the errno an attempt got, "ok" when it succeeded.
func errText(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	var perr *fs.PathError
	if errors.As(err, &perr) {
		return perr.Err.Error()
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return "exit " + strconv.Itoa(exit.ExitCode())
	}
	return err.Error()
}
