package confine

import (
	"fmt"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

const compareChildEnv = "CONFINE_COMPARE_PROBE"

// compareCase: getppid(id, x) is allowed when x <op> value holds (64-bit,
// unsigned), by the rule {arg0 == id, arg1 op value}.
type compareCase struct {
	op            specs.LinuxSeccompOperator
	value, value2 uint64
	x             uint64
	allowed       bool // worked out by hand
}

var compareCases = []compareCase{
	{op: specs.OpEqualTo, value: 5, x: 5, allowed: true},
	{op: specs.OpEqualTo, value: 5, x: 6},
	{op: specs.OpEqualTo, value: 5, x: 1<<32 | 5},
	{op: specs.OpNotEqual, value: 5, x: 5},
	{op: specs.OpNotEqual, value: 5, x: 1<<32 | 5, allowed: true},
	{op: specs.OpNotEqual, value: 5, x: 6, allowed: true},
	{op: specs.OpLessThan, value: 1 << 32, x: 0xffffffff, allowed: true},
	{op: specs.OpLessThan, value: 1 << 32, x: 1 << 32},
	{op: specs.OpLessThan, value: 1 << 32, x: 1<<32 + 1},
	{op: specs.OpLessEqual, value: 1<<32 | 7, x: 1<<32 | 7, allowed: true},
	{op: specs.OpLessEqual, value: 1<<32 | 7, x: 1<<32 | 8},
	{op: specs.OpLessEqual, value: 1<<32 | 7, x: 7, allowed: true},
	{op: specs.OpLessEqual, value: 1<<32 | 7, x: 2 << 32},
	{op: specs.OpGreaterThan, value: 1<<32 | 7, x: 1<<32 | 8, allowed: true},
	{op: specs.OpGreaterThan, value: 1<<32 | 7, x: 1<<32 | 7},
	{op: specs.OpGreaterThan, value: 1<<32 | 7, x: 2 << 32, allowed: true},
	{op: specs.OpGreaterThan, value: 1<<32 | 7, x: 8},
	{op: specs.OpGreaterEqual, value: 1<<32 | 7, x: 1<<32 | 7, allowed: true},
	{op: specs.OpGreaterEqual, value: 1<<32 | 7, x: 1<<32 | 6},
	{op: specs.OpGreaterEqual, value: 1<<32 | 7, x: 2 << 32, allowed: true},
	{op: specs.OpMaskedEqual, value: 0xF0000000F0, value2: 0x1000000020, x: 0x1ABCDEF02F, allowed: true},
	{op: specs.OpMaskedEqual, value: 0xF0000000F0, value2: 0x1000000020, x: 0x2ABCDEF02F},
	{op: specs.OpMaskedEqual, value: 0xF0000000F0, value2: 0x1000000020, x: 0x1ABCDEF03F},
}

func compareProfile() *specs.LinuxSeccomp {
	eperm := uint(unix.EPERM)
	p := &specs.LinuxSeccomp{DefaultAction: specs.ActAllow}
	for id, c := range compareCases {
		p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{
			Names: []string{"getppid"}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: 0, Value: uint64(id), Op: specs.OpEqualTo}, {Index: 1, Value: c.value, ValueTwo: c.value2, Op: c.op}},
		})
	}
	// Anything else asking for getppid is refused.
	p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{Names: []string{"getppid"}, Action: specs.ActErrno, ErrnoRet: &eperm})
	return p
}

func probeCompares() int {
	prog, err := compile(compareProfile())
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	if err := loadOnThisThread(prog); err != nil {
		fmt.Println("error:", err)
		return 2
	}
	for id, c := range compareCases {
		_, _, errno := unix.RawSyscall(unix.SYS_GETPPID, uintptr(id), uintptr(c.x), 0)
		fmt.Printf("%d=%v\n", id, errno == 0)
	}
	return 0
}

func TestCompiledComparisonsAre64BitUnsigned(t *testing.T) {
	got, _ := runProbeChild(t, compareChildEnv)
	for id, c := range compareCases {
		if want := fmt.Sprint(c.allowed); got[fmt.Sprint(id)] != want {
			t.Errorf("%#x %s %#x (mask value %#x): allowed = %s, want %s", c.x, c.op, c.value, c.value2, got[fmt.Sprint(id)], want)
		}
	}
}

func TestCompileRefusesWhatItCannotExpress(t *testing.T) {
	for name, p := range map[string]*specs.LinuxSeccomp{
		"notify action": {DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{{Names: []string{"getpid"}, Action: specs.ActNotify}}},
		"bad index":     {DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{{Names: []string{"getpid"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 6, Op: specs.OpEqualTo}}}}},
		"bad default":   {DefaultAction: specs.ActTrace},
	} {
		if _, err := compile(p); err == nil {
			t.Errorf("%s: compiled, want an error", name)
		}
	}
}
