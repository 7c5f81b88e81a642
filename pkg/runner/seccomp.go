package runner

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// The sandbox's seccomp filter, installed by bwrap (--seccomp) right before
// the phase's command. It refuses what Docker's default profile refuses
// and the capability set alone does not: creating a user namespace
// (unshare or clone with CLONE_NEWUSER), which hands its creator every
// capability over the namespaces it then makes and the kernel's whole
// unprivileged-namespace attack surface (the escape suite found it open).
// clone3 passes its flags in memory a filter cannot read, so it gets
// ENOSYS and libc falls back to clone, as under Docker. Syscalls of a
// foreign ABI (i386 and x32 on amd64) are refused: the filter only knows
// the native numbers.

const (
	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000
	// Offsets in struct seccomp_data: nr, arch, then args[0] at 16 (its low
	// 32 bits on a little-endian machine).
	seccompNr, seccompArch, seccompArg0 = 0, 4, 16
	x32SyscallBit                       = 0x40000000
)

// seccompFilter returns the filter's classic BPF program, serialized as
// bwrap reads it (an array of struct sock_filter).
func seccompFilter() ([]byte, error) {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return nil, fmt.Errorf("seccomp filter: architecture %s is not supported (amd64, arm64)", runtime.GOARCH)
	}
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	// Jumps are forward offsets from the next instruction; the program is
	// laid out with its three exits last, and jumps are resolved to them.
	type insn struct {
		code   uint16
		jt, jf string // labels: "" = the next instruction
		k      uint32
		label  string
	}
	prog := []insn{
		{code: ld, k: seccompArch},
		{code: jeq, k: arch, jf: "deny"},
		{code: ld, k: seccompNr},
	}
	if runtime.GOARCH == "amd64" {
		prog = append(prog, insn{code: jge, k: x32SyscallBit, jt: "deny"})
	}
	prog = append(prog,
		insn{code: jeq, k: unix.SYS_UNSHARE, jt: "flags"},
		insn{code: jeq, k: unix.SYS_CLONE, jt: "flags"},
		insn{code: jeq, k: unix.SYS_CLONE3, jt: "nosys"},
		insn{code: ret, k: seccompRetAllow},
		insn{label: "flags", code: ld, k: seccompArg0},
		insn{code: jset, k: unix.CLONE_NEWUSER, jt: "deny"},
		insn{code: ret, k: seccompRetAllow},
		insn{label: "nosys", code: ret, k: seccompRetErrno | uint32(unix.ENOSYS)},
		insn{label: "deny", code: ret, k: seccompRetErrno | uint32(unix.EPERM)},
	)
	at := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	jump := func(pc int, label string) (uint8, error) {
		if label == "" {
			return 0, nil
		}
		off := at[label] - pc - 1
		if off < 0 || off > 255 {
			return 0, fmt.Errorf("seccomp filter: jump to %s out of range", label)
		}
		return uint8(off), nil
	}
	out := make([]byte, 0, 8*len(prog))
	for pc, in := range prog {
		jt, err := jump(pc, in.jt)
		if err != nil {
			return nil, err
		}
		jf, err := jump(pc, in.jf)
		if err != nil {
			return nil, err
		}
		out = binary.NativeEndian.AppendUint16(out, in.code)
		out = append(out, jt, jf)
		out = binary.NativeEndian.AppendUint32(out, in.k)
	}
	return out, nil
}

// seccompFile returns a pipe's read end holding the filter, for bwrap's
// --seccomp fd (the filter is far below a pipe's buffer).
func seccompFile() (*os.File, error) {
	prog, err := seccompFilter()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	defer w.Close()
	if _, err := w.Write(prog); err != nil {
		r.Close()
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	return r, nil
}
