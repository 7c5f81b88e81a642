package runner

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A program limited below its memory need is not always killed for it: one
// whose code is file pages (a single-binary Bun or Node program) keeps
// running while the kernel evicts those pages and reads them back, in
// uninterruptible sleep, making almost no progress, until the agent's
// timeout (seen on this machine with opencode and cline, and at times
// claude-code, qwen-code and codex). The kernel's pressure stall
// information (PSI) measures exactly that: the share of wall time in which
// some process of a cgroup waited on memory (reclaim, or re-reading pages
// it had evicted). The memory watch reads it for the sandbox's cgroup; held
// above a threshold for a whole window, the runner ends the agent phase as
// memory-starved — an out-of-memory outcome like the kernel's kill.

// Default memory-starvation thresholds (MemoryStarvation's zero values).
const (
	// DefaultMemoryStallPercent: a sandbox whose processes were stalled
	// on memory for at least this share of the window is starved. A
	// crawling program stalled 39–60 % and more of 30 s windows here (13 %
	// for one the kernel killed later); a healthy one, even at its limit
	// and reclaiming its page cache, at most 16 % of a 5 s window.
	DefaultMemoryStallPercent = 30
	// DefaultMemoryStallWindow is how long the stall share must hold: long
	// enough that a burst of reclaim (a large allocation at the limit, a
	// big file written) is not taken for a crawl, short next to an agent
	// timeout of minutes.
	DefaultMemoryStallWindow = 30 * time.Second
)

// MemoryStarvation says when the runner ends an agent phase as
// memory-starved (Options.MemoryStarvation; the sandbox-runner's
// --memory-stall-percent and --memory-stall-window).
type MemoryStarvation struct {
	// StallPercent is the share (percent) of the window the sandbox's
	// processes must have been stalled on memory (PSI "some": at least one
	// of them waiting): 0 = DefaultMemoryStallPercent, < 0 = never end a
	// phase as starved.
	StallPercent float64
	// Window is how long the share is measured over (0 =
	// DefaultMemoryStallWindow).
	Window time.Duration
}

// resolved is s with its defaults filled in.
func (s MemoryStarvation) resolved() MemoryStarvation {
	if s.StallPercent == 0 {
		s.StallPercent = DefaultMemoryStallPercent
	}
	if s.Window <= 0 {
		s.Window = DefaultMemoryStallWindow
	}
	return s
}

// Validate rejects thresholds that cannot mean anything.
func (s MemoryStarvation) Validate() error {
	if s.StallPercent > 100 {
		return fmt.Errorf("memory stall percent %g: must be at most 100 (0 = %d, negative = never end a phase as memory-starved)",
			s.StallPercent, DefaultMemoryStallPercent)
	}
	if s.Window < 0 {
		return fmt.Errorf("memory stall window %s: must not be negative (0 = %s)", s.Window, DefaultMemoryStallWindow)
	}
	return nil
}

// Starvation is what the watch saw when it ended a phase as memory-starved:
// result.json's agent_result.metadata.memory.starved.
type Starvation struct {
	// StallPercent is the share of the window the sandbox's processes were
	// stalled on memory (PSI "some"), FullPercent the share all of them
	// were at once (PSI "full").
	StallPercent float64 `json:"stall_percent"`
	FullPercent  float64 `json:"full_stall_percent"`
	// WindowSeconds is the window measured over; ThresholdPercent the
	// setting it reached.
	WindowSeconds    float64 `json:"window_seconds"`
	ThresholdPercent float64 `json:"threshold_percent"`
	// LimitHits is how often a charge met the cgroup's limit over the
	// phase (v2 memory.events "max", v1 memory.failcnt and
	// memory.memsw.failcnt).
	LimitHits int64 `json:"limit_hits"`
}

// Describe is the starvation in words, for the exception message.
func (s *Starvation) Describe() string {
	return fmt.Sprintf("its processes were stalled on memory (reclaiming, re-reading pages the limit evicted) %.0f%% of the last %.0f s (threshold %.0f%%; the limit was reached %d times)",
		s.StallPercent, s.WindowSeconds, s.ThresholdPercent, s.LimitHits)
}

// stallSample is one reading of a memory.pressure file.
type stallSample struct {
	at         time.Time
	some, full int64 // total stall, µs
}

// pressure reads the memory stall of one cgroup v2 directory. On a hybrid
// host (cgroup v1 controllers, cgroup2 mounted at unified/) the memory
// cgroup has no memory.pressure: the kernel accounts pressure per cgroup v2
// group whatever its controllers, so the watch makes a controller-less v2
// group beside it and moves the memory cgroup's processes into it (their
// children follow), and out again at the end.
type pressure struct {
	file string // memory.pressure
	// group is the v2 group the watch made ("" = the memory cgroup's own
	// file); home is where its processes go back to.
	group, home string
	moved       map[int]bool
	// events reads the count of the limit being reached.
	events func() int64
}

// newPressure finds (or makes) the memory.pressure the watch reads for
// cg; nil when the kernel offers none.
func newPressure(cg *cgroup) (*pressure, error) {
	if cg.v2 {
		p := &pressure{file: filepath.Join(cg.memory, "memory.pressure"), events: func() int64 {
			n, _ := readOOMKills(filepath.Join(cg.memory, "memory.events"), "max")
			return int64(n)
		}}
		if _, err := os.Stat(p.file); err != nil {
			return nil, fmt.Errorf("no memory pressure (PSI) for the cgroup: %w", err)
		}
		return p, nil
	}
	unified := filepath.Join(cgroupRoot, "unified")
	if _, err := os.Stat(filepath.Join(unified, "memory.pressure")); err != nil {
		return nil, fmt.Errorf("no memory pressure (PSI): the host mounts no cgroup2 with memory.pressure at %s", unified)
	}
	home, err := ownV2Group(unified)
	if err != nil {
		return nil, err
	}
	group := filepath.Join(unified, cgroupParent, filepath.Base(cg.memory)+"-psi")
	if err := os.MkdirAll(group, 0o755); err != nil {
		return nil, fmt.Errorf("memory pressure group: %w", err)
	}
	return &pressure{file: filepath.Join(group, "memory.pressure"), group: group, home: home, moved: map[int]bool{},
		events: func() int64 {
			// The memory+swap counter is charged first where swap is
			// accounted (newCgroup limits both): its failures are the
			// limit's.
			var n int64
			for _, f := range []string{"memory.failcnt", "memory.memsw.failcnt"} {
				data, _ := os.ReadFile(filepath.Join(cg.memory, f))
				c, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
				n += c
			}
			return n
		}}, nil
}

// ownV2Group is the cgroup v2 directory this process is in, under unified.
func ownV2Group(unified string) (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(unified, rest), nil
		}
	}
	return "", errors.New("this process is in no cgroup v2 group")
}

// follow moves the processes pids (the memory cgroup's) into the pressure
// group; a process already there, or gone, is left.
func (p *pressure) follow(pids []int) {
	if p == nil || p.group == "" {
		return
	}
	alive := make(map[int]bool, len(pids))
	for _, pid := range pids {
		alive[pid] = true
		if !p.moved[pid] {
			_ = os.WriteFile(filepath.Join(p.group, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
			p.moved[pid] = true
		}
	}
	for pid := range p.moved {
		if !alive[pid] {
			delete(p.moved, pid)
		}
	}
}

// read is the group's stall now.
func (p *pressure) read(now time.Time) (stallSample, bool) {
	f, err := os.Open(p.file)
	if err != nil {
		return stallSample{}, false
	}
	defer f.Close()
	s := stallSample{at: now}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		for _, kv := range fields[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				switch fields[0] {
				case "some":
					s.some = n
				case "full":
					s.full = n
				}
			}
		}
	}
	return s, true
}

// close moves what still runs (a pod keeps its processes after the phase)
// back where it came from and removes the group.
func (p *pressure) close() error {
	if p == nil || p.group == "" {
		return nil
	}
	procs := filepath.Join(p.group, "cgroup.procs")
	var err error
	for range 100 {
		data, rerr := os.ReadFile(procs)
		if rerr != nil {
			return nil // gone already
		}
		for _, f := range strings.Fields(string(data)) {
			_ = os.WriteFile(filepath.Join(p.home, "cgroup.procs"), []byte(f), 0o644)
		}
		if err = os.Remove(p.group); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	return fmt.Errorf("remove memory pressure group %s: %w", p.group, err)
}

// stallWindow holds a phase's pressure readings over the starvation window.
type stallWindow struct {
	policy  MemoryStarvation
	samples []stallSample
	// highest is the highest stall share (percent) over a whole window
	// seen, for the log.
	highest float64
}

// add records s and reports the stall over the window when it reaches the
// threshold (nil otherwise, or while less than a window was seen).
func (w *stallWindow) add(s stallSample) *Starvation {
	w.samples = append(w.samples, s)
	edge := s.at.Add(-w.policy.Window)
	// Keep the latest reading at or before the window's start.
	for len(w.samples) > 1 && !w.samples[1].at.After(edge) {
		w.samples = w.samples[1:]
	}
	first := w.samples[0]
	if first.at.After(edge) {
		return nil
	}
	span := s.at.Sub(first.at).Microseconds()
	if span <= 0 {
		return nil
	}
	some := 100 * float64(s.some-first.some) / float64(span)
	w.highest = max(w.highest, some)
	if some < w.policy.StallPercent || w.policy.StallPercent < 0 {
		return nil
	}
	return &Starvation{StallPercent: some, FullPercent: 100 * float64(s.full-first.full) / float64(span),
		WindowSeconds: float64(span) / 1e6, ThresholdPercent: w.policy.StallPercent}
}
