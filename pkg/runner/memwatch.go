package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// memWatchInterval is how often the agent phase's memory is sampled. The
// peak of each process is the kernel's own (VmHWM), so sampling only has to
// see a process once, not at its peak.
const memWatchInterval = 50 * time.Millisecond

// Owners of a process in a memory report.
const (
	// ownerAgent: the agent phase's process tree — the harness's program
	// and every command it ran (that stayed in its tree).
	ownerAgent = "agent"
	// ownerTask: any other process of the sandbox — left running by an
	// earlier phase, the task's own services, or detached from the agent's
	// tree (a daemon it started).
	ownerTask = "task"
)

// memWatch samples, while the agent phase runs, every process of the
// memory cgroup the phase is limited by (the pod's, or the phase's own):
// its peak resident memory and whether it belongs to the agent phase's
// process tree. When the kernel's OOM killer ends processes, it tells
// which: those that vanished between the samples around the kill count.
type memWatch struct {
	procs   string     // the memory cgroup's cgroup.procs
	oom     func() int // the cgroup's OOM kill count
	program fileID     // the harness bundle's program (zero: none)

	mu      sync.Mutex
	root    int // the phase's process, host pid
	seen    map[int]*procMem
	last    map[int]bool // pids in the latest sample
	kills   int          // the OOM count at the latest sample
	victims []int
	stop    chan struct{}
	done    chan struct{}
}

// fileID identifies an executable by device and inode (the same through
// any bind mount of it).
type fileID struct{ dev, ino uint64 }

// procMem is one process as the watch saw it.
type procMem struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	Owner   string `json:"owner"`
	// Program marks the harness's own program (its bundle's executable).
	Program bool  `json:"harness_program,omitempty"`
	PeakMB  int64 `json:"peak_rss_mb"`
	// Killed marks a process that vanished when the OOM killer struck.
	Killed bool `json:"oom_killed,omitempty"`
}

// MemoryReport is what the agent phase's processes used, for an attempt
// killed for memory: result.json's agent_result.metadata.memory.
type MemoryReport struct {
	// UsedBy is "agent" or "task": whose processes the OOM killer ended
	// (else whose processes peaked higher).
	UsedBy string `json:"used_by"`
	// AgentPeakMB and TaskPeakMB sum the peak resident memory of the
	// agent's and the task's processes; ProgramPeakMB is the part of the
	// agent's that was the harness's own program.
	AgentPeakMB   int64 `json:"agent_peak_rss_mb"`
	ProgramPeakMB int64 `json:"harness_program_peak_rss_mb,omitempty"`
	TaskPeakMB    int64 `json:"task_peak_rss_mb"`
	// Killed are the processes the OOM killer ended, as far as seen.
	Killed []procMem `json:"killed,omitempty"`
	// Largest are the processes with the highest peaks (at most five).
	Largest []procMem `json:"largest"`
}

// newMemWatch watches the memory cgroup of cg; nil when it has none (no
// limit, or a runner without cgroups). program is the host path of the
// harness bundle's executable ("" for none).
func newMemWatch(cg *cgroup, program string) *memWatch {
	if cg == nil || cg.memory == "" {
		return nil
	}
	w := &memWatch{procs: filepath.Join(cg.memory, "cgroup.procs"), oom: cg.oomKills}
	if program != "" {
		w.program, _ = idOf(program)
	}
	return w
}

func idOf(path string) (fileID, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileID{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino}, true
}

// begin starts sampling; root is the phase's process (host pid).
func (w *memWatch) begin(root int) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.root, w.seen, w.last, w.victims = root, map[int]*procMem{}, map[int]bool{}, nil
	w.kills = w.oom()
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	w.mu.Unlock()
	go func() {
		defer close(w.done)
		tick := time.NewTicker(memWatchInterval)
		defer tick.Stop()
		for {
			w.sample()
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
}

// end stops sampling (after a last sample).
func (w *memWatch) end() {
	if w == nil || w.stop == nil {
		return
	}
	close(w.stop)
	<-w.done
	w.sample()
	w.stop = nil
}

// sample reads every process of the cgroup once.
func (w *memWatch) sample() {
	data, err := os.ReadFile(w.procs)
	if err != nil {
		return
	}
	ppid := map[int]int{}
	comm := map[int]string{}
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		if c, pp, ok := procStat(pid); ok {
			ppid[pid], comm[pid] = pp, c
		}
	}
	kills := w.oom()
	w.mu.Lock()
	defer w.mu.Unlock()
	if kills > w.kills {
		// What vanished since the last sample went with the kill.
		for pid := range w.last {
			if _, alive := ppid[pid]; !alive {
				w.victims = append(w.victims, pid)
			}
		}
	}
	w.kills = kills
	w.last = map[int]bool{}
	for pid, pp := range ppid {
		w.last[pid] = true
		hwm := procHWM(pid)
		m := w.seen[pid]
		if m == nil {
			m = &procMem{PID: pid}
			w.seen[pid] = m
		}
		// Where it is now: a process its parent left (a daemon) is the
		// task's from then on; an exec may make it the program.
		m.Command, m.Owner = comm[pid], ownerTask
		if w.inTree(pid, pp, ppid) {
			m.Owner = ownerAgent
		}
		if w.program != (fileID{}) {
			id, ok := idOf(fmt.Sprintf("/proc/%d/exe", pid))
			m.Program = ok && id == w.program
		}
		m.PeakMB = max(m.PeakMB, hwm>>10)
	}
}

// inTree reports whether pid (parent pp) descends from the phase's root
// through processes of the cgroup.
func (w *memWatch) inTree(pid, pp int, ppid map[int]int) bool {
	for hops := 0; hops < 1024; hops++ {
		if pid == w.root || pp == w.root {
			return true
		}
		next, ok := ppid[pp]
		if !ok {
			return false
		}
		pid, pp = pp, next
	}
	return false
}

// report summarises what the watch saw; nil when it saw nothing.
func (w *memWatch) report() *MemoryReport {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seen) == 0 {
		return nil
	}
	r := &MemoryReport{}
	all := make([]procMem, 0, len(w.seen))
	for _, pid := range w.victims {
		if m := w.seen[pid]; m != nil {
			m.Killed = true
		}
	}
	for _, m := range w.seen {
		all = append(all, *m)
		switch m.Owner {
		case ownerAgent:
			r.AgentPeakMB += m.PeakMB
			if m.Program {
				r.ProgramPeakMB += m.PeakMB
			}
		default:
			r.TaskPeakMB += m.PeakMB
		}
		if m.Killed {
			r.Killed = append(r.Killed, *m)
		}
	}
	byPeak := func(a, b procMem) int {
		if a.PeakMB != b.PeakMB {
			return int(b.PeakMB - a.PeakMB)
		}
		return a.PID - b.PID
	}
	slices.SortFunc(all, byPeak)
	slices.SortFunc(r.Killed, byPeak)
	r.Largest = all[:min(5, len(all))]
	// The OOM killer ends the process with the most memory: whose it was
	// says who used it. Without a seen victim, the larger peak says.
	switch {
	case len(r.Killed) > 0:
		r.UsedBy = r.Killed[0].Owner
	case r.AgentPeakMB >= r.TaskPeakMB:
		r.UsedBy = ownerAgent
	default:
		r.UsedBy = ownerTask
	}
	return r
}

// Describe is the report in a sentence, for the exception message.
func (r *MemoryReport) Describe() string {
	if r == nil {
		return "which processes used the memory is unknown (none was seen)"
	}
	var b strings.Builder
	if r.UsedBy == ownerAgent {
		b.WriteString("the agent used the memory")
	} else {
		b.WriteString("the task's own processes used the memory, not the agent")
	}
	if len(r.Killed) > 0 {
		k := r.Killed[0]
		fmt.Fprintf(&b, ": the kernel killed %s (pid %d, %d MB, %s)", k.Command, k.PID, k.PeakMB, k.describeOwner())
	}
	fmt.Fprintf(&b, "; peak resident memory: the agent's processes %d MB", r.AgentPeakMB)
	if r.ProgramPeakMB > 0 {
		fmt.Fprintf(&b, " (its program %d MB)", r.ProgramPeakMB)
	}
	fmt.Fprintf(&b, ", the task's other processes %d MB", r.TaskPeakMB)
	return b.String()
}

func (m procMem) describeOwner() string {
	switch {
	case m.Program:
		return "the harness's program"
	case m.Owner == ownerAgent:
		return "in the agent's process tree"
	default:
		return "outside the agent's process tree"
	}
}

// procStat reads a process's command name and parent from /proc/PID/stat.
func procStat(pid int) (comm string, ppid int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", 0, false
	}
	fields := strings.Fields(s[closing+1:])
	if len(fields) < 2 {
		return "", 0, false
	}
	pp, err := strconv.Atoi(fields[1])
	return s[open+1 : closing], pp, err == nil
}

// procHWM is a process's peak resident memory in KB (VmHWM; 0 when gone).
func procHWM(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
