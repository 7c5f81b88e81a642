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

// Whose memory it was, in a memory report.
const (
	// ownerAgent: the agent itself — the harness's own program (its
	// bundle's executable), or, for a harness without one (command,
	// oracle), the agent phase's process tree.
	ownerAgent = "agent"
	// ownerTask: the task's own processes — the commands a harness's
	// program ran for the task, and any process of the sandbox outside the
	// agent phase's tree (left running by an earlier phase, the task's
	// services, a daemon the agent detached).
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
	// platform are the platform's own executables (the runner's pod-init
	// and forwarder, bwrap, nsenter), left out of the report.
	platform map[fileID]bool

	mu   sync.Mutex
	root int // the phase's process, host pid
	seen map[int]*procMem
	// counts are the cgroup's OOM kill count read before each sample's
	// processes: a process first seen in sample j and missing from sample
	// i may have been killed for memory if the count rose from counts[j]
	// to counts[i+1] (or the count at the report, when i is the last) —
	// a killed process is still seen while it exits. Of those, the
	// largest are the victims (the kernel kills the process with the most
	// memory), as many as it counted.
	counts []int
	// prev is the agent's and the task's resident memory (KB) at the
	// latest sample; atKill at the sample before the count first rose
	// (killSeen), most the highest total seen.
	prev, atKill, most [2]int64
	killSeen           bool
	stop               chan struct{}
	done               chan struct{}

	// press reads the cgroup's memory pressure (memstarve.go); nil: the
	// kernel offers none, and no phase is ended as starved.
	press *pressure
	// stalls are the pressure readings over the starvation window.
	stalls stallWindow
	// hitsBefore is the count of the limit being reached at begin.
	hitsBefore int64
	// starvedC is closed when the stall held over the window; starvation
	// says what it was.
	starvedC   chan struct{}
	starvation *Starvation
}

// fileID identifies an executable by device and inode (the same through
// any bind mount of it).
type fileID struct{ dev, ino uint64 }

// procMem is one process as the watch saw it.
type procMem struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	// Owner is ownerAgent or ownerTask (set by report).
	Owner string `json:"owner"`
	// InAgentTree: the process descends from the agent phase's process.
	InAgentTree bool `json:"in_agent_tree"`
	// Program marks the harness's own program (its bundle's executable).
	Program bool  `json:"harness_program,omitempty"`
	PeakMB  int64 `json:"peak_rss_mb"`
	// Killed marks a process that vanished when the OOM killer struck.
	Killed bool `json:"oom_killed,omitempty"`

	platform    bool // the platform's own process, not reported
	firstSample int  // the first sample that saw it
	lastSample  int  // the last sample that saw it
	goneAt      int  // the first sample after that did not (0: alive)
}

// MemoryReport is what the agent phase's processes used, for an attempt
// killed for memory: result.json's agent_result.metadata.memory.
type MemoryReport struct {
	// UsedBy is "agent" or "task": whose processes the OOM killer ended
	// (else whose processes peaked higher).
	UsedBy string `json:"used_by"`
	// AgentMB and TaskMB are the resident memory of the agent's and the
	// task's processes at the last sample before the kernel's first kill
	// (at their highest total when no sample caught a kill).
	AgentMB int64 `json:"agent_rss_mb"`
	TaskMB  int64 `json:"task_rss_mb"`
	// Killed are the processes the OOM killer ended, as far as seen.
	Killed []procMem `json:"killed,omitempty"`
	// Largest are the processes with the highest peaks (at most five).
	Largest []procMem `json:"largest"`
	// Starved is set when the runner ended the phase as memory-starved:
	// its processes stalled on memory over the whole window, not killed.
	Starved *Starvation `json:"starved,omitempty"`
}

// newMemWatch watches the memory cgroup of cg; nil when it has none (no
// limit, or a runner without cgroups). program is the host path of the
// harness bundle's executable ("" for none).
func newMemWatch(cg *cgroup, program string, platform ...string) *memWatch {
	if cg == nil || cg.memory == "" {
		return nil
	}
	w := &memWatch{procs: filepath.Join(cg.memory, "cgroup.procs"), oom: cg.oomKills, platform: map[fileID]bool{}}
	if program != "" {
		w.program, _ = idOf(program)
	}
	for _, p := range platform {
		if id, ok := idOf(p); ok && p != "" {
			w.platform[id] = true
		}
	}
	return w
}

// starving makes the watch end the phase as memory-starved under policy
// (memstarve.go); the error says why it cannot (no PSI), and the watch
// then only attributes.
func (w *memWatch) starving(policy MemoryStarvation, cg *cgroup) error {
	if w == nil {
		return nil
	}
	w.stalls.policy = policy.resolved()
	p, err := newPressure(cg)
	if err != nil {
		return err
	}
	w.press = p
	return nil
}

// starved is closed when the phase's processes were stalled on memory over
// the whole window (never, for a watch without pressure).
func (w *memWatch) starved() <-chan struct{} {
	if w == nil || w.press == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.starvedC
}

// starvedBy is what ended the phase as starved (nil: it was not).
func (w *memWatch) starvedBy() *Starvation {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.starvation
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
	w.root, w.seen, w.counts = root, map[int]*procMem{}, nil
	w.prev, w.atKill, w.most, w.killSeen = [2]int64{}, [2]int64{}, [2]int64{}, false
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	w.stalls.samples, w.starvation, w.starvedC = nil, nil, make(chan struct{})
	if w.press != nil {
		w.hitsBefore = w.press.events()
	}
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

// close undoes what the watch set up beside the cgroup (the pressure
// group of a hybrid host), once the phase is over; highest is the highest
// share of a window its processes were stalled on memory (-1: not
// measured).
func (w *memWatch) close() (highest float64, err error) {
	if w == nil || w.press == nil {
		return -1, nil
	}
	w.mu.Lock()
	highest = w.stalls.highest
	w.mu.Unlock()
	return highest, w.press.close()
}

// sample reads every process of the cgroup once.
func (w *memWatch) sample() {
	kills := w.oom()
	data, err := os.ReadFile(w.procs)
	if err != nil {
		return
	}
	ppid := map[int]int{}
	comm := map[int]string{}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		pids = append(pids, pid)
		// A zombie is gone: its memory is freed, only its parent's
		// wait is left.
		if c, pp, state, ok := procStat(pid); ok && state != "Z" {
			ppid[pid], comm[pid] = pp, c
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pressureSample(pids)
	i := len(w.counts)
	w.counts = append(w.counts, kills)
	for pid, m := range w.seen {
		if _, alive := ppid[pid]; !alive && m.goneAt == 0 {
			m.goneAt = i
		}
	}
	var sums [2]int64
	for pid, pp := range ppid {
		hwm, rss := procMemKB(pid)
		m := w.seen[pid]
		if m == nil || m.goneAt != 0 { // new, or a reused pid
			m = &procMem{PID: pid, firstSample: i}
			w.seen[pid] = m
		}
		m.lastSample = i
		// Where it is now: a process its parent left (a daemon) is the
		// task's from then on; an exec may make it the program.
		m.Command, m.InAgentTree = comm[pid], w.inTree(pid, pp, ppid)
		// An exiting process (its memory being freed after a kill) has
		// no exe any more: what it was stays.
		if id, ok := idOf(fmt.Sprintf("/proc/%d/exe", pid)); ok {
			m.Program = w.program != (fileID{}) && id == w.program
			m.platform = w.platform[id]
		}
		m.PeakMB = max(m.PeakMB, hwm>>10)
		if !m.platform {
			sums[w.ownerOf(m)] += rss
		}
	}
	if i > 0 && kills > w.counts[i-1] && !w.killSeen {
		w.atKill, w.killSeen = w.prev, true
	}
	w.prev = sums
	if sums[0]+sums[1] > w.most[0]+w.most[1] {
		w.most = sums
	}
	// A process gone with no kill counted over its life cannot be a
	// victim: forgotten, so a long run's thousands of commands cost
	// nothing.
	for pid, m := range w.seen {
		if m.goneAt > 0 && m.goneAt+1 <= i && w.counts[m.goneAt+1] == w.counts[m.firstSample] {
			delete(w.seen, pid)
		}
	}
}

// pressureSample moves new processes into the pressure group and reads
// the stall; held over the window, the phase is starved. Under w.mu.
func (w *memWatch) pressureSample(pids []int) {
	if w.press == nil || w.starvedC == nil {
		return
	}
	w.press.follow(pids)
	s, ok := w.press.read(time.Now())
	if !ok || w.starvation != nil {
		return
	}
	if st := w.stalls.add(s); st != nil {
		st.LimitHits = w.press.events() - w.hitsBefore
		w.starvation = st
		close(w.starvedC)
	}
}

// ownerOf is 0 for the agent, 1 for the task (see ownerAgent, ownerTask).
func (w *memWatch) ownerOf(m *procMem) int {
	if m.Program || w.program == (fileID{}) && m.InAgentTree {
		return 0
	}
	return 1
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
	final := w.oom()
	for _, m := range w.seen {
		if m.goneAt == 0 {
			continue
		}
		after := final
		if m.goneAt+1 < len(w.counts) {
			after = w.counts[m.goneAt+1]
		}
		// Over its whole life: a killed process may still be seen for
		// several samples while it exits, after the count rose.
		m.Killed = after > w.counts[m.firstSample]
	}
	for _, m := range w.seen {
		if m.platform {
			continue
		}
		m.Owner = [2]string{ownerAgent, ownerTask}[w.ownerOf(m)]
		all = append(all, *m)
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
	// A short-lived process that ended on its own beside the kill looks
	// the same; the kernel kills the largest, and no more than it counted.
	if len(w.counts) > 0 {
		r.Killed = r.Killed[:min(len(r.Killed), max(final-w.counts[0], 0))]
	}
	r.Largest = all[:min(5, len(all))]
	r.Starved = w.starvation
	at := w.most
	if w.killSeen {
		at = w.atKill
	}
	r.AgentMB, r.TaskMB = at[0]>>10, at[1]>>10
	// The OOM killer ends the process with the most memory: whose it was
	// says who used it. Without a seen victim, the larger peak says.
	switch {
	case len(r.Killed) > 0:
		r.UsedBy = r.Killed[0].Owner
	case r.AgentMB >= r.TaskMB:
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
	when := "before the kill"
	if len(r.Killed) == 0 && r.Starved != nil {
		when = "at its highest"
	}
	fmt.Fprintf(&b, "; resident memory %s: the agent %d MB, the task's processes %d MB", when, r.AgentMB, r.TaskMB)
	return b.String()
}

func (m procMem) describeOwner() string {
	switch {
	case m.Program:
		return "the harness's program"
	case m.Owner == ownerAgent:
		return "the agent's command"
	case m.InAgentTree:
		return "a command the agent ran"
	default:
		return "outside the agent's process tree"
	}
}

// procStat reads a process's command name, parent and state from
// /proc/PID/stat.
func procStat(pid int) (comm string, ppid int, state string, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, "", false
	}
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", 0, "", false
	}
	fields := strings.Fields(s[closing+1:])
	if len(fields) < 2 {
		return "", 0, "", false
	}
	pp, err := strconv.Atoi(fields[1])
	return s[open+1 : closing], pp, fields[0], err == nil
}

// procMemKB is a process's peak and current resident memory in KB (VmHWM,
// VmRSS; 0 when gone).
func procMemKB(pid int) (hwm, rss int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != "VmHWM" && k != "VmRSS" {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if k == "VmHWM" {
			hwm = n
		} else {
			rss = n
		}
	}
	return hwm, rss
}
