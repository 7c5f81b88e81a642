package api

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	v1 "github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestCheckViewFlagged checks that a done check lists each broken and
// trivial task with why (the console shows the reason beside the task),
// and that a running one lists none yet.
func TestCheckViewFlagged(t *testing.T) {
	c := records.EnvCheck{Workspace: "w", Key: "b", Version: "1", Status: records.CheckDone, Run: "r1",
		StartedAt: time.Unix(10, 0), EndedAt: time.Unix(20, 0), Tasks: []records.TaskCheck{
			{Task: "fine", Verdict: records.CheckOK, Oracle: "passed", Nop: "failed"},
			{Task: "bad-image", Verdict: records.CheckBroken, Oracle: "errored: no such file", Detail: "the oracle (the task's own solution) does not pass: errored: no such file"},
			{Task: "easy", Verdict: records.CheckTrivial, Oracle: "passed", Nop: "passed", Detail: "nop (doing nothing) passes"},
			{Task: "gone", Verdict: records.CheckUnavailable, Detail: "image could not be pulled"},
		}}
	want := []v1.EnvCheckTask{
		{Task: "bad-image", Verdict: "broken", Detail: "the oracle (the task's own solution) does not pass: errored: no such file"},
		{Task: "easy", Verdict: "trivial", Detail: "nop (doing nothing) passes"},
	}
	if diff := cmp.Diff(want, checkView(c).Flagged); diff != "" {
		t.Errorf("flagged of a done check (-want +got):\n%s", diff)
	}
	c.Status = records.CheckRunning
	if got := checkView(c).Flagged; got == nil || len(got) != 0 {
		t.Errorf("flagged of a running check = %#v, want an empty list", got)
	}
}
