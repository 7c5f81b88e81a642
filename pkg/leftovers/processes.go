package leftovers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// maxKillRounds bounds how often Reclaim scans again for processes that a
// killed one started meanwhile.
const maxKillRounds = 5

// process is one process tied to an attempt.
type process struct {
	pid, ppid, pgrp int
	start           uint64 // start time in clock ticks after boot: tells a reused pid apart
	comm            string
	attempt         string
	why             string
}

// killProcesses kills the processes tied to attempts that are not kept,
// round after round until a scan finds none, and waits for each to exit.
func (r *reclaimer) killProcesses(ctx context.Context) (int, error) {
	killed := 0
	for range maxKillRounds {
		found, err := r.scanProcesses()
		if err != nil {
			return killed, err
		}
		if len(found) == 0 {
			return killed, nil
		}
		var pidfds []int
		for _, p := range found {
			fd, err := r.kill(p)
			if err != nil {
				r.log.Warn("leftover sandbox process not killed", "pid", p.pid, "command", p.comm, "attempt", p.attempt, "err", err)
				continue
			}
			if fd >= 0 {
				killed++
				pidfds = append(pidfds, fd)
			}
		}
		err = waitExited(ctx, pidfds, r.wait)
		for _, fd := range pidfds {
			unix.Close(fd)
		}
		if err != nil {
			return killed, err
		}
	}
	left, err := r.scanProcesses()
	if err == nil && len(left) > 0 {
		err = fmt.Errorf("%d sandbox processes still alive after %d rounds of SIGKILL (first: pid %d %s)", len(left), maxKillRounds, left[0].pid, left[0].comm)
	}
	return killed, err
}

// kill sends SIGKILL to p through a pidfd, once it has made sure the pid
// still names the process scanned (not a new one that reused it). It
// returns the pidfd to wait on, or -1 when p is gone already.
func (r *reclaimer) kill(p process) (int, error) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("pidfd_open: %w", err)
	}
	proc, err := procfs.NewProc(p.pid)
	var st procfs.ProcStat
	if err == nil {
		st, err = proc.Stat()
	}
	if err != nil || st.Starttime != p.start {
		unix.Close(fd) // exited meanwhile, its pid possibly reused
		return -1, nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.ESRCH) {
			return -1, nil
		}
		return -1, fmt.Errorf("SIGKILL: %w", err)
	}
	r.log.Info("killed a leftover sandbox process", "pid", p.pid, "command", p.comm, "attempt", p.attempt, "found_by", p.why)
	return fd, nil
}

// waitExited waits until every pidfd reports its process exited.
func waitExited(ctx context.Context, pidfds []int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pending := slices.Clone(pidfds)
	for len(pending) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%d killed sandbox processes did not exit within %s", len(pending), wait)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		fds := make([]unix.PollFd, len(pending))
		for i, fd := range pending {
			fds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		}
		// Bounded so a cancelled ctx is seen within a tenth of a second.
		_, err := unix.Poll(fds, int(min(left, 100*time.Millisecond).Milliseconds())+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("wait for killed sandbox processes: %w", err)
		}
		pending = pending[:0]
		for _, f := range fds {
			if f.Revents == 0 {
				pending = append(pending, int(f.Fd))
			}
		}
	}
	return nil
}

// scanProcesses finds the live processes tied to attempts that are not
// kept: those whose command line names a path in an attempt, whose working
// or root directory is in one, or whose mount namespace holds a mount on an
// attempt's path that the caller's namespace does not (a copy of the
// caller's own mounts proves nothing); then, transitively, their children
// and the members of process groups they lead. The caller and its
// ancestors are never included.
func (r *reclaimer) scanProcesses() ([]process, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	all := make(map[int]process, len(procs))
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil || st.State == "Z" || st.State == "X" {
			continue // exited meanwhile, or a zombie: it holds nothing
		}
		all[p.PID] = process{pid: p.PID, ppid: st.PPID, pgrp: st.PGRP, start: st.Starttime, comm: st.Comm}
	}
	protected := map[int]bool{}
	for pid := os.Getpid(); pid > 0 && !protected[pid]; pid = all[pid].ppid {
		protected[pid] = true
	}
	ownMounts, err := mountSet("self")
	if err != nil {
		return nil, fmt.Errorf("read own mounts: %w", err)
	}
	ownNS, _ := os.Readlink("/proc/self/ns/mnt")
	byNamespace := map[string]string{} // mount namespace and root → attempt of a mount only it holds
	found := map[int]process{}
	for pid, p := range all {
		if protected[pid] {
			continue
		}
		if p.attempt, p.why = r.attemptOfProcess(pid, ownNS, ownMounts, byNamespace); p.attempt != "" {
			found[pid] = p
		}
	}
	for grew := true; grew; {
		grew = false
		for pid, p := range all {
			if _, ok := found[pid]; ok || protected[pid] {
				continue
			}
			if parent, ok := found[p.ppid]; ok {
				p.attempt, p.why = parent.attempt, "child of pid "+strconv.Itoa(parent.pid)
			} else if leader, ok := found[p.pgrp]; ok {
				p.attempt, p.why = leader.attempt, "in the process group of pid "+strconv.Itoa(leader.pid)
			} else {
				continue
			}
			found[pid] = p
			grew = true
		}
	}
	out := make([]process, 0, len(found))
	for _, p := range found {
		if !r.keep(p.attempt) {
			out = append(out, p)
		}
	}
	// Parents first: a sandbox's init dies before its descendants are
	// signalled one by one, which mostly finds them gone already.
	slices.SortFunc(out, func(a, b process) int { return a.pid - b.pid })
	return out, nil
}

// attemptOfProcess returns the attempt pid is tied to and how that was
// found, or "" when it is not tied to one.
func (r *reclaimer) attemptOfProcess(pid int, ownNS string, ownMounts map[mountKey]bool, byNamespace map[string]string) (attempt, why string) {
	proc, err := procfs.NewProc(pid)
	if err != nil {
		return "", ""
	}
	if args, err := proc.CmdLine(); err == nil {
		for _, arg := range args {
			if id := r.attemptOfArg(arg); id != "" {
				return id, "command line"
			}
		}
	}
	if cwd, err := proc.Cwd(); err == nil {
		if id := r.attemptOfPath(cwd); id != "" {
			return id, "working directory"
		}
	}
	root, err := proc.RootDir()
	if err == nil {
		if id := r.attemptOfPath(root); id != "" {
			return id, "root directory"
		}
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	if err != nil || ns == ownNS {
		return "", ""
	}
	key := ns + "\x00" + root
	id, seen := byNamespace[key]
	if !seen {
		id = r.attemptOfNamespace(strconv.Itoa(pid), ownMounts)
		byNamespace[key] = id
	}
	if id != "" {
		return id, "mount namespace"
	}
	return "", ""
}

// attemptOfNamespace returns the attempt of a mount below dir that the
// mount namespace of /proc/<pid> holds and the caller's does not.
func (r *reclaimer) attemptOfNamespace(pid string, ownMounts map[mountKey]bool) string {
	mounts, err := readMounts(pid)
	if err != nil {
		return ""
	}
	for _, m := range mounts {
		if ownMounts[keyOf(m)] {
			continue
		}
		if id := r.attemptOfPath(m.Mountpoint); id != "" {
			return id
		}
		// A sandbox that pivoted into its attempt's overlay sees its
		// mounts at its own paths ("/", "/logs/agent"); the overlay's
		// options still name the attempt's upper and work dirs on the
		// host (a pod's pid 1 is found this way).
		for _, opt := range strings.Split(m.VFSOptions, ",") {
			if id := r.attemptOfArg(opt); id != "" {
				return id
			}
		}
	}
	return ""
}

// mountKey identifies a mount across namespaces: a copy of a mount in
// another namespace has the same device and mount point.
type mountKey struct {
	major, minor int
	root, point  string
}

func keyOf(m *mountinfo.Info) mountKey {
	return mountKey{major: m.Major, minor: m.Minor, root: m.Root, point: m.Mountpoint}
}

func mountSet(pid string) (map[mountKey]bool, error) {
	mounts, err := readMounts(pid)
	if err != nil {
		return nil, err
	}
	set := make(map[mountKey]bool, len(mounts))
	for _, m := range mounts {
		set[keyOf(m)] = true
	}
	return set, nil
}

// readMounts reads /proc/<pid>/mountinfo.
func readMounts(pid string) ([]*mountinfo.Info, error) {
	f, err := os.Open("/proc/" + pid + "/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mountinfo.GetMountsFromReader(f, nil)
}
