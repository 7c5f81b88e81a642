package confine

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestBwrapProcArgsCoverWhatThisKernelHas(t *testing.T) {
	mask, err := WriteMaskFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(mask); err != nil || info.Size() != 0 || info.Mode().Perm() != 0o444 {
		t.Fatalf("mask file %s: %v %v", mask, info, err)
	}
	args, err := BwrapProcArgs(mask)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(args, " ")
	for _, p := range ReadonlyPaths {
		_, statErr := os.Stat(p)
		if has := strings.Contains(joined, "--ro-bind "+p+" "+p); has != (statErr == nil) {
			t.Errorf("read-only %s: in args = %v, present on this host = %v", p, has, statErr == nil)
		}
	}
	for _, p := range MaskedPaths {
		info, statErr := os.Stat(p)
		var want string
		switch {
		case statErr != nil || strings.HasPrefix(p, "/sys/"):
			if strings.Contains(joined, " "+p) {
				t.Errorf("masked %s is not to be covered here, args: %s", p, joined)
			}
			continue
		case info.IsDir():
			want = "--tmpfs " + p + " --remount-ro " + p
		default:
			want = "--ro-bind " + mask + " " + p
		}
		if !strings.Contains(joined, want) {
			t.Errorf("masked %s: args lack %q: %s", p, want, joined)
		}
	}
	if !slices.Contains(args, "/proc/sys") {
		t.Errorf("/proc/sys is not made read-only: %s", joined)
	}
}

func TestBwrapProcArgsRefuseToMaskWithoutAFile(t *testing.T) {
	hasFile := false
	for _, p := range MaskedPaths {
		if info, err := os.Stat(p); err == nil && !info.IsDir() && strings.HasPrefix(p, "/proc/") {
			hasFile = true
		}
	}
	if !hasFile {
		t.Fatal("this kernel has none of the masked /proc files (/proc/interrupts, /proc/keys…): nothing to test against")
	}
	if _, err := BwrapProcArgs(""); err == nil || !strings.Contains(err.Error(), "no mask file") {
		t.Fatalf("err = %v, want one saying there is no mask file", err)
	}
}
