package runner

import (
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
)

// TestGatewayTrajectoryAgreesWithTheMeter: an agent killed before it wrote
// its log gets a trajectory of the gateway's metered calls, marked partial,
// whose totals are the gateway's — the tokens result.json reports.
func TestGatewayTrajectoryAgreesWithTheMeter(t *testing.T) {
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	calls := []gateway.Call{
		{Seq: 1, Start: start, Metered: true, Status: 200, Usage: gateway.Usage{Input: 1234, Cached: 1000, Output: 56}, CostKnown: true, CostUSD: 0.001},
		{Seq: 2, Start: start.Add(time.Second), Status: 0, Error: "cut short"}, // held when the agent was killed
		{Seq: 3, Start: start.Add(2 * time.Second), Metered: true, Status: 200, Usage: gateway.Usage{Input: 900, Output: 10}, CostKnown: true, CostUSD: 0.0005},
	}
	tr := gatewayTrajectory(calls, "launch-1", "Write hello")
	tr.SchemaVersion, tr.Agent = atif.SchemaVersion, atif.Agent{Name: "opencode", Version: "1.18.33"}
	tr.Total()
	tr.Cover(3, 2134, 66, 1000)
	markPartial(&tr, "AgentOutOfMemoryError", true)
	if err := atif.Validate(tr); err != nil {
		t.Fatal(err)
	}
	if got := tr.ModelCalls(); got != 2 {
		t.Errorf("model calls = %d, want the 2 metered", got)
	}
	fm := tr.FinalMetrics
	if fm.TotalPromptTokens != 2134 || fm.TotalCompletionTokens != 66 || fm.TotalCachedTokens != 1000 {
		t.Errorf("final metrics = %+v, want the gateway's 2134/66/1000", *fm)
	}
	if _, unattributed := fm.Extra["unattributed_usage"]; unattributed {
		t.Errorf("final_metrics.extra = %v: the steps already hold every metered token", fm.Extra)
	}
	p, _ := fm.Extra["partial"].(map[string]any)
	if p["steps_from"] != "model gateway" || p["reason"] != "AgentOutOfMemoryError" {
		t.Errorf("partial = %v", p)
	}
	if tr.Steps[0].Source != atif.SourceUser || tr.Steps[0].Message != "Write hello" {
		t.Errorf("first step = %+v, want the instruction", tr.Steps[0])
	}
}

// TestMemoryReportSaysWhoseProcessesUsedIt: the killed process's owner
// decides; without one, the larger peak.
func TestMemoryReportSaysWhoseProcessesUsedIt(t *testing.T) {
	seen := func() map[int]*procMem {
		return map[int]*procMem{
			10: {PID: 10, Command: "node", InAgentTree: true, Program: true, PeakMB: 300},
			11: {PID: 11, Command: "bash", InAgentTree: true, PeakMB: 2},
			// Last seen in sample 0 (no kill yet), gone at sample 1, the
			// kill counted by sample 2.
			20: {PID: 20, Command: "perl", PeakMB: 90, goneAt: 1},
		}
	}
	noKill := func() int { return 0 }
	killed := func() int { return 1 }
	// A bundled harness: its program is the agent, the commands it ran
	// and the rest of the sandbox the task.
	w := &memWatch{program: fileID{dev: 1, ino: 2}, seen: seen(), counts: []int{0, 0, 1}, oom: killed,
		atKill: [2]int64{200 << 10, 92 << 10}, killSeen: true, most: [2]int64{300 << 10, 92 << 10}}
	r := w.report()
	if r.UsedBy != ownerTask || len(r.Killed) != 1 || r.Killed[0].PID != 20 || r.AgentMB != 200 || r.TaskMB != 92 {
		t.Errorf("report = %+v", r)
	}
	if r.Killed[0].Owner != ownerTask || r.Largest[0].Owner != ownerAgent {
		t.Errorf("owners: killed %+v, largest %+v", r.Killed, r.Largest)
	}
	// The perl ended on its own: no kill after it was last seen; no
	// sample caught a kill either, so the highest total says.
	w = &memWatch{program: fileID{dev: 1, ino: 2}, seen: seen(), counts: []int{0, 0, 0}, oom: noKill, most: [2]int64{300 << 10, 92 << 10}}
	if r := w.report(); r.UsedBy != ownerAgent || len(r.Killed) != 0 || r.AgentMB != 300 {
		t.Errorf("report without a victim = %+v, want the agent's larger memory", r)
	}
	// No bundle (command): the agent phase's tree is the agent.
	w = &memWatch{seen: seen(), counts: []int{0, 0, 1}, oom: killed}
	w.seen[20].InAgentTree = true
	if r := w.report(); r.UsedBy != ownerAgent || r.Killed[0].Owner != ownerAgent {
		t.Errorf("report of a command agent = %+v", r)
	}
	if got := (*MemoryReport)(nil).Describe(); got == "" {
		t.Error("no description of a missing report")
	}
}
