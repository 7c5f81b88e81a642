package confine

import (
	"encoding/binary"
	"fmt"
	"runtime"

	"github.com/elastic/go-seccomp-bpf/arch"
	mobyseccomp "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// SeccompProgram returns Docker's default seccomp profile — moby's own
// profile data, filtered for a process whose bounding set is caps and for
// this kernel and architecture exactly as the Docker engine filters it —
// compiled into a classic BPF program, serialized as an array of struct
// sock_filter (what bwrap's --seccomp and seccomp(2) read).
//
// One deviation, stricter than Docker: only the native ABI is allowed. A
// syscall of a foreign ABI (i386 or x32 on amd64) is refused, where
// Docker's profile also lists the i386 and x32 numbers: the compiler
// knows the native numbers only, and a 32-bit task program is rare
// enough to not be worth the second syscall table.
func SeccompProgram(caps []string) ([]byte, error) {
	profile, err := DockerSeccompProfile(caps)
	if err != nil {
		return nil, err
	}
	prog, err := compile(profile)
	if err != nil {
		return nil, err
	}
	return prog, nil
}

// DockerSeccompProfile is Docker's default profile as the engine gives it
// to runc for a container whose bounding set is caps.
func DockerSeccompProfile(caps []string) (*specs.LinuxSeccomp, error) {
	profile, err := mobyseccomp.GetDefaultProfile(&specs.Spec{Process: &specs.Process{
		Capabilities: &specs.LinuxCapabilities{Bounding: caps},
	}})
	if err != nil {
		return nil, fmt.Errorf("confine: Docker's seccomp profile: %w", err)
	}
	return profile, nil
}

// Offsets in struct seccomp_data: nr, arch, then six 64-bit args from 16.
const (
	offNr, offArch, offArgs = 0, 4, 16
	x32SyscallBit           = 0x40000000
	retAllow                = unix.SECCOMP_RET_ALLOW
	retErrno                = unix.SECCOMP_RET_ERRNO
	retKillThread           = unix.SECCOMP_RET_KILL_THREAD
	retKillProcess          = unix.SECCOMP_RET_KILL_PROCESS
	// chunk bounds the syscalls compared before their rule's return, so
	// every conditional jump to it stays within BPF's 8-bit offsets.
	chunk = 200
)

// compile lays the profile out as a linear filter: the architecture check,
// then each rule in the profile's order, the first matching rule deciding,
// then the default action. (A library compiler was tried,
// elastic/go-seccomp-bpf: after a failed argument check it compares the
// next syscall numbers against the argument it last loaded, so rules after
// a conditional one misfire — Docker's personality rules did.)
func compile(p *specs.LinuxSeccomp) ([]byte, error) {
	auditArch, table, err := native()
	if err != nil {
		return nil, err
	}
	def, err := retOf(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, fmt.Errorf("confine: seccomp default action: %w", err)
	}
	var a asm
	deny := retErrno | uint32(unix.EPERM)
	// A foreign ABI's syscall is refused before any rule: the rules hold
	// native numbers.
	a.emit(ins{code: ldAbs, k: offArch})
	a.emit(ins{code: jeq, k: auditArch, jt: "archok"})
	a.emit(ins{code: ret, k: deny})
	a.emit(ins{label: "archok", code: ldAbs, k: offNr})
	if runtime.GOARCH == "amd64" {
		a.emit(ins{code: jge, k: x32SyscallBit, jf: "native"})
		a.emit(ins{code: ret, k: deny})
		a.mark("native")
	}
	for i, rule := range p.Syscalls {
		ret, err := retOf(rule.Action, rule.ErrnoRet)
		if err != nil {
			return nil, fmt.Errorf("confine: seccomp rule %d (%v): %w", i, rule.Names, err)
		}
		var nrs []uint32
		for _, name := range rule.Names {
			// The profile lists every architecture's names (i386's
			// socketcall, stat64…); one this architecture lacks is
			// skipped, as libseccomp skips it.
			if nr, ok := table[name]; ok {
				nrs = append(nrs, uint32(nr))
			}
		}
		if len(rule.Args) == 0 {
			a.unconditional(nrs, ret)
			continue
		}
		for _, nr := range nrs {
			if err := a.conditional(nr, rule.Args, ret); err != nil {
				return nil, fmt.Errorf("confine: seccomp rule %d (%v): %w", i, rule.Names, err)
			}
		}
	}
	a.emit(ins{code: ret, k: def})
	prog, err := a.assemble()
	if err != nil {
		return nil, fmt.Errorf("confine: seccomp: %w", err)
	}
	if n := len(prog) / 8; n > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("confine: the seccomp filter has %d instructions, over the kernel's %d", n, unix.BPF_MAXINSNS)
	}
	return prog, nil
}

// BPF opcodes the filter uses.
const (
	ldAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	jgt   = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K
	ja    = unix.BPF_JMP | unix.BPF_JA
	and   = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	ret   = unix.BPF_RET | unix.BPF_K
)

// ins is one instruction; jt, jf (conditional jumps) and to (ja) name
// labels, "" meaning the next instruction.
type ins struct {
	code       uint16
	k          uint32
	jt, jf, to string
	label      string
}

type asm struct {
	prog   []ins
	labels int
}

func (a *asm) emit(in ins) { a.prog = append(a.prog, in) }

func (a *asm) newLabel() string {
	a.labels++
	return fmt.Sprintf("L%d", a.labels)
}

// mark labels the next instruction emitted.
func (a *asm) mark(label string) { a.emit(ins{label: label, code: ja}) }

// unconditional matches any of nrs (the accumulator holds the syscall
// number) and returns r, in chunks so each jump reaches its return.
func (a *asm) unconditional(nrs []uint32, r uint32) {
	for len(nrs) > 0 {
		n := min(len(nrs), chunk)
		hit, next := a.newLabel(), a.newLabel()
		for _, nr := range nrs[:n] {
			a.emit(ins{code: jeq, k: nr, jt: hit})
		}
		a.emit(ins{code: ja, to: next})
		a.emit(ins{label: hit, code: ret, k: r})
		a.mark(next)
		nrs = nrs[n:]
	}
}

// conditional returns r for syscall nr when every argument comparison
// holds (libseccomp's rule semantics); otherwise it reloads the syscall
// number and goes on with the next rule.
func (a *asm) conditional(nr uint32, args []specs.LinuxSeccompArg, r uint32) error {
	skip, fail := a.newLabel(), a.newLabel()
	a.emit(ins{code: jeq, k: nr, jf: skip})
	for _, arg := range args {
		if arg.Index > 5 {
			return fmt.Errorf("argument index %d out of range (0-5)", arg.Index)
		}
		if err := a.compare(arg, fail); err != nil {
			return err
		}
	}
	a.emit(ins{code: ret, k: r})
	a.emit(ins{label: fail, code: ldAbs, k: offNr})
	a.mark(skip)
	return nil
}

// compare checks one 64-bit argument against the rule's value, unsigned,
// high word first; it falls through when the comparison holds and jumps
// to fail when not.
func (a *asm) compare(arg specs.LinuxSeccompArg, fail string) error {
	hiOff, loOff := uint32(offArgs+8*arg.Index+4), uint32(offArgs+8*arg.Index)
	if !littleEndian() {
		hiOff, loOff = loOff, hiOff
	}
	v := arg.Value
	vHi, vLo := uint32(v>>32), uint32(v)
	pass := a.newLabel()
	switch arg.Op {
	case specs.OpEqualTo:
		a.emit(ins{code: ldAbs, k: hiOff})
		a.emit(ins{code: jeq, k: vHi, jf: fail})
		a.emit(ins{code: ldAbs, k: loOff})
		a.emit(ins{code: jeq, k: vLo, jf: fail})
	case specs.OpNotEqual:
		a.emit(ins{code: ldAbs, k: hiOff})
		a.emit(ins{code: jeq, k: vHi, jf: pass})
		a.emit(ins{code: ldAbs, k: loOff})
		a.emit(ins{code: jeq, k: vLo, jt: fail})
	case specs.OpMaskedEqual:
		// (arg & Value) == ValueTwo
		w := arg.ValueTwo
		a.emit(ins{code: ldAbs, k: hiOff})
		a.emit(ins{code: and, k: vHi})
		a.emit(ins{code: jeq, k: uint32(w >> 32), jf: fail})
		a.emit(ins{code: ldAbs, k: loOff})
		a.emit(ins{code: and, k: vLo})
		a.emit(ins{code: jeq, k: uint32(w), jf: fail})
	case specs.OpGreaterThan, specs.OpGreaterEqual, specs.OpLessThan, specs.OpLessEqual:
		// The high words decide unless equal; then the low words do.
		greater := arg.Op == specs.OpGreaterThan || arg.Op == specs.OpGreaterEqual
		a.emit(ins{code: ldAbs, k: hiOff})
		if greater {
			a.emit(ins{code: jgt, k: vHi, jt: pass})
			a.emit(ins{code: jeq, k: vHi, jf: fail})
		} else {
			a.emit(ins{code: jge, k: vHi, jf: pass})
			a.emit(ins{code: jeq, k: vHi, jf: fail})
		}
		a.emit(ins{code: ldAbs, k: loOff})
		switch arg.Op {
		case specs.OpGreaterThan:
			a.emit(ins{code: jgt, k: vLo, jf: fail})
		case specs.OpGreaterEqual:
			a.emit(ins{code: jge, k: vLo, jf: fail})
		case specs.OpLessThan:
			a.emit(ins{code: jge, k: vLo, jt: fail})
		case specs.OpLessEqual:
			a.emit(ins{code: jgt, k: vLo, jt: fail})
		}
	default:
		return fmt.Errorf("argument %d: operator %s is not supported", arg.Index, arg.Op)
	}
	a.mark(pass)
	return nil
}

// assemble resolves labels and serializes struct sock_filter records.
// Marks (label-only jumps of 0) cost one instruction each and keep the
// resolver simple.
func (a *asm) assemble() ([]byte, error) {
	at := map[string]int{}
	for i, in := range a.prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	off := func(pc int, label string, max int) (int, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := at[label]
		if !ok {
			return 0, fmt.Errorf("jump to unknown label %s", label)
		}
		d := to - pc - 1
		if d < 0 || d > max {
			return 0, fmt.Errorf("jump from %d to %s (%d) out of range", pc, label, to)
		}
		return d, nil
	}
	out := make([]byte, 0, 8*len(a.prog))
	for pc, in := range a.prog {
		var jt, jf, k int
		var err error
		if jt, err = off(pc, in.jt, 255); err != nil {
			return nil, err
		}
		if jf, err = off(pc, in.jf, 255); err != nil {
			return nil, err
		}
		kk := in.k
		if in.code == ja {
			if k, err = off(pc, in.to, 1<<31); err != nil {
				return nil, err
			}
			kk = uint32(k)
		}
		out = binary.NativeEndian.AppendUint16(out, in.code)
		out = append(out, uint8(jt), uint8(jf))
		out = binary.NativeEndian.AppendUint32(out, kk)
	}
	return out, nil
}

func retOf(action specs.LinuxSeccompAction, errnoRet *uint) (uint32, error) {
	switch action {
	case specs.ActAllow:
		return retAllow, nil
	case specs.ActErrno:
		errno := uint(unix.EPERM)
		if errnoRet != nil {
			errno = *errnoRet
		}
		if errno == 0 || errno > 0xffff {
			return 0, fmt.Errorf("errno %d out of range", errno)
		}
		return retErrno | uint32(errno), nil
	case specs.ActKillProcess:
		return retKillProcess, nil
	case specs.ActKill, specs.ActKillThread:
		return retKillThread, nil
	default:
		return 0, fmt.Errorf("action %s is not supported (allow, errno, kill)", action)
	}
}

// native returns this architecture's audit number and syscall table (the
// table of elastic/go-seccomp-bpf, generated from the kernel's).
func native() (uint32, map[string]int, error) {
	var auditArch uint32
	switch runtime.GOARCH {
	case "amd64":
		auditArch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		auditArch = unix.AUDIT_ARCH_AARCH64
	default:
		return 0, nil, fmt.Errorf("confine: seccomp: architecture %s is not supported (amd64, arm64)", runtime.GOARCH)
	}
	info, err := arch.GetInfo("")
	if err != nil {
		return 0, nil, fmt.Errorf("confine: seccomp: %w", err)
	}
	return auditArch, info.SyscallNames, nil
}

func littleEndian() bool {
	var probe [2]byte
	binary.NativeEndian.PutUint16(probe[:], 1)
	return probe[0] == 1
}
