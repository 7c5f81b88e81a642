package confine

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

const childEnv = "CONFINE_SECCOMP_PROBE"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(probeUnderFilter())
	}
	if os.Getenv(compareChildEnv) == "1" {
		os.Exit(probeCompares())
	}
	os.Exit(m.Run())
}

// A probe is a raw syscall with arguments that make it harmless whether
// or not the filter lets it through: a refused call gets the filter's
// errno, an allowed one reaches the kernel and fails there (or does
// nothing).
type probe struct {
	name string
	nr   uintptr
	args [6]uintptr
}

// keep holds the probes' strings: a uintptr does not keep its buffer alive.
var keep [][]byte

func cstr(s string) uintptr {
	b := append([]byte(s), 0)
	keep = append(keep, b)
	return uintptr(unsafe.Pointer(&b[0]))
}

func probes() []probe {
	missing := cstr("/nonexistent-confine-probe/x")
	return []probe{
		// Docker's documentation lists these among the syscalls its default
		// profile blocks ("Significant syscalls blocked by the default
		// profile").
		{"mount", unix.SYS_MOUNT, [6]uintptr{cstr("none"), missing, cstr("tmpfs")}},
		{"umount2", unix.SYS_UMOUNT2, [6]uintptr{missing}},
		{"unshare_user", unix.SYS_UNSHARE, [6]uintptr{unix.CLONE_NEWUSER}},
		{"setns", unix.SYS_SETNS, [6]uintptr{^uintptr(0)}},
		{"pivot_root", unix.SYS_PIVOT_ROOT, [6]uintptr{missing, missing}},
		{"keyctl", unix.SYS_KEYCTL, [6]uintptr{unix.KEYCTL_GET_KEYRING_ID, ^uintptr(2)}},
		{"add_key", unix.SYS_ADD_KEY, [6]uintptr{0, 0, 0, 0, 0}},
		{"request_key", unix.SYS_REQUEST_KEY, [6]uintptr{0, 0, 0, 0}},
		{"reboot", unix.SYS_REBOOT, [6]uintptr{0, 0, 0}},
		{"swapon", unix.SYS_SWAPON, [6]uintptr{missing, 0}},
		{"swapoff", unix.SYS_SWAPOFF, [6]uintptr{missing}},
		{"init_module", unix.SYS_INIT_MODULE, [6]uintptr{0, 0, cstr("")}},
		{"delete_module", unix.SYS_DELETE_MODULE, [6]uintptr{cstr("confine-none"), 0}},
		{"kexec_load", unix.SYS_KEXEC_LOAD, [6]uintptr{0, 0, 0, ^uintptr(0)}},
		{"bpf", unix.SYS_BPF, [6]uintptr{^uintptr(0), 0, 0}},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [6]uintptr{0, 0, 0, 0, 0}},
		{"userfaultfd", unix.SYS_USERFAULTFD, [6]uintptr{^uintptr(0)}},
		{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, [6]uintptr{^uintptr(0), 0, 0}},
		{"clock_settime", unix.SYS_CLOCK_SETTIME, [6]uintptr{unix.CLOCK_REALTIME, 0}},
		{"settimeofday", unix.SYS_SETTIMEOFDAY, [6]uintptr{1, 0}},
		{"acct", unix.SYS_ACCT, [6]uintptr{missing}},
		{"quotactl", unix.SYS_QUOTACTL, [6]uintptr{0, 0, 0, 0}},
		{"iopl", unix.SYS_IOPL, [6]uintptr{99}},
		{"ioperm", unix.SYS_IOPERM, [6]uintptr{0, 0, 0}},
		{"process_vm_readv", unix.SYS_PROCESS_VM_READV, [6]uintptr{0, 0, 0, 0, 0, 1}},
		{"personality_set", unix.SYS_PERSONALITY, [6]uintptr{0x0d}},
		{"clone_newns", unix.SYS_CLONE, [6]uintptr{unix.CLONE_NEWNS | uintptr(unix.SIGCHLD), 1}},
		{"clone3", unix.SYS_CLONE3, [6]uintptr{0, 0}},
		{"socket_vsock", unix.SYS_SOCKET, [6]uintptr{unix.AF_VSOCK, unix.SOCK_STREAM, 0}},
		// Allowed by the profile: the kernel answers.
		{"getpid", unix.SYS_GETPID, [6]uintptr{}},
		{"personality_query", unix.SYS_PERSONALITY, [6]uintptr{0xffffffff}},
		{"chroot", unix.SYS_CHROOT, [6]uintptr{missing}},
		{"mknodat", unix.SYS_MKNODAT, [6]uintptr{^uintptr(99), missing, 0, 0}},
		{"ptrace_bad", unix.SYS_PTRACE, [6]uintptr{^uintptr(0), 0, 0, 0}},
		{"clone_bad_flags", unix.SYS_CLONE, [6]uintptr{unix.CLONE_THREAD, 1}},
	}
}

// probeUnderFilter installs the filter on every thread, makes each probe
// and prints name=errno (or ok).
func probeUnderFilter() int {
	prog, err := SeccompProgram(DockerCapabilities)
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	if err := loadOnThisThread(prog); err != nil {
		fmt.Println("error:", err)
		return 2
	}
	for _, p := range probes() {
		_, _, errno := unix.RawSyscall6(p.nr, p.args[0], p.args[1], p.args[2], p.args[3], p.args[4], p.args[5])
		if errno == 0 {
			fmt.Printf("%s=ok\n", p.name)
		} else {
			fmt.Printf("%s=%s\n", p.name, unix.ErrnoName(errno))
		}
	}
	return 0
}

func TestDockerProfileRefusesWhatDockerDocumentsAndAllowsTheRest(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("the probes use amd64/arm64 syscall numbers, not %s", runtime.GOARCH)
	}
	got, out := runProbeChild(t, childEnv)
	want := map[string]string{"clone3": "ENOSYS"} // Docker's profile: so libc falls back to clone
	for _, name := range []string{"mount", "umount2", "unshare_user", "setns", "pivot_root", "keyctl", "add_key",
		"request_key", "reboot", "swapon", "swapoff", "init_module", "delete_module", "kexec_load", "bpf",
		"perf_event_open", "userfaultfd", "open_by_handle_at", "clock_settime", "settimeofday", "acct", "quotactl",
		"iopl", "ioperm", "personality_set", "clone_newns", "socket_vsock"} {
		want[name] = "EPERM"
	}
	for name, errno := range want {
		if got[name] != errno {
			t.Errorf("%s = %q, want %s (refused by Docker's default profile)", name, got[name], errno)
		}
	}
	// Allowed calls reach the kernel, which answers for itself (never the
	// filter's EPERM).
	for _, name := range []string{"getpid", "personality_query", "chroot", "mknodat", "ptrace_bad", "process_vm_readv", "clone_bad_flags"} {
		if v, ok := got[name]; !ok || v == "EPERM" {
			t.Errorf("%s = %q, want the kernel's own answer (allowed by Docker's default profile)", name, v)
		}
	}
	if got["getpid"] != "ok" {
		t.Errorf("getpid = %q, want ok", got["getpid"])
	}
	t.Logf("probes:\n%s", out)
}

func TestSeccompProgramFitsTheKernelLimit(t *testing.T) {
	prog, err := SeccompProgram(DockerCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(prog) / 8; n == 0 || n > unix.BPF_MAXINSNS || len(prog)%8 != 0 {
		t.Fatalf("program of %d bytes (%d instructions)", len(prog), n)
	}
}

// loadOnThisThread locks the goroutine to its thread and loads prog there
// with InstallSeccomp, as the exec-phase helper does: the probes that
// follow run on this thread.
func loadOnThisThread(prog []byte) error {
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	return InstallSeccomp(prog)
}

// runProbeChild runs this test binary again with env=1, which makes it a
// probe (see TestMain), and returns its key=value lines and whole output.
func runProbeChild(t *testing.T, env string) (map[string]string, []byte) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe child: %v\n%s", err, out)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			got[k] = v
		}
	}
	return got, out
}
