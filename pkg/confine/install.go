package confine

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// InstallSeccomp loads prog (a SeccompProgram) as the calling thread's
// seccomp filter. A process that is not bubblewrap's child — one entered
// into a running sandbox with setns, as `docker exec` enters a container —
// inherits no filter and must install it itself, after its last privileged
// step and right before it execs. The filter and no-new-privileges are the
// thread's own, so the caller locks its goroutine to its OS thread first
// and execs from it; no-new-privileges must be set already (it is what lets
// a process without CAP_SYS_ADMIN load a filter, and what a filter needs to
// bind a setuid program too).
func InstallSeccomp(prog []byte) error {
	if len(prog) == 0 || len(prog)%8 != 0 || len(prog)/8 > 0xffff {
		return fmt.Errorf("confine: seccomp program of %d bytes is not an array of struct sock_filter", len(prog))
	}
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("confine: read no-new-privileges: %w", err)
	}
	if nnp != 1 {
		return errors.New("confine: no-new-privileges is not set on this thread: set it before the seccomp filter")
	}
	fprog := unix.SockFprog{Len: uint16(len(prog) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("confine: load the seccomp filter: %w", errno)
	}
	return nil
}
