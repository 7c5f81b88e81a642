package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestEnvironmentCheck runs `benchmark check` through the API: the oracle
// and nop once per demo-bench task, for real; no task is broken (every
// oracle passes) or trivial (no nop passes). A workspace of its own keeps
// the check's run off the runs and leaderboards the other tests read.
func TestEnvironmentCheck(t *testing.T) {
	var ws v1.AdminWorkspaceView
	alice().call(t, adminJSON(t, "POST", "/v1/admin/workspaces", v1.CreateWorkspaceRequest{Name: "Env Check", ID: "envcheck"}, nil), http.StatusCreated, &ws)
	var user v1.AdminUserView
	alice().call(t, adminJSON(t, "POST", "/v1/admin/workspaces/"+ws.ID+"/users", v1.AddUserRequest{User: "erin-sub-1", Email: "erin@example.com"}, nil), http.StatusCreated, &user)
	alice().call(t, adminJSON(t, "PUT", "/v1/admin/workspaces/"+ws.ID+"/billing", v1.SetBillingRequest{Status: "active"}, nil), http.StatusOK, nil)
	c := caller{token: user.Token}
	// Before any check: 200 "no check yet" (a benchmark page asks at once).
	var none v1.EnvCheckView
	c.get(t, "/v1/benchmarks/demo-bench/check", http.StatusOK, &none)
	if none.Status != v1.CheckNone || !strings.Contains(none.Message, "no check yet") || none.Run != "" || none.StartedAt != nil {
		t.Errorf("check before any = %+v, want status none, \"no check yet\", no run", none)
	}
	wantError(t, c, request{method: "GET", path: "/v1/benchmarks/no-such-bench/check"}, http.StatusNotFound, v1.CodeNotFound)
	var started v1.EnvCheckView
	c.call(t, request{method: "POST", path: "/v1/benchmarks/demo-bench/check"}, http.StatusAccepted, &started)
	if started.Status != "running" || started.Run == "" || started.Version == "" {
		t.Fatalf("started check = %+v", started)
	}
	var again v1.EnvCheckView
	c.call(t, request{method: "POST", path: "/v1/benchmarks/demo-bench/check"}, http.StatusAccepted, &again)
	if again.Run != started.Run {
		t.Errorf("second POST started run %s, want the first check's %s", again.Run, started.Run)
	}
	var done v1.EnvCheckView
	waitFor(t, "the environment check", 5*time.Minute, func() bool {
		c.get(t, "/v1/benchmarks/demo-bench/check", http.StatusOK, &done)
		return done.Status == "done"
	})
	if done.Checked != 15 || len(done.Broken) != 0 || len(done.Trivial) != 0 || done.EndedAt == nil {
		t.Errorf("check = %+v, want 15 tasks checked, none broken or trivial", done)
	}
	var b v1.BenchmarkDetail
	c.get(t, "/v1/benchmarks/demo-bench", http.StatusOK, &b)
	if b.Manifest == nil || b.Manifest.Check == nil || b.Manifest.Check.Run != started.Run {
		t.Fatalf("benchmark view check = %+v", b.Manifest)
	}
	for _, task := range b.Manifest.Tasks {
		if task.Check == nil || *task.Check != "ok" {
			t.Errorf("task %s check = %v, want ok", task.Name, task.Check)
		}
	}
	// demo-bench here is synced without image preparation (the server
	// tests run the host-rootfs mode): no task has a build log.
	wantError(t, c, request{method: "GET", path: "/v1/benchmarks/demo-bench/tasks/word-frequency/build-log"}, http.StatusNotFound, v1.CodeNotFound)
}
