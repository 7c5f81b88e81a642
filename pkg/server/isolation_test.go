package server_test

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestIsolationEveryRoute is the isolation suite, generated from the route
// table (the served OpenAPI document, which the OpenAPI test pins to the
// registered routes both ways, so a new route is covered here without a
// new test): every method of every path that names a resource by id is
// called by bob with alice's ids and must answer 404 (403 on the operator
// routes), change nothing, and echo none of alice's data; every list route
// must list none of alice's ids.
func TestIsolationEveryRoute(t *testing.T) {
	// Alice's resources: a workspace benchmark, a secret, a finished run
	// with a result and an artifact.
	add := request{method: "POST", path: "/v1/benchmarks", body: []byte(`{"source":"demo-bench@1.0"}`), contentType: "application/json"}
	if status, _, body := alice().do(t, add); status/100 != 2 {
		t.Fatalf("alice adds demo-bench@1.0: %d %s", status, body)
	}
	readyBenchmark(t, alice(), "demo-bench-1-0")
	alice().call(t, request{method: "PUT", path: "/v1/secrets/ISOLATION_SECRET", body: []byte("isolation-value-1234")}, http.StatusCreated, nil)
	t.Cleanup(func() { // other tests list alice's secrets
		alice().do(t, request{method: "DELETE", path: "/v1/secrets/ISOLATION_SECRET"})
	})
	var created v1.CreatedRun
	alice().call(t, toml("/v1/runs", oneTaskConfig), http.StatusCreated, &created)
	finishedRun(t, alice(), created.ID)
	results := listResults(t, created.ID, "", 10)
	if len(results) == 0 {
		t.Fatal("alice's run has no results")
	}
	var detail v1.ResultDetail
	alice().get(t, "/v1/runs/"+created.ID+"/results/"+results[0].ID, http.StatusOK, &detail)
	if len(detail.Artifacts) == 0 {
		t.Fatal("alice's result has no artifacts")
	}
	params := map[string]string{
		"{id}": created.ID, "{key}": "demo-bench-1-0", "{result}": results[0].ID,
		"{path}": detail.Artifacts[0].Path, "{name}": "ISOLATION_SECRET", "{task}": results[0].Task,
	}
	secretsBefore := aliceSecrets(t)

	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	anon.get(t, "/v1/openapi.json", http.StatusOK, &doc)
	paths := make([]string, 0, len(doc.Paths))
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	tried := 0
	for _, p := range paths {
		for method := range doc.Paths[p] {
			method = strings.ToUpper(method)
			if method != "GET" && method != "POST" && method != "PUT" && method != "DELETE" {
				continue
			}
			byID := strings.Contains(p, "{")
			if !byID && method != "GET" {
				continue // creates in bob's own workspace: nothing of alice's is named
			}
			path := p
			for k, v := range params {
				path = strings.ReplaceAll(path, k, v)
			}
			if strings.Contains(path, "{") {
				t.Errorf("%s %s: no value of alice's for a parameter; add it to the isolation suite", method, p)
				continue
			}
			tried++
			rq := request{method: method, path: path, body: []byte(`{}`), contentType: "application/json"}
			status, _, body := bob().do(t, rq)
			switch {
			case strings.HasPrefix(p, "/v1/admin/"):
				if status != http.StatusForbidden {
					t.Errorf("bob %s %s = %d %s, want 403 (operator only)", method, path, status, body)
				}
			case strings.Contains(p, "{name}"):
				// Secret names are per workspace: bob's call is about his own
				// record of that name; alice's must be untouched.
			case byID:
				if status != http.StatusNotFound {
					t.Errorf("bob %s %s (alice's ids) = %d %s, want 404", method, path, status, body)
				}
			}
			if strings.Contains(p, "{name}") {
				// bob's own record of that name (none): checked below that
				// alice's is untouched.
			} else if byID {
				// A refusal is the bare error shape: no data of alice's.
				var shape map[string]json.RawMessage
				if err := json.Unmarshal(body, &shape); err != nil || len(shape) != 2 || shape["code"] == nil || shape["message"] == nil {
					t.Errorf("bob %s %s answered more than an error: %s", method, path, body)
				}
			} else {
				// A list of bob's own: none of alice's ids in it.
				for _, k := range []string{"{id}", "{result}", "{name}"} {
					if strings.Contains(string(body), params[k]) {
						t.Errorf("bob %s %s lists alice's %s %q: %s", method, path, k, params[k], body)
					}
				}
			}
		}
	}
	if tried < 20 {
		t.Errorf("tried %d route calls, want every route of the table (≥ 20)", tried)
	}
	t.Logf("isolation: %d route calls with another workspace's ids, all refused", tried)
	// Nothing of alice's changed.
	finishedRun(t, alice(), created.ID)
	readyBenchmark(t, alice(), "demo-bench-1-0")
	if after := aliceSecrets(t); after != secretsBefore {
		t.Errorf("alice's secrets changed under bob's calls:\nbefore %s\nafter  %s", secretsBefore, after)
	}
}

func aliceSecrets(t *testing.T) string {
	t.Helper()
	_, _, body := alice().do(t, request{method: "GET", path: "/v1/secrets"})
	return string(body)
}
