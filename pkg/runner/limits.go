package runner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where cgroup v1 controllers are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupParent groups the runner's cgroups under each controller.
const cgroupParent = "gauntlet"

// cpuPeriodMicros is the CFS period used for CPU limits.
const cpuPeriodMicros = 100000

// resourceLimits are a phase's CPU and memory limits (0 = none).
type resourceLimits struct {
	CPUs     float64
	MemoryMB int
}

// cgroup is a set of cgroup v1 directories (one per controller) a phase's
// processes join; empty when no limit could be applied.
type cgroup struct {
	dirs []string
}

// newCgroup creates cgroup v1 groups named name that enforce lim. Limits that
// cannot be applied (no cgroup v1, not writable) are reported in notes and
// left out; that never fails the trial.
func newCgroup(root, name string, lim resourceLimits) (cg *cgroup, notes []string) {
	cg = &cgroup{}
	if lim.MemoryMB > 0 {
		bytes := strconv.FormatInt(int64(lim.MemoryMB)<<20, 10)
		dir, err := makeCgroup(root, "memory", name, map[string]string{"memory.limit_in_bytes": bytes})
		if err != nil {
			notes = append(notes, fmt.Sprintf("memory limit %d MB not applied: %v", lim.MemoryMB, err))
		} else {
			cg.dirs = append(cg.dirs, dir)
			notes = append(notes, fmt.Sprintf("memory limit %d MB applied (cgroup v1)", lim.MemoryMB))
			// Memory+swap too, where the kernel accounts swap, so swapping
			// does not get around the limit; without swap accounting there
			// is nothing to get around.
			_ = os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte(bytes), 0o644)
		}
	}
	if lim.CPUs > 0 {
		quota := strconv.FormatInt(int64(lim.CPUs*cpuPeriodMicros), 10)
		dir, err := makeCgroup(root, "cpu", name, map[string]string{
			"cpu.cfs_period_us": strconv.Itoa(cpuPeriodMicros),
			"cpu.cfs_quota_us":  quota,
		})
		if err != nil {
			notes = append(notes, fmt.Sprintf("cpu limit %g not applied: %v", lim.CPUs, err))
		} else {
			cg.dirs = append(cg.dirs, dir)
			notes = append(notes, fmt.Sprintf("cpu limit %g CPUs applied (cgroup v1)", lim.CPUs))
		}
	}
	return cg, notes
}

func makeCgroup(root, controller, name string, settings map[string]string) (string, error) {
	dir := filepath.Join(root, controller, cgroupParent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	// Settings are written in a fixed order: the CFS period before the quota.
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(settings[k]), 0o644); err != nil {
			_ = os.Remove(dir)
			return "", fmt.Errorf("write %s: %w", filepath.Join(dir, k), err)
		}
	}
	return dir, nil
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
