package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A pure cgroup v2 host cannot be had here (this machine is hybrid), so the
// v2 writer runs against a directory laid out as cgroup2 lays out its root:
// the test checks which files get which values, and that a missing
// controller is reported rather than fatal.
func TestCgroupV2WritesLimitsAndEnablesControllers(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cg, notes := newCgroup(root, "trial-x-agent", resourceLimits{CPUs: 1.5, MemoryMB: 256, Pids: 100})
	if !cg.v2 || len(cg.dirs) != 1 || cg.memory != filepath.Join(root, cgroupParent, "trial-x-agent") {
		t.Fatalf("cgroup = %+v, want one v2 dir under %s/%s", cg, root, cgroupParent)
	}
	for file, want := range map[string]string{"memory.max": "268435456", "memory.swap.max": "0", "cpu.max": "150000 100000", "pids.max": "100"} {
		got, err := os.ReadFile(filepath.Join(cg.dirs[0], file))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", file, got, err, want)
		}
	}
	// The last controller written wins in a plain file; on cgroup2 each
	// write adds one. What matters is that each was written.
	if got, _ := os.ReadFile(filepath.Join(root, cgroupParent, "cgroup.subtree_control")); !strings.HasPrefix(string(got), "+") {
		t.Errorf("subtree_control of %s = %q, want controllers enabled", cgroupParent, got)
	}
	if !slices.ContainsFunc(notes, func(n string) bool { return n == "pids limit 100 applied (cgroup v2)" }) {
		t.Errorf("notes = %q, want the pids limit recorded", notes)
	}
	if err := os.WriteFile(filepath.Join(cg.memory, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := cg.oomKills(); got != 2 {
		t.Errorf("oomKills = %d, want 2 (memory.events oom_kill)", got)
	}
}

func TestCgroupV1RecordsOOMKills(t *testing.T) {
	root := t.TempDir()
	cg, notes := newCgroup(root, "trial-y-agent", resourceLimits{MemoryMB: 64, Pids: 10})
	if cg.v2 || len(cg.dirs) != 2 {
		t.Fatalf("cgroup = %+v (notes %q), want memory and pids v1 dirs", cg, notes)
	}
	if err := os.WriteFile(filepath.Join(cg.memory, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := cg.oomKills(); got != 1 {
		t.Errorf("oomKills = %d, want 1", got)
	}
}

func TestEffectiveNetwork(t *testing.T) {
	tests := []struct{ asked, ceiling, want string }{
		{"public", "", "public"},
		{"public", "allowlist", "allowlist"},
		{"public", "no-network", "no-network"},
		{"allowlist", "", "allowlist"},
		{"allowlist", "public", "allowlist"},
		{"no-network", "public", "no-network"},
		{"", "", "no-network"},
		{"none", "", "no-network"},
	}
	for _, tc := range tests {
		if got := effectiveNetwork(tc.asked, tc.ceiling); got != tc.want {
			t.Errorf("effectiveNetwork(%q, %q) = %q, want %q", tc.asked, tc.ceiling, got, tc.want)
		}
	}
}

// TestContainerOOMKills reads the container's own OOM kill count from
// cgroup v2 memory.events or, on a v1 host, memory/memory.oom_control; with
// neither readable there is no count (and no OOM is ever recorded).
func TestContainerOOMKills(t *testing.T) {
	v1 := t.TempDir()
	if err := os.Mkdir(filepath.Join(v1, "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v1, "memory", "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(v2, "memory.events"), []byte("low 0\nhigh 0\nmax 1\noom 1\noom_kill 1\noom_group_kill 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for root, want := range map[string]struct {
		n  int
		ok bool
	}{v1: {5, true}, v2: {1, true}, t.TempDir(): {0, false}} {
		if n, ok := containerOOMKills(root); n != want.n || ok != want.ok {
			t.Errorf("containerOOMKills(%s) = %d, %v; want %d, %v", root, n, ok, want.n, want.ok)
		}
	}
}
