package harbor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// NewJobStats computes what Harbor's Job computed for the golden job
// directory (written by Harbor's own models): counts, rewards, exceptions,
// the mean metric, pass@k and token totals.
func TestNewJobStatsMatchesHarbor(t *testing.T) {
	job := "testdata/jobs/2026-01-28__14-00-00"
	var golden struct {
		NTotalTrials int      `json:"n_total_trials"`
		Stats        JobStats `json:"stats"`
	}
	data, err := os.ReadFile(filepath.Join(job, JobResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	dirs, err := filepath.Glob(filepath.Join(job, "*", TrialResultFile))
	if err != nil || len(dirs) != 4 {
		t.Fatalf("golden trials: %v, %v", dirs, err)
	}
	var trials []TrialResult
	for _, p := range dirs {
		tr, err := ReadTrialResult(p)
		if err != nil {
			t.Fatal(err)
		}
		trials = append(trials, tr)
	}
	got := NewJobStats(trials, golden.NTotalTrials, 0, 0)
	sortTrials := cmpopts.SortSlices(func(a, b string) bool { return a < b })
	if diff := cmp.Diff(golden.Stats, got, sortTrials); diff != "" {
		t.Errorf("NewJobStats (-harbor +gauntlet):\n%s", diff)
	}
}

func TestPassAtKValues(t *testing.T) {
	if diff := cmp.Diff([]int{2, 4, 5, 8, 10, 15, 16, 20}, passAtKValues(20)); diff != "" {
		t.Errorf("passAtKValues(20) (-want +got):\n%s", diff)
	}
	if got := passAtKValues(1); len(got) != 0 {
		t.Errorf("passAtKValues(1) = %v, want none", got)
	}
}
