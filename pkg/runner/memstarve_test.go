package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// TestStallWindow: the stall share counts only once a whole window was
// seen, over the window's span, and a negative threshold never starves.
func TestStallWindow(t *testing.T) {
	at := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	w := stallWindow{policy: MemoryStarvation{StallPercent: 60, Window: 10 * time.Second}}
	// Stalled 90 % of every second, but for less than a window.
	var some int64
	for i := 0; i < 10; i++ {
		if s := w.add(stallSample{at: at.Add(time.Duration(i) * time.Second), some: some, full: some / 2}); s != nil {
			t.Fatalf("starved after %d s of a 10 s window: %+v", i, s)
		}
		some += 900_000
	}
	s := w.add(stallSample{at: at.Add(10 * time.Second), some: some, full: some / 2})
	if s == nil || s.StallPercent < 89 || s.StallPercent > 91 || s.FullPercent < 44 || s.FullPercent > 46 || s.WindowSeconds != 10 {
		t.Fatalf("after a whole window at 90 %%: %+v", s)
	}
	// Healthy: a burst of reclaim (5 s at 100 %) in a window otherwise
	// free of stalls stays under 60 %.
	w = stallWindow{policy: MemoryStarvation{StallPercent: 60, Window: 10 * time.Second}}
	some = 0
	for i := 0; i <= 30; i++ {
		if s := w.add(stallSample{at: at.Add(time.Duration(i) * time.Second), some: some}); s != nil {
			t.Fatalf("a 5 s burst starved the phase at %d s: %+v", i, s)
		}
		if i >= 12 && i < 17 {
			some += 1_000_000
		}
	}
	if len(w.samples) > 12 {
		t.Errorf("the window keeps %d readings of 1 s, want about 11", len(w.samples))
	}
	w = stallWindow{policy: MemoryStarvation{StallPercent: -1, Window: time.Second}}
	w.add(stallSample{at: at})
	if s := w.add(stallSample{at: at.Add(2 * time.Second), some: 2_000_000}); s != nil {
		t.Errorf("a negative threshold starved: %+v", s)
	}
	if err := (MemoryStarvation{StallPercent: 120}).Validate(); err == nil || !strings.Contains(err.Error(), "at most 100") {
		t.Errorf("Validate(120 %%) = %v", err)
	}
	if err := (MemoryStarvation{Window: -time.Second}).Validate(); err == nil {
		t.Error("Validate(negative window) = nil")
	}
}

// answered counts the calls the mock answered.
func answered(mock *modelmock.Server) int {
	n := 0
	for _, req := range mock.Handler.Requests() {
		if req.Status == 200 {
			n++
		}
	}
	return n
}

// TestOOMOfEveryAgentsProgram gives each bundled harness's real program a
// quarter of the memory it declares it needs, in a task image, with the
// default starvation thresholds and a 5-minute agent timeout: every one
// ends for memory — killed by the kernel, or ended by the runner as
// memory-starved where it crawled on its own page cache instead — never at
// the agent timeout; the agent is named as having used the memory, and the
// tokens agree everywhere on what it was answered before.
func TestOOMOfEveryAgentsProgram(t *testing.T) {
	for _, name := range e2eHarnesses() {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // independent attempts: own mock, work dir, cgroups and network
			mock := modelmock.NewServer(modelmock.Script{APIKey: modelKey, Usage: mockUsage, NoToolsText: "Mock title",
				Turns: []modelmock.Turn{{Shell: &modelmock.ShellCall{Command: "echo gauntlet > /app/answer.txt", Description: "solve"}}, {Text: "Done."}}})
			defer mock.Close()
			h, _ := harness.Lookup(name)
			spec := agentSpec(t, name)
			spec.MemoryMB = h.MemoryMB / 4
			if name == "codex" {
				// Its static binary starts in ≈ 40 MB: a quarter of its
				// 8-turn need is still enough to start and answer.
				spec.MemoryMB = 32
			}
			r, _ := runAgentTrial(t, spec, mock, inImage)
			ex := r.result.ExceptionInfo
			if ex == nil || ex.ExceptionType != harbor.ExceptionAgentOOM {
				t.Fatalf("exception = %+v at %d MB, want %s\nrunner log:\n%s", ex, spec.MemoryMB, harbor.ExceptionAgentOOM, r.artifact(t, RunnerLogFile))
			}
			m := memoryOf(t, r)
			if m.UsedBy != ownerAgent {
				t.Errorf("memory %+v: want the agent using the memory", m)
			}
			switch {
			case m.Starved != nil:
				if !strings.HasPrefix(ex.ExceptionMessage, "memory-starved: ") || m.Starved.StallPercent < DefaultMemoryStallPercent {
					t.Errorf("starved %+v, message %q", *m.Starved, ex.ExceptionMessage)
				}
			case len(m.Killed) == 0 || !m.Killed[0].Program:
				t.Errorf("killed %+v: want the harness's program", m.Killed)
			}
			if n := answered(mock); n > 0 {
				checkTokensAgree(t, r, int64(n))
			}
			agent := r.result.AgentExecution
			took := "?"
			if agent != nil && agent.StartedAt != nil && agent.FinishedAt != nil {
				took = agent.FinishedAt.Sub(*agent.StartedAt).Round(time.Second).String()
			}
			t.Logf("%s at %d MB, %d calls answered, agent phase %s: %s; %s", name, spec.MemoryMB, answered(mock), took, ex.ExceptionMessage, stallLine(t, r))
		})
	}
}

// TestMemoryHeavyButHealthyIsNotCut: an agent that works at its memory
// limit — most of it resident and touched over and over, while it writes a
// file larger than the limit through the page cache — for several of the
// starvation windows is not ended; nor is the real program with the
// highest declared need, at that need, with the default thresholds.
func TestMemoryHeavyButHealthyIsNotCut(t *testing.T) {
	t.Run("command", func(t *testing.T) {
		t.Parallel() // independent attempts: own mock, work dir, cgroups and network
		// 256 MB: 160 MB of perl's own touched every half second for
		// ≈ 10 s (two 5 s windows; tr takes a while at one CPU), and 400 MB written to /app.
		cmd := `dd if=/dev/zero of=/app/big bs=1M count=400 status=none & ` +
			`perl -e 'my $s = ""; $s .= "x" x (1 << 20) for 1..160; for (1..20) { $s =~ tr/xy/yx/; select(undef, undef, undef, 0.5) }' && wait && ` +
			`rm /app/big && echo gauntlet > /app/answer.txt`
		opts := Options{MemoryStarvation: MemoryStarvation{Window: 5 * time.Second}}
		r := runImageTrial(t, cmd, testImage(t), opts, func(s *sandbox.Spec) { s.MemoryMB = 256; s.AgentTimeout = 5 * time.Minute })
		if ex := r.result.ExceptionInfo; ex != nil {
			t.Fatalf("exception = %+v, want none\nrunner log:\n%s", ex, r.artifact(t, RunnerLogFile))
		}
		if r.result.VerifierResult == nil || r.result.VerifierResult.Rewards["reward"] != 1 {
			t.Errorf("verifier = %+v, want reward 1", r.result.VerifierResult)
		}
		t.Log(stallLine(t, r))
	})
	// The program with the highest declared need of those run (opencode,
	// 1024 MB, which crawls below it; claude-code with
	// GAUNTLET_AGENT_E2E=quick), at that need.
	name := ""
	for _, n := range e2eHarnesses() {
		if h, _ := harness.Lookup(n); name == "" || h.MemoryMB > mustHarness(name).MemoryMB {
			name = n
		}
	}
	t.Run(name, func(t *testing.T) {
		t.Parallel() // independent attempts: own mock, work dir, cgroups and network
		mock := modelmock.NewServer(modelmock.Script{APIKey: modelKey, Usage: mockUsage, NoToolsText: "Mock title",
			Turns: []modelmock.Turn{{Shell: &modelmock.ShellCall{Command: "echo gauntlet > /app/answer.txt", Description: "solve"}}, {Text: "Done."}}})
		defer mock.Close()
		h, _ := harness.Lookup(name)
		spec := agentSpec(t, name)
		spec.MemoryMB = h.MemoryMB
		r, _ := runAgentTrial(t, spec, mock, inImage)
		if ex := r.result.ExceptionInfo; ex != nil {
			t.Fatalf("exception = %+v at its declared %d MB, want none\nrunner log:\n%s", ex, spec.MemoryMB, r.artifact(t, RunnerLogFile))
		}
		checkTokensAgree(t, r, int64(answered(mock)))
		t.Log(stallLine(t, r))
	})
}

func mustHarness(name string) harness.Harness {
	h, _ := harness.Lookup(name)
	return h
}

// stallLine is the runner log's line of the highest memory stall: the
// watch measured the pressure.
func stallLine(t *testing.T, r trialRun) string {
	t.Helper()
	if log := r.artifact(t, RunnerLogFile); strings.Contains(log, "memory watch not cleaned up") {
		t.Errorf("the pressure group was left behind:\n%s", log)
	}
	for _, line := range strings.Split(r.artifact(t, RunnerLogFile), "\n") {
		if strings.Contains(line, `msg="memory stall:`) {
			return line[strings.Index(line, "msg="):]
		}
	}
	t.Fatalf("the runner log has no memory stall line: the pressure was not measured\n%s", r.artifact(t, RunnerLogFile))
	return ""
}
