package records

import (
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

func TestStatusOf(t *testing.T) {
	r := run.Run{ID: "r-1", Status: run.Stopping, Tasks: []string{"a", `"status":"finished"`},
		Config: "status = \"running\"\n[\"status\"]"}
	it, err := runCodec.item(&r)
	if err != nil {
		t.Fatal(err)
	}
	stored := it.Data
	if !strings.HasPrefix(string(stored), `{"status":"stopping","id":"r-1"`) {
		t.Errorf("stored run starts %.40s; want the status first", stored)
	}
	back, err := decode(runCodec, it)
	if err != nil || back.Status != run.Stopping || back.ID != "r-1" || len(back.Tasks) != 2 || back.Config != r.Config {
		t.Errorf("decoded stored run = %+v, %v; want the run back", back, err)
	}
	for _, c := range []struct {
		name, data string
		want       run.Status
	}{
		{"encoded run", string(stored), run.Stopping},
		{"status after the task list (items written before the reorder)",
			`{"id":"r-1","tasks":["x","status"],"settings":{"status":"x"},"config":"\"status\":\"failed\"","status":"running"}`, run.Running},
		{"nested status keys are not the run's", `{"settings":{"status":"finished"},"status":"queued"}`, run.Queued},
	} {
		got, err := statusOf([]byte(c.data))
		if err != nil || got != c.want {
			t.Errorf("%s: statusOf = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	for _, bad := range []string{`{"id":"r-1"}`, `[]`, `{"status":`, ``} {
		if got, err := statusOf([]byte(bad)); err == nil {
			t.Errorf("statusOf(%q) = %q, want an error", bad, got)
		}
	}
}
