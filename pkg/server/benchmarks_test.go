package server_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

func TestManagedBenchmark(t *testing.T) {
	b := readyBenchmark(t, alice(), "demo-bench")
	m := b.Manifest
	if m == nil {
		t.Fatal("ready demo-bench has no manifest")
	}
	if b.Source.Type != "managed" || b.Removable || b.TaskCount != 15 || len(m.Tasks) != 15 || b.CategoryCount != len(m.Categories) {
		t.Errorf("demo-bench: source %s removable %v tasks %d/%d categories %d/%d; want managed, not removable, 15 tasks",
			b.Source.Type, b.Removable, b.TaskCount, len(m.Tasks), b.CategoryCount, len(m.Categories))
	}
	if m.Harness.Requirement != "optional" || m.Harness.Default != "oracle" || m.PassThreshold != 1 || m.Judge.Required {
		t.Errorf("demo-bench policy: harness %+v threshold %v judge %+v; want optional/oracle, 1, none", m.Harness, m.PassThreshold, m.Judge)
	}
	var sets []string
	for _, s := range m.TaskSets {
		sets = append(sets, s.Name)
		if s.Name == "parity" && (!s.Recommended || s.Tasks != 8) {
			t.Errorf("parity task set = %+v, want recommended with 8 tasks", s)
		}
	}
	if diff := cmp.Diff([]string{"parity", "smoke"}, sets); diff != "" {
		t.Errorf("task sets (-want +got):\n%s", diff)
	}
	total := 0
	for _, c := range m.Categories {
		total += c.Tasks
	}
	for _, task := range m.Tasks {
		if task.Category == nil || task.Difficulty == nil {
			t.Errorf("task %s: category %v difficulty %v, want both (demo-bench sets them)", task.Name, task.Category, task.Difficulty)
		}
	}
	if total != 15 || m.Version != "1.0" || m.Digest == "" {
		t.Errorf("categories cover %d tasks, version %q digest %q; want 15, 1.0, a digest", total, m.Version, m.Digest)
	}

	wantError(t, alice(), request{method: "DELETE", path: "/v1/benchmarks/demo-bench"}, http.StatusConflict, v1.CodeConflict)
	wantError(t, alice(), request{method: "POST", path: "/v1/benchmarks/demo-bench/sync"}, http.StatusConflict, v1.CodeConflict)
	readyBenchmark(t, bob(), "demo-bench") // managed benchmarks are in every workspace
}

func TestAddSyncRemoveBenchmark(t *testing.T) {
	add := request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":"demo-bench@1.0"}`), contentType: "application/json"}
	var added v1.BenchmarkView
	alice().call(t, add, http.StatusAccepted, &added)
	if added.Key != "demo-bench-1-0" || added.Source.Type != "harbor" || added.Source.Ref != "demo-bench@1.0" || !added.Removable {
		t.Fatalf("added = %+v, want harbor demo-bench-1-0 from demo-bench@1.0", added)
	}
	if added.Status != "pending" && added.Status != "syncing" && added.Status != "ready" {
		t.Errorf("added status %q, want pending (or already past it)", added.Status)
	}
	b := readyBenchmark(t, alice(), added.Key)
	if b.Manifest == nil || len(b.Manifest.Tasks) != 15 || b.Manifest.Harness.Requirement != "optional" || b.Manifest.PassThreshold != 1 || len(b.Manifest.TaskSets) != 0 {
		t.Errorf("harbor benchmark manifest = %+v, want 15 tasks with the registry defaults", b.Manifest)
	}
	if b.Progress.Synced != 15 || b.Progress.Total != 15 {
		t.Errorf("progress = %+v, want 15/15", b.Progress)
	}
	// A config may name the benchmark by its registry spec, as Osmosis's do.
	var report v1.ValidationReport
	alice().call(t, toml("/v1/runs/validate", "[experiment]\nbenchmark = \"demo-bench@1.0\"\n[[agents]]\nharness = \"oracle\"\n"), http.StatusOK, &report)
	if !report.Valid || report.Benchmark != "demo-bench-1-0" {
		t.Errorf("validate by registry spec = %+v, want valid on demo-bench-1-0", report)
	}
	alice().call(t, add, http.StatusAccepted, &added) // adding it again returns the same benchmark
	if added.Key != "demo-bench-1-0" || added.Status != "ready" {
		t.Errorf("second add = %+v, want the ready benchmark", added)
	}

	var list v1.BenchmarkList
	alice().get(t, "/v1/benchmarks", http.StatusOK, &list)
	var keys []string
	for _, b := range list.Benchmarks {
		keys = append(keys, b.Key)
	}
	if diff := cmp.Diff([]string{"demo-bench", "demo-bench-1-0"}, keys); diff != "" {
		t.Errorf("alice's benchmarks (-want +got):\n%s", diff)
	}
	bob().get(t, "/v1/benchmarks", http.StatusOK, &list)
	if len(list.Benchmarks) != 1 || list.Benchmarks[0].Key != "demo-bench" {
		t.Errorf("bob's benchmarks = %+v, want only the managed demo-bench", list.Benchmarks)
	}
	wantError(t, bob(), request{method: "GET", path: "/v1/benchmarks/demo-bench-1-0"}, http.StatusNotFound, v1.CodeNotFound)
	wantError(t, bob(), request{method: "DELETE", path: "/v1/benchmarks/demo-bench-1-0"}, http.StatusNotFound, v1.CodeNotFound)
	wantError(t, bob(), request{method: "GET", path: "/v1/benchmarks/demo-bench-1-0/leaderboard"}, http.StatusNotFound, v1.CodeNotFound)

	bad := []struct {
		name   string
		rq     request
		status int
		code   string
	}{
		{"unknown dataset", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":"no-such-bench@1.0"}`), contentType: "application/json"}, 404, v1.CodeNotFound},
		{"unknown version", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":"demo-bench@9.9"}`), contentType: "application/json"}, 404, v1.CodeNotFound},
		{"empty source", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":""}`), contentType: "application/json"}, 400, v1.CodeBadRequest},
		{"unknown field", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"name":"demo-bench"}`), contentType: "application/json"}, 400, v1.CodeBadRequest},
		{"bad package name", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":"a/b/c@latest"}`), contentType: "application/json"}, 422, v1.CodeValidation},
		{"bad package ref", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":"org/name@Bad_Ref"}`), contentType: "application/json"}, 422, v1.CodeValidation},
		{"repo the network guard refuses", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"repo":"http://10.0.0.1/acme/tasks"}`), contentType: "application/json"}, 422, v1.CodeValidation},
		{"repo and source", request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":"demo-bench","repo":"https://github.com/acme/tasks"}`), contentType: "application/json"}, 422, v1.CodeValidation},
		{"not json", request{method: "POST", path: "/v1/benchmarks", body: []byte(`demo-bench`), contentType: "text/plain"}, 415, v1.CodeUnsupportedType},
		{"sync a ready one", request{method: "POST", path: "/v1/benchmarks/demo-bench-1-0/sync"}, 409, v1.CodeConflict},
		{"unknown key", request{method: "GET", path: "/v1/benchmarks/nope"}, 404, v1.CodeNotFound},
		{"invalid key", request{method: "GET", path: "/v1/benchmarks/NOT_A_KEY"}, 404, v1.CodeNotFound},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) { wantError(t, alice(), tt.rq, tt.status, tt.code) })
	}

	alice().call(t, request{method: "DELETE", path: "/v1/benchmarks/demo-bench-1-0"}, http.StatusNoContent, nil)
	wantError(t, alice(), request{method: "GET", path: "/v1/benchmarks/demo-bench-1-0"}, http.StatusNotFound, v1.CodeNotFound)
}
