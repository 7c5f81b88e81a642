package runner

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where cgroups are mounted: cgroup v1 controllers each in a
// directory of their own (hybrid hosts also mount cgroup2 at unified/), or
// cgroup v2 itself (pure v2 hosts: cgroup.controllers at the top).
const cgroupRoot = "/sys/fs/cgroup"

// cgroupParent groups the runner's cgroups under each controller.
const cgroupParent = "gauntlet"

// cpuPeriodMicros is the CFS period used for CPU limits.
const cpuPeriodMicros = 100000

// DefaultPidsLimit is the most processes (threads included) a phase may
// have when the operator sets no other limit.
const DefaultPidsLimit = 1024

// resourceLimits are a phase's limits (0 = none).
type resourceLimits struct {
	CPUs     float64
	MemoryMB int
	Pids     int
}

// cgroup is the set of cgroup directories a phase's processes join: one per
// cgroup v1 controller, or one cgroup v2 directory; empty when no limit
// could be applied.
type cgroup struct {
	dirs   []string
	v2     bool
	memory string // the directory holding the memory controller's files
}

// newCgroup creates the cgroups named name that enforce lim, cgroup v2 when
// root is a v2 hierarchy, else v1 per controller. Limits that cannot be
// applied (no controller, not writable) are reported in notes and left out;
// that never fails the trial.
func newCgroup(root, name string, lim resourceLimits) (cg *cgroup, notes []string) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return newCgroupV2(root, name, lim)
	}
	cg = &cgroup{}
	if lim.MemoryMB > 0 {
		bytes := strconv.FormatInt(int64(lim.MemoryMB)<<20, 10)
		dir, err := makeCgroup(filepath.Join(root, "memory"), name, map[string]string{"memory.limit_in_bytes": bytes})
		if err != nil {
			notes = append(notes, fmt.Sprintf("memory limit %d MB not applied: %v", lim.MemoryMB, err))
		} else {
			cg.dirs = append(cg.dirs, dir)
			cg.memory = dir
			notes = append(notes, fmt.Sprintf("memory limit %d MB applied (cgroup v1)", lim.MemoryMB))
			// Memory+swap too, where the kernel accounts swap, so swapping
			// does not get around the limit; without swap accounting there
			// is nothing to get around.
			_ = os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte(bytes), 0o644)
		}
	} else {
		notes = append(notes, "memory limit: none (the task sets no memory_mb)")
	}
	if lim.CPUs > 0 {
		quota := strconv.FormatInt(int64(lim.CPUs*cpuPeriodMicros), 10)
		dir, err := makeCgroup(filepath.Join(root, "cpu"), name, map[string]string{
			"cpu.cfs_period_us": strconv.Itoa(cpuPeriodMicros),
			"cpu.cfs_quota_us":  quota,
		})
		if err != nil {
			notes = append(notes, fmt.Sprintf("cpu limit %g not applied: %v", lim.CPUs, err))
		} else {
			cg.dirs = append(cg.dirs, dir)
			notes = append(notes, fmt.Sprintf("cpu limit %g CPUs applied (cgroup v1)", lim.CPUs))
		}
	} else {
		notes = append(notes, "cpu limit: none (the task sets no cpus)")
	}
	if lim.Pids > 0 {
		dir, err := makeCgroup(filepath.Join(root, "pids"), name, map[string]string{"pids.max": strconv.Itoa(lim.Pids)})
		if err != nil {
			notes = append(notes, fmt.Sprintf("pids limit %d not applied: %v", lim.Pids, err))
		} else {
			cg.dirs = append(cg.dirs, dir)
			notes = append(notes, fmt.Sprintf("pids limit %d applied (cgroup v1)", lim.Pids))
		}
	}
	return cg, notes
}

// newCgroupV2 makes one cgroup v2 directory root/gauntlet/name with the
// memory, cpu and pids controllers enabled down to it.
func newCgroupV2(root, name string, lim resourceLimits) (*cgroup, []string) {
	cg := &cgroup{v2: true}
	parent := filepath.Join(root, cgroupParent)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return cg, []string{fmt.Sprintf("no limits applied: create %s: %v", parent, err)}
	}
	var notes []string
	for _, dir := range []string{root, parent} {
		for _, c := range []string{"memory", "cpu", "pids"} {
			// Each controller on its own: one the host lacks must not keep
			// the others off.
			_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0o644)
		}
	}
	settings := map[string]string{}
	if lim.MemoryMB > 0 {
		settings["memory.max"] = strconv.FormatInt(int64(lim.MemoryMB)<<20, 10)
		settings["memory.swap.max"] = "0"
	}
	if lim.CPUs > 0 {
		settings["cpu.max"] = fmt.Sprintf("%d %d", int64(lim.CPUs*cpuPeriodMicros), cpuPeriodMicros)
	}
	if lim.Pids > 0 {
		settings["pids.max"] = strconv.Itoa(lim.Pids)
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return cg, []string{fmt.Sprintf("no limits applied: create %s: %v", dir, err)}
	}
	cg.dirs, cg.memory = []string{dir}, dir
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		what := map[string]string{"memory.max": fmt.Sprintf("memory limit %d MB", lim.MemoryMB), "memory.swap.max": "no swap",
			"cpu.max": fmt.Sprintf("cpu limit %g CPUs", lim.CPUs), "pids.max": fmt.Sprintf("pids limit %d", lim.Pids)}[k]
		if err := os.WriteFile(filepath.Join(dir, k), []byte(settings[k]), 0o644); err != nil {
			notes = append(notes, fmt.Sprintf("%s not applied: %v", what, err))
			continue
		}
		notes = append(notes, what+" applied (cgroup v2)")
	}
	return cg, notes
}

func makeCgroup(controllerRoot, name string, settings map[string]string) (string, error) {
	dir := filepath.Join(controllerRoot, cgroupParent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	// Settings are written in a fixed order: the CFS period before the quota.
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(settings[k]), 0o644); err != nil {
			_ = os.Remove(dir)
			return "", fmt.Errorf("write %s: %w", filepath.Join(dir, k), err)
		}
	}
	return dir, nil
}

// join moves the processes pids (whole thread groups) into every cgroup.
func (cg *cgroup) join(pids ...int) error {
	if cg == nil {
		return nil
	}
	for _, dir := range cg.dirs {
		for _, pid := range pids {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
				return fmt.Errorf("join cgroup %s: %w", dir, err)
			}
		}
	}
	return nil
}

// oomKills reports how many processes the kernel's OOM killer ended in the
// cgroup because of its memory limit.
func (cg *cgroup) oomKills() int {
	if cg == nil || cg.memory == "" {
		return 0
	}
	file, key := "memory.oom_control", "oom_kill"
	if cg.v2 {
		file = "memory.events"
	}
	n, _ := readOOMKills(filepath.Join(cg.memory, file), key)
	return n
}

// containerOOMKills reads the OOM kill count of the cgroup the runner itself
// runs in, as a container sees it at root (cgroup v2 memory.events, else v1
// memory/memory.oom_control); ok is false when neither is readable. Under
// container isolation the runner can make no cgroup of its own, so the
// change of this count across a phase is what the kernel killed for the
// container's memory (the task size) while the phase ran.
func containerOOMKills(root string) (n int, ok bool) {
	if n, ok := readOOMKills(filepath.Join(root, "memory.events"), "oom_kill"); ok {
		return n, true
	}
	return readOOMKills(filepath.Join(root, "memory", "memory.oom_control"), "oom_kill")
}

// readOOMKills reads the "key N" line of a cgroup memory file.
func readOOMKills(file, key string) (int, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

// wrap makes cmd join the cgroups before it execs the real program, so no
// process of the phase ever runs outside them: `sh -c` writes its own pid
// into each cgroup.procs, then execs the original command line.
func (cg *cgroup) wrap(cmd *exec.Cmd) {
	if cg == nil || len(cg.dirs) == 0 {
		return
	}
	const script = `n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || :; shift; n=$((n-1)); done; exec "$@"`
	args := []string{"-c", script, "sh", strconv.Itoa(len(cg.dirs))}
	for _, dir := range cg.dirs {
		args = append(args, filepath.Join(dir, "cgroup.procs"))
	}
	args = append(args, cmd.Path)
	args = append(args, cmd.Args[1:]...)
	cmd.Path = "/bin/sh"
	cmd.Args = append([]string{"sh"}, args...)
	cmd.Err = nil
}

// killAll sends SIGKILL to every process still in the cgroups.
func (cg *cgroup) killAll() {
	if cg == nil {
		return
	}
	for _, dir := range cg.dirs {
		if cg.v2 {
			// cgroup.kill (Linux 5.14) kills atomically against fork.
			if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644) == nil {
				continue
			}
		}
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(field); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// remove kills what is left and deletes the cgroups, waiting briefly for the
// kernel to reap the killed processes.
func (cg *cgroup) remove() error {
	if cg == nil {
		return nil
	}
	var errs []error
	for _, dir := range cg.dirs {
		var err error
		for range 50 {
			cg.killAll()
			if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}
