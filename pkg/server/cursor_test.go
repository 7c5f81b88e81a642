package server_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// TestEveryPagedRouteRefusesACursorItDidNotReturn: every route the OpenAPI
// document gives a cursor parameter answers 400 naming cursor for a cursor
// it did not hand out (decodable garbage, another route's, another run's)
// instead of a page from wherever the cursor happens to point, and still
// pages with its own.
func TestEveryPagedRouteRefusesACursorItDidNotReturn(t *testing.T) {
	readyBenchmark(t, alice(), "demo-bench")
	var runA, runB v1.CreatedRun
	alice().call(t, toml("/v1/runs", oneTaskConfig), http.StatusCreated, &runA)
	alice().call(t, toml("/v1/runs", oneTaskConfig), http.StatusCreated, &runB)

	var runs v1.RunList
	alice().get(t, "/v1/runs?limit=1", http.StatusOK, &runs)
	var logsA v1.LogList
	waitFor(t, "a second log line of run "+runA.ID, time.Minute, func() bool {
		alice().get(t, "/v1/runs/"+runA.ID+"/logs?limit=1", http.StatusOK, &logsA)
		return logsA.NextCursor != ""
	})
	if runs.NextCursor == "" {
		t.Fatal("GET /v1/runs?limit=1 with two runs gave no next_cursor")
	}
	garbage := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	foreign := map[string]string{
		"empty object": garbage("{}"),
		"null":         garbage("null"),
		"made-up key":  garbage(`{"s":"RESULT#zzz"}`),
		"runs cursor":  runs.NextCursor,
		"run A's logs": logsA.NextCursor,
		"not base64":   "%%%",
		"one of 2 KiB": strings.Repeat("a", 2048),
	}

	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	anon.get(t, "/v1/openapi.json", http.StatusOK, &doc)
	var paged []string
	for p, item := range doc.Paths {
		if hasCursorParam(t, item["parameters"]) || hasCursorParam(t, operationParams(t, item["get"])) {
			paged = append(paged, p)
		}
	}
	sort.Strings(paged)
	if len(paged) < 4 {
		t.Fatalf("OpenAPI lists %d paged routes (%v), want at least runs, results, logs and admin workspaces", len(paged), paged)
	}
	for _, p := range paged {
		path := strings.ReplaceAll(p, "{id}", runB.ID)
		if strings.Contains(path, "{") {
			t.Fatalf("paged route %s has a parameter this test does not fill", p)
		}
		for name, cursor := range foreign {
			if p == "/v1/runs" && name == "runs cursor" {
				continue // its own
			}
			rq := request{method: "GET", path: path + "?limit=1&cursor=" + url.QueryEscape(cursor)}
			e := wantError(t, alice(), rq, http.StatusBadRequest, v1.CodeBadRequest)
			if !strings.Contains(e.Message, "cursor") {
				t.Errorf("GET %s with a %s cursor: message %q does not name cursor", path, name, e.Message)
			}
		}
	}
	// Each route's own cursor still pages.
	alice().get(t, "/v1/runs?limit=1&cursor="+url.QueryEscape(runs.NextCursor), http.StatusOK, nil)
	alice().get(t, "/v1/runs/"+runA.ID+"/logs?limit=1&cursor="+url.QueryEscape(logsA.NextCursor), http.StatusOK, nil)
}

func operationParams(t *testing.T, op json.RawMessage) json.RawMessage {
	t.Helper()
	if op == nil {
		return nil
	}
	var o struct {
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(op, &o); err != nil {
		t.Fatalf("decode operation: %v", err)
	}
	return o.Parameters
}

func hasCursorParam(t *testing.T, params json.RawMessage) bool {
	t.Helper()
	if params == nil {
		return false
	}
	var list []struct{ Name, In string }
	if err := json.Unmarshal(params, &list); err != nil {
		t.Fatalf("decode parameters: %v", err)
	}
	for _, p := range list {
		if p.Name == "cursor" && p.In == "query" {
			return true
		}
	}
	return false
}
