package runner

import (
	"bufio"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
)

// hwmProbe records, from the agent's last tool call, each process's peak
// resident memory (VmHWM) in the sandbox's PID namespace: the agent's
// program is alive then, its peak so far in its VmHWM.
const hwmProbe = `for f in /proc/[0-9]*/status; do n=; h=; while read -r k v _; do case $k in Name:) n=$v;; VmHWM:) h=$v;; esac; done < "$f"; ` +
	`[ -n "$h" ] && echo "$n $h"; done > /logs/agent/hwm.txt; echo gauntlet > /app/answer.txt`

// memoryTurns is a multi-turn task: shell calls that read, run Python and
// write, then the probe, then the answer.
func memoryTurns() []modelmock.Turn {
	var turns []modelmock.Turn
	for _, c := range []string{"ls -la /app /usr/lib", "python3 -c 'print(sum(range(10**6)))'", "seq 1 20000 > /app/numbers.txt && wc -l /app/numbers.txt",
		"python3 -c 'import json; print(json.dumps({\"k\": list(range(2000))}))' | head -c 200", "grep -c 1 /app/numbers.txt", "cat /app/seed.txt"} {
		turns = append(turns, modelmock.Turn{Shell: &modelmock.ShellCall{Command: c}})
	}
	return append(turns, modelmock.Turn{Shell: &modelmock.ShellCall{Command: hwmProbe}}, modelmock.Turn{Text: "Done: the task is solved."})
}

// TestAgentMemoryNeedCoversItsPeak runs each bundled harness on a
// multi-turn task in the python stand-in image and reads the peak resident
// memory of the agent's own processes (everything but the tool shells):
// the harness row's MemoryMB, what submit warns a task's limit against,
// must cover it.
func TestAgentMemoryNeedCoversItsPeak(t *testing.T) {
	for _, name := range e2eHarnesses() {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // independent attempts: own mock, work dir, cgroups and network
			requireBwrap(t)
			requireBundle(t, name)
			mock := modelmock.NewServer(modelmock.Script{APIKey: modelKey, Usage: mockUsage, NoToolsText: "Mock title", Turns: memoryTurns()})
			defer mock.Close()
			img := Image{Ref: "test/python3", Rootfs: testrootfs.Of(t, testrootfs.Python3Tar),
				Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, WorkingDir: "/app"}
			dir := t.TempDir()
			opts := Options{WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out"), Models: mockProvider(t, mock.URL),
				Forwarder: runnerBinary, SelfPath: runnerBinary, Isolation: IsolationBwrap, Image: &img}
			spec := agentSpec(t, name)
			// Eight turns: a busy machine (two cores shared by many) takes
			// several times the idle ≈ 20 s.
			spec.AgentTimeout = 5 * time.Minute
			tr, err := run(context.Background(), spec, opts, harness.All())
			if err != nil {
				t.Fatal(err)
			}
			r := trialRun{result: tr, out: opts.OutDir}
			if tr.ExceptionInfo != nil {
				t.Fatalf("exception %+v\nstdout:\n%s\nstderr:\n%s", tr.ExceptionInfo, r.artifact(t, "agent/stdout.txt"), r.artifact(t, "agent/stderr.txt"))
			}
			agentKB, tools := int64(0), 0
			sc := bufio.NewScanner(strings.NewReader(r.artifact(t, "agent/hwm.txt")))
			var seen []string
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 2 {
					continue
				}
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				seen = append(seen, fmt.Sprintf("%s %d MB", f[0], kb>>10))
				switch f[0] {
				case "bash", "sh", "sandbox-runner", "gauntlet-runner", "exec-phase", "bwrap":
					tools++ // the tool shells and the platform's own
				default:
					agentKB += kb
				}
			}
			h, _ := harness.Lookup(name)
			peakMB := agentKB >> 10
			t.Logf("%s: peak RSS of the agent's processes %d MB (declared need %d MB); processes: %s", name, peakMB, h.MemoryMB, strings.Join(seen, ", "))
			if peakMB == 0 {
				t.Fatalf("no agent process seen: %s", strings.Join(seen, ", "))
			}
			if int64(h.MemoryMB) < peakMB {
				t.Errorf("harness %s declares MemoryMB %d, below its measured peak %d MB", name, h.MemoryMB, peakMB)
			}
		})
	}
}
