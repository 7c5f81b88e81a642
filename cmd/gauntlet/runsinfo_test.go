package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestRunsInfoListsErroredAttempts: runs info ends with each errored
// attempt's class and message — for an attempt killed for memory, whose
// processes used it.
func TestRunsInfoListsErroredAttempts(t *testing.T) {
	var b bytes.Buffer
	printErrored(&b, v1.ResultList{})
	if b.Len() != 0 {
		t.Errorf("no errored attempt printed %q", b.String())
	}
	msg := "AgentOutOfMemoryError: oom: the attempt exceeded its memory limit of 512 MB; the kernel killed 1 of its processes (exit code 137); " +
		"the agent used the memory: the kernel killed opencode (pid 42, 530 MB, the harness's program)"
	printErrored(&b, v1.ResultList{Results: []v1.ResultView{{ID: "0-1-fix-median", AgentLabel: "opencode/gpt-5", Outcome: "errored",
		ErrorClass: "agent", Message: msg}}, NextCursor: "c"})
	out := b.String()
	for _, want := range []string{"errored attempts:", "0-1-fix-median (opencode/gpt-5): agent error — " + msg, "the first 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
