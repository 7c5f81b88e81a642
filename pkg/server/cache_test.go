package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestCachedListsNeverStepBack: the run list and a run's results are kept
// rendered for reads under load, yet a client never sees them behind what
// it did or saw: a run it submitted or stopped is listed so at once though
// the list was cached just before, and a run's results page always holds
// at least the progress its detail showed.
func TestCachedListsNeverStepBack(t *testing.T) {
	readyBenchmark(t, alice(), "demo-bench")
	listed := func(id string) (v1.RunView, bool) {
		var page v1.RunList
		alice().get(t, "/v1/runs?benchmark=demo-bench", http.StatusOK, &page) // newest first
		for _, r := range page.Runs {
			if r.ID == id {
				return r, true
			}
		}
		return v1.RunView{}, false
	}
	listed("") // the list is rendered and cached now
	var created v1.CreatedRun
	alice().call(t, toml("/v1/runs", slowConfig), http.StatusCreated, &created)
	if _, ok := listed(created.ID); !ok {
		t.Fatalf("run %s just submitted is not in the run list read right after", created.ID)
	}

	waitFor(t, "two results of "+created.ID, 2*time.Minute, func() bool {
		var d v1.RunDetail
		alice().get(t, "/v1/runs/"+created.ID, http.StatusOK, &d)
		var page v1.ResultList
		alice().get(t, "/v1/runs/"+created.ID+"/results?limit=500", http.StatusOK, &page)
		if len(page.Results) < d.Progress.Completed {
			t.Fatalf("results page of %s holds %d results after its detail showed %d completed", created.ID, len(page.Results), d.Progress.Completed)
		}
		return d.Progress.Completed >= 2
	})

	listed(created.ID) // cached again, running
	alice().call(t, request{method: "POST", path: "/v1/runs/" + created.ID + "/stop"}, http.StatusAccepted, nil)
	if v, _ := listed(created.ID); v.Status != "stopping" && v.Status != "stopped" {
		t.Errorf("run list read right after the stop shows %s %q, want stopping or stopped", created.ID, v.Status)
	}
	d := finishedRun(t, alice(), created.ID)
	var page v1.ResultList
	alice().get(t, "/v1/runs/"+created.ID+"/results?limit=500", http.StatusOK, &page)
	if len(page.Results) != d.Progress.Total || d.Progress.Completed != d.Progress.Total {
		t.Errorf("ended run %s: %d results listed, progress %+v; want one per slot", created.ID, len(page.Results), d.Progress)
	}
}
