package server_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// parityConfig runs oracle, nop and the heuristic command agent on the
// parity set (8 tasks), 2 attempts each: 48 sandboxes. RUN_TOKEN reaches
// every sandbox, so the secret-leak scan has something to find if it leaks.
const parityConfig = `
[experiment]
benchmark = "demo-bench"

[tasks]
task_set = "parity"

[execution]
attempts_per_task = 2
max_concurrent_attempts = 4
max_retries = 1

[secrets]
required = ["RUN_TOKEN"]

[[agents]]
harness = "oracle"

[[agents]]
harness = "nop"

[[agents]]
name = "heuristic"
harness = "command"
command = "/agent/heuristic-agent.sh"
`

// badConfig has four problems: an unknown key, attempts 0, a missing
// secret record and an unknown task set.
const badConfig = `
[experiment]
benchmark = "demo-bench"
colour = "red"

[tasks]
task_set = "no-such-set"

[execution]
attempts_per_task = 0

[[agents]]
harness = "oracle"
[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "NOPE_SECRET"
`

func toml(path, body string) request {
	return request{method: "POST", path: path, body: []byte(body), contentType: "application/toml"}
}

func TestRunLifecycle(t *testing.T) {
	readyBenchmark(t, alice(), "demo-bench")
	alice().call(t, request{method: "PUT", path: "/v1/secrets/RUN_TOKEN", body: []byte(secretValue)}, http.StatusCreated, nil)

	var report v1.ValidationReport
	alice().call(t, toml("/v1/runs/validate", parityConfig), http.StatusOK, &report)
	if !report.Valid || report.TaskCount != 8 || report.SlotCount != 48 || len(report.Problems) != 0 || report.ManifestVersion != "1.0" {
		t.Fatalf("validate = %+v, want valid, 8 tasks, 48 slots on 1.0", report)
	}
	checkRejections(t)

	key := map[string]string{"Idempotency-Key": "lifecycle-1"}
	submit := toml("/v1/runs", parityConfig)
	submit.header = key
	var created v1.CreatedRun
	alice().call(t, submit, http.StatusCreated, &created)
	if created.ID == "" || created.Name == "" || created.TaskCount != 8 || created.SlotCount != 48 || created.Replayed {
		t.Fatalf("created = %+v, want an id, a name, 8 tasks, 48 slots", created)
	}
	var replay v1.CreatedRun
	alice().call(t, submit, http.StatusOK, &replay)
	if replay.ID != created.ID || !replay.Replayed {
		t.Errorf("replay = %+v, want the same run %s, replayed", replay, created.ID)
	}
	conflicting := toml("/v1/runs", strings.Replace(parityConfig, "attempts_per_task = 2", "attempts_per_task = 3", 1))
	conflicting.header = key
	wantError(t, alice(), conflicting, http.StatusConflict, v1.CodeConflict)

	var live v1.RunDetail
	alice().get(t, "/v1/runs/"+created.ID, http.StatusOK, &live)
	if live.Progress.Total != 48 || len(live.AgentsDetail) != 3 || live.Status == "" {
		t.Errorf("live run = %+v, want 48 slots and 3 agents", live.RunView)
	}

	d := finishedRun(t, alice(), created.ID)
	t.Run("detail", func(t *testing.T) { checkFinishedRun(t, d) })
	t.Run("config", func(t *testing.T) { checkConfig(t, d) })
	t.Run("logs", func(t *testing.T) { checkLogs(t, d.ID) })
	t.Run("results", func(t *testing.T) { checkResults(t, d.ID) })
	t.Run("result detail", func(t *testing.T) { checkResultDetail(t, d.ID) })
	t.Run("download", func(t *testing.T) { checkDownload(t, d.ID) })
	t.Run("harbor download", func(t *testing.T) { checkHarborDownload(t, d.ID) })
	t.Run("leaderboard", func(t *testing.T) { checkLeaderboard(t) })
	t.Run("compare", func(t *testing.T) { checkCompare(t, d.ID) })
	t.Run("replacement warning", func(t *testing.T) { checkReplacementWarning(t, d.ID) })
	t.Run("list", func(t *testing.T) { checkRunList(t, d.ID) })
	t.Run("isolation", func(t *testing.T) { checkRunIsolation(t, d.ID) })
	wantError(t, alice(), request{method: "POST", path: "/v1/runs/" + d.ID + "/stop"}, http.StatusConflict, v1.CodeConflict)
}

func checkRejections(t *testing.T) {
	var report v1.ValidationReport
	alice().call(t, toml("/v1/runs/validate", badConfig), http.StatusOK, &report)
	if report.Valid || len(report.Problems) < 2 {
		t.Errorf("validate bad config = %+v, want invalid with every problem", report)
	}
	e := wantError(t, alice(), toml("/v1/runs", badConfig), http.StatusUnprocessableEntity, v1.CodeValidation)
	for _, want := range []string{"experiment.colour", "execution.attempts_per_task"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("rejection %q does not name %s", e.Message, want)
		}
	}
	missing := strings.Replace(parityConfig, `required = ["RUN_TOKEN"]`, `required = ["RUN_TOKEN", "NOPE_SECRET"]`, 1)
	alice().call(t, toml("/v1/runs/validate", missing), http.StatusOK, &report)
	if report.Valid || !slices.Equal(report.MissingSecrets, []string{"NOPE_SECRET"}) {
		t.Errorf("validate with a missing secret = %+v, want missing_secrets [NOPE_SECRET]", report)
	}
	cases := []struct {
		name   string
		rq     request
		status int
		code   string
	}{
		{"html", request{method: "POST", path: "/v1/runs", body: []byte("x"), contentType: "text/html"}, 415, v1.CodeUnsupportedType},
		{"empty", toml("/v1/runs", ""), 400, v1.CodeBadRequest},
		{"too large", toml("/v1/runs", strings.Repeat("#", v1.MaxRunBody+1)), 413, v1.CodeTooLarge},
		{"bad json", request{method: "POST", path: "/v1/runs", body: []byte(`{"experiment":`), contentType: "application/json"}, 422, v1.CodeValidation},
		{"bad idempotency key", request{method: "POST", path: "/v1/runs", body: []byte(parityConfig), contentType: "application/toml",
			header: map[string]string{"Idempotency-Key": strings.Repeat("k", 200)}}, 422, v1.CodeValidation},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) { wantError(t, alice(), tt.rq, tt.status, tt.code) })
	}
}

func checkFinishedRun(t *testing.T, d v1.RunDetail) {
	if d.Status != "finished" || d.Progress != (v1.Progress{Completed: 48, Total: 48}) || d.DurationSec <= 0 || d.EndedAt == nil {
		t.Errorf("run = %s %+v duration %v; want finished 48/48 with a duration", d.Status, d.Progress, d.DurationSec)
	}
	if d.ManifestVersion != "1.0" || d.TaskSet != "parity" || d.Coverage != "parity" || d.Submission.Settings.AttemptsPerTask != 2 {
		t.Errorf("run pins %s set %s coverage %s settings %+v; want 1.0, parity", d.ManifestVersion, d.TaskSet, d.Coverage, d.Submission.Settings)
	}
	want := map[string]float64{"oracle": 1, "nop": 0}
	for _, a := range d.AgentsDetail {
		m := a.Metrics
		if a.Status != "finished" || a.Progress.Completed != 16 || m.Pass1 == nil || m.Pass1.N != 8 || len(m.PassAtKCurve) != 2 || len(m.Categories) == 0 {
			t.Errorf("agent %s: %s %+v metrics %+v; want finished 16/16, pass@1 over 8 tasks, pass@k for k=1,2, categories", a.Label, a.Status, a.Progress, m)
			continue
		}
		if v, ok := want[a.Harness]; ok && m.Pass1.Value != v {
			t.Errorf("agent %s pass@1 = %v, want %v", a.Label, m.Pass1.Value, v)
		}
		if m.PassAtK == nil || m.PassAtK.K != 2 {
			t.Errorf("agent %s pass@k = %+v, want k = 2", a.Label, m.PassAtK)
		}
		// The agent's own span: from its first slot's start to its end,
		// within the run's.
		if a.StartedAt == nil || a.EndedAt == nil || a.DurationSec <= 0 || d.StartedAt == nil ||
			a.StartedAt.Before(*d.StartedAt) || a.EndedAt.After(*d.EndedAt) ||
			a.DurationSec != a.EndedAt.Sub(*a.StartedAt).Seconds() {
			t.Errorf("agent %s started %v ended %v duration %v; want a span within the run's %v–%v", a.Label, a.StartedAt, a.EndedAt, a.DurationSec, d.StartedAt, d.EndedAt)
		}
	}
	if h := d.AgentsDetail[2]; h.Tokens.Input == 0 || d.Tokens.Input < h.Tokens.Input {
		t.Errorf("heuristic tokens %+v, run tokens %+v; want the usage the agent reported", h.Tokens, d.Tokens)
	}
	// That usage is the agent's word (usage.json), not the gateway's meter.
	if got := []bool{d.AgentsDetail[0].UsageSelfReported, d.AgentsDetail[1].UsageSelfReported, d.AgentsDetail[2].UsageSelfReported, d.UsageSelfReported}; !slices.Equal(got, []bool{false, false, true, true}) {
		t.Errorf("usage_self_reported of oracle, nop, heuristic, the run = %v, want false false true true", got)
	}
}

func checkConfig(t *testing.T, d v1.RunDetail) {
	status, hdr, body := alice().do(t, request{method: "GET", path: "/v1/runs/" + d.ID + "/config"})
	if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "application/toml") {
		t.Fatalf("GET config = %d %s", status, hdr.Get("Content-Type"))
	}
	for _, want := range []string{`benchmark = "demo-bench"`, `"1.0"`, d.ManifestDigest, `task_set = "parity"`, "heuristic-agent.sh"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("config does not contain %q:\n%s", want, body)
		}
	}
}

func checkLogs(t *testing.T, id string) {
	var all v1.LogList
	alice().get(t, "/v1/runs/"+id+"/logs?limit=500", http.StatusOK, &all)
	var paged []v1.LogLine
	cursor := ""
	for pages := 0; ; pages++ {
		var page v1.LogList
		alice().get(t, "/v1/runs/"+id+"/logs?limit=7&cursor="+url.QueryEscape(cursor), http.StatusOK, &page)
		if len(page.Logs) > 7 || pages > 100 {
			t.Fatalf("log page of %d lines after %d pages", len(page.Logs), pages)
		}
		paged = append(paged, page.Logs...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if diff := cmp.Diff(all.Logs, paged); diff != "" {
		t.Errorf("logs paged by 7 differ from one page (-one +paged):\n%s", diff)
	}
	steps := map[string]int{}
	for _, l := range all.Logs {
		steps[l.Step]++
	}
	if steps["submitted"] != 1 || steps["result"] < 48 || steps["finished"] < 1 {
		t.Errorf("log steps = %v, want submitted, 48 results, finished", steps)
	}
	wantError(t, alice(), request{method: "GET", path: "/v1/runs/" + id + "/logs?limit=0"}, 400, v1.CodeBadRequest)
}

func listResults(t *testing.T, id, query string, limit int) []v1.ResultView {
	t.Helper()
	var out []v1.ResultView
	cursor := ""
	for pages := 0; ; pages++ {
		var page v1.ResultList
		q := query + "&limit=" + strconv.Itoa(limit) + "&cursor=" + url.QueryEscape(cursor)
		alice().get(t, "/v1/runs/"+id+"/results?"+q, http.StatusOK, &page)
		if len(page.Results) > limit || pages > 200 {
			t.Fatalf("results page of %d rows (limit %d) after %d pages", len(page.Results), limit, pages)
		}
		out = append(out, page.Results...)
		if cursor = page.NextCursor; cursor == "" {
			return out
		}
	}
}

func checkResults(t *testing.T, id string) {
	all := listResults(t, id, "", 500)
	paged := listResults(t, id, "", 7)
	if len(all) != 48 {
		t.Fatalf("%d results, want 48", len(all))
	}
	if diff := cmp.Diff(all, paged); diff != "" {
		t.Errorf("results paged by 7 differ (-one page +paged):\n%s", diff)
	}
	ids := map[string]bool{}
	for _, r := range all {
		ids[r.ID] = true
	}
	if len(ids) != 48 {
		t.Errorf("%d distinct result ids, want 48", len(ids))
	}
	for _, r := range all {
		if want := r.Agent == 2; r.UsageSelfReported != want { // the heuristic's usage.json
			t.Errorf("result %s usage_self_reported = %v, want %v", r.ID, r.UsageSelfReported, want)
			break
		}
	}
	filters := []struct {
		query string
		want  func(v1.ResultView) bool
		n     int
	}{
		{"agent=1", func(r v1.ResultView) bool { return r.Agent == 1 && r.Outcome == "failed" }, 16},
		{"agent=0&outcome=passed", func(r v1.ResultView) bool { return r.Agent == 0 && r.Outcome == "passed" }, 16},
		{"agent=0,1", func(r v1.ResultView) bool { return r.Agent == 0 || r.Agent == 1 }, 32},
		{"agent=1&agent=2", func(r v1.ResultView) bool { return r.Agent == 1 || r.Agent == 2 }, 32},
		{"task=csv-summary", func(r v1.ResultView) bool { return r.Task == "csv-summary" }, 6},
		{"q=CSV", func(r v1.ResultView) bool { return strings.Contains(r.Task, "csv") }, 6},
		{"outcome=cancelled", func(v1.ResultView) bool { return false }, 0},
	}
	for _, f := range filters {
		got := listResults(t, id, f.query, 5)
		if len(got) != f.n {
			t.Errorf("results?%s: %d rows, want %d", f.query, len(got), f.n)
		}
		for _, r := range got {
			if !f.want(r) {
				t.Errorf("results?%s returned %+v", f.query, r)
			}
		}
	}
	for _, q := range []string{"agent=x", "agent=0,-1", "outcome=bogus", "limit=501"} {
		wantError(t, alice(), request{method: "GET", path: "/v1/runs/" + id + "/results?" + q}, 400, v1.CodeBadRequest)
	}
}

func checkResultDetail(t *testing.T, id string) {
	rid := v1.ResultID(0, 1, "csv-summary")
	var d v1.ResultDetail
	alice().get(t, "/v1/runs/"+id+"/results/"+rid, http.StatusOK, &d)
	if d.ID != rid || d.Outcome != "passed" || d.Reward == nil || *d.Reward != 1 || d.AgentLabel != "oracle" {
		t.Errorf("result %s = %+v, want the oracle's pass with reward 1", rid, d.ResultView)
	}
	paths := map[string]v1.ArtifactView{}
	for _, a := range d.Artifacts {
		paths[a.Path] = a
	}
	for _, want := range []string{"result.json", "artifacts/runner.log"} {
		if _, ok := paths[want]; !ok {
			t.Errorf("artifacts %v lack %s", d.Artifacts, want)
		}
	}
	a := paths["result.json"]
	status, _, body := alice().do(t, request{method: "GET", path: a.URL})
	if status != http.StatusOK || int64(len(body)) != a.Size || !strings.Contains(string(body), "csv-summary") {
		t.Errorf("GET %s = %d, %d bytes; want 200 and %d bytes of result.json", a.URL, status, len(body), a.Size)
	}
	for _, path := range []string{
		"/v1/runs/" + id + "/results/9-1-csv-summary",
		"/v1/runs/" + id + "/results/not-a-result",
		"/v1/runs/" + id + "/results/" + rid + "/artifacts/nope.txt",
		"/v1/runs/" + id + "/results/" + rid + "/artifacts/..%2F..%2Fsecrets",
	} {
		wantError(t, alice(), request{method: "GET", path: path}, http.StatusNotFound, v1.CodeNotFound)
	}
}

func checkLeaderboard(t *testing.T) {
	var board v1.LeaderboardView
	waitFor(t, "the leaderboard to list the run", time.Minute, func() bool {
		alice().get(t, "/v1/benchmarks/demo-bench/leaderboard", http.StatusOK, &board)
		return len(board.Rows) == 3
	})
	if board.K != 2 || board.Metric != "pass@1" {
		t.Errorf("board = k %d by %s, want k = 2, by pass@1", board.K, board.Metric)
	}
	for _, r := range board.Rows {
		if r.TaskSet != "parity" || r.ManifestVersion != "1.0" || r.ManifestDigest == "" {
			t.Errorf("row %s measured %q on %q (%q), want parity on 1.0 with its digest", r.Label, r.TaskSet, r.ManifestVersion, r.ManifestDigest)
		}
	}
	first, last := board.Rows[0], board.Rows[2]
	if first.Harness != "oracle" || first.Rank != 1 || !first.Best || first.Pass1 == nil || first.Pass1.Value != 1 || first.VsBest != nil {
		t.Errorf("first row = %+v, want the oracle, rank 1, best, pass@1 1", first)
	}
	if last.Harness != "nop" || last.Rank != 3 || last.VsBest == nil || last.VsBest.PValue == nil || last.VsBest.Diff != -1 || last.PassAtK == nil {
		t.Errorf("last row = %+v, want nop ranked 3 with a comparison to the best", last)
	}
	// The heuristic command agent's cost is its own usage.json: marked
	// self-reported on every board, also the one ranked by cost.
	for _, m := range []string{"pass@1", "pass@k", "pass^k", "pass@1-errors-as-failures", "cost", "time", "tokens"} {
		alice().get(t, "/v1/benchmarks/demo-bench/leaderboard?metric="+url.QueryEscape(m), http.StatusOK, &board)
		if board.Metric != m || len(board.Rows) != 3 {
			t.Errorf("leaderboard by %s = %+v", m, board)
		}
		for _, r := range board.Rows {
			if want := r.Harness == "command"; r.UsageSelfReported != want {
				t.Errorf("leaderboard by %s: row %s usage_self_reported = %v, want %v", m, r.Label, r.UsageSelfReported, want)
			}
		}
	}
	wantError(t, alice(), request{method: "GET", path: "/v1/benchmarks/demo-bench/leaderboard?metric=elo"}, 400, v1.CodeBadRequest)
	bob().get(t, "/v1/benchmarks/demo-bench/leaderboard", http.StatusOK, &board)
	if len(board.Rows) != 0 {
		t.Errorf("bob's demo-bench leaderboard = %+v, want empty (alice's runs are hers)", board)
	}
}

// checkCompare contrasts the oracle (agent 0) with nop (agent 1): nop
// fails every task the oracle solves.
func checkCompare(t *testing.T, id string) {
	var c v1.CompareView
	alice().get(t, "/v1/compare?a="+url.QueryEscape(id+"/0")+"&b="+url.QueryEscape(id+"/1"), http.StatusOK, &c)
	if c.A.Harness != "oracle" || c.B.Harness != "nop" || c.Tasks != 8 || c.Pass1.Diff != -1 || len(c.Regressions) != 8 ||
		len(c.Improvements) != 0 || !c.SameMeasurement || c.Time == nil {
		t.Errorf("compare oracle with nop = %+v, want 8 common tasks, all regressions, a −1 difference and a time delta", c)
	}
	e := wantError(t, alice(), request{method: "GET", path: "/v1/compare?a=" + url.QueryEscape(id) + "&b=" + url.QueryEscape(id+"/1")}, 400, v1.CodeBadRequest)
	if !strings.Contains(e.Message, "a: run") || !strings.Contains(e.Message, "3 agents") {
		t.Errorf("a run of 3 agents without an index: %q, want the agents named", e.Message)
	}
	wantError(t, alice(), request{method: "GET", path: "/v1/compare?a=" + url.QueryEscape(id+"/7") + "&b=" + url.QueryEscape(id+"/1")}, 400, v1.CodeBadRequest)
	wantError(t, alice(), request{method: "GET", path: "/v1/compare?b=" + url.QueryEscape(id+"/1")}, 400, v1.CodeBadRequest)
	wantError(t, bob(), request{method: "GET", path: "/v1/compare?a=" + url.QueryEscape(id+"/0") + "&b=" + url.QueryEscape(id+"/1")}, 404, v1.CodeNotFound)
}

// checkReplacementWarning: validating a full-list, one-attempt oracle run
// says it would replace the oracle's parity row, and what changes.
func checkReplacementWarning(t *testing.T, id string) {
	var report v1.ValidationReport
	alice().call(t, toml("/v1/runs/validate", "[experiment]\nbenchmark = \"demo-bench\"\n[[agents]]\nharness = \"oracle\"\n"), http.StatusOK, &report)
	want := []string{"oracle's leaderboard row (run " + id + ") is replaced by it", `the full task list instead of task set "parity"`,
		"1 attempts per task instead of 2", "it is the best row"}
	found := false
	for _, w := range report.Warnings {
		if strings.Contains(w, "leaderboard row") {
			found = true
			for _, part := range want {
				if !strings.Contains(w, part) {
					t.Errorf("replacement warning %q lacks %q", w, part)
				}
			}
		}
	}
	if !found {
		t.Errorf("validate warnings = %q, want one naming the oracle's replaced row", report.Warnings)
	}
	// The same measurement again replaces nothing worth a warning.
	alice().call(t, toml("/v1/runs/validate", parityConfig), http.StatusOK, &report)
	for _, w := range report.Warnings {
		if strings.Contains(w, "leaderboard row") {
			t.Errorf("a run of the same measurement warns %q", w)
		}
	}
}

func checkRunList(t *testing.T, id string) {
	var ids []string
	cursor := ""
	for {
		var page v1.RunList
		alice().get(t, "/v1/runs?limit=1&cursor="+url.QueryEscape(cursor), http.StatusOK, &page)
		for _, r := range page.Runs {
			ids = append(ids, r.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Contains(ids, id) || len(ids) != len(slices.Compact(slices.Clone(ids))) {
		t.Errorf("runs paged by 1 = %v, want %s once", ids, id)
	}
	// The runs list and the run view name the submitter, not only its id.
	var me v1.WorkspaceView
	alice().get(t, "/v1/workspace", http.StatusOK, &me)
	var all v1.RunList
	alice().get(t, "/v1/runs?benchmark=demo-bench", http.StatusOK, &all)
	var detail v1.RunDetail
	alice().get(t, "/v1/runs/"+id, http.StatusOK, &detail)
	for _, sub := range append([]v1.Submission{detail.Submission}, func() (out []v1.Submission) {
		for _, r := range all.Runs {
			out = append(out, r.Submission)
		}
		return out
	}()...) {
		if me.User.Name == "" || sub.SubmittedBy != me.User.ID || sub.SubmittedByName != me.User.Name {
			t.Errorf("submission %+v, want submitted by %s named %q", sub, me.User.ID, me.User.Name)
		}
	}
	for _, q := range []string{"status=finished", "benchmark=demo-bench", "benchmark=demo-bench&status=finished"} {
		var page v1.RunList
		alice().get(t, "/v1/runs?"+q, http.StatusOK, &page)
		if !slices.ContainsFunc(page.Runs, func(r v1.RunView) bool { return r.ID == id }) {
			t.Errorf("runs?%s lacks %s", q, id)
		}
	}
	var none v1.RunList
	alice().get(t, "/v1/runs?status=stopped&benchmark=demo-bench-9", http.StatusOK, &none)
	if len(none.Runs) != 0 {
		t.Errorf("runs of a benchmark without runs = %+v", none.Runs)
	}
	wantError(t, alice(), request{method: "GET", path: "/v1/runs?status=bogus"}, 400, v1.CodeBadRequest)
	wantError(t, alice(), request{method: "GET", path: "/v1/runs/r-nope"}, 404, v1.CodeNotFound)
}

func checkRunIsolation(t *testing.T, id string) {
	rid := v1.ResultID(0, 1, "csv-summary")
	for _, rq := range []request{
		{method: "GET", path: "/v1/runs/" + id},
		{method: "GET", path: "/v1/runs/" + id + "/config"},
		{method: "GET", path: "/v1/runs/" + id + "/logs"},
		{method: "GET", path: "/v1/runs/" + id + "/results"},
		{method: "GET", path: "/v1/runs/" + id + "/results/" + rid},
		{method: "GET", path: "/v1/runs/" + id + "/results/" + rid + "/artifacts/result.json"},
		{method: "GET", path: "/v1/runs/" + id + "/download"},
		{method: "POST", path: "/v1/runs/" + id + "/stop"},
	} {
		wantError(t, bob(), rq, http.StatusNotFound, v1.CodeNotFound)
	}
	var list v1.RunList
	bob().get(t, "/v1/runs", http.StatusOK, &list)
	if len(list.Runs) != 0 {
		t.Errorf("bob sees runs %+v, want none", list.Runs)
	}
}

// smokeConfig keeps a run busy long enough to stop it.
const smokeConfig = `
[experiment]
benchmark = "demo-bench"

[execution]
attempts_per_task = 5
max_concurrent_attempts = 1

[[agents]]
harness = "oracle"
`

// smokeJSON is smokeConfig in the JSON form.
const smokeJSON = `{"experiment": {"benchmark": "demo-bench"},
 "execution": {"attempts_per_task": 5, "max_concurrent_attempts": 1},
 "agents": [{"harness": "oracle"}]}`

func TestStopRun(t *testing.T) {
	readyBenchmark(t, alice(), "demo-bench")
	var created v1.CreatedRun
	alice().call(t, request{method: "POST", path: "/v1/runs?name=to-stop", body: []byte(smokeJSON), contentType: "application/json"},
		http.StatusCreated, &created)
	if created.Name != "to-stop" || created.TaskCount != 15 || created.SlotCount != 75 {
		t.Errorf("JSON submission = %+v, want run to-stop with 15 tasks, 75 slots", created)
	}
	var before v1.RunDetail
	alice().call(t, request{method: "GET", path: "/v1/runs/" + created.ID}, http.StatusOK, &before) // cached now
	var stopping v1.RunView
	alice().call(t, request{method: "POST", path: "/v1/runs/" + created.ID + "/stop"}, http.StatusAccepted, &stopping)
	if stopping.Status != "stopping" && stopping.Status != "stopped" {
		t.Errorf("stop answer status %s, want stopping", stopping.Status)
	}
	// The run never steps back: the view cached before the stop is not
	// served after it.
	var after v1.RunDetail
	alice().call(t, request{method: "GET", path: "/v1/runs/" + created.ID}, http.StatusOK, &after)
	if after.Status != "stopping" && after.Status != "stopped" {
		t.Errorf("run read right after the stop is %s (it was %s before), want stopping or stopped", after.Status, before.Status)
	}
	d := finishedRun(t, alice(), created.ID)
	if d.Status != "stopped" || d.Outcomes.Cancelled == 0 || d.Progress.Completed != d.Progress.Total {
		t.Errorf("stopped run = %s %+v %+v, want stopped with cancelled slots", d.Status, d.Progress, d.Outcomes)
	}
	wantError(t, alice(), request{method: "POST", path: "/v1/runs/" + created.ID + "/stop"}, http.StatusConflict, v1.CodeConflict)
}

func TestDownloadPendingRun(t *testing.T) {
	// A run that never left pending: stored directly, without the active
	// marker, so no loop picks it up.
	r := run.Run{ID: "r-pending-download", Workspace: env.Tenant.Workspace, Name: "pending", Benchmark: "demo-bench",
		Status: run.Pending, Agents: 1, Tasks: []string{"csv-summary"}, Settings: run.Settings{AttemptsPerTask: 1}, CreatedAt: time.Now().UTC()}
	ops, err := records.CreateRunOp(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Server.Records().Transact(context.Background(), ops[:1]); err != nil {
		t.Fatal(err)
	}
	wantError(t, alice(), request{method: "GET", path: "/v1/runs/" + r.ID + "/download"}, http.StatusConflict, v1.CodeConflict)
	wantError(t, bob(), request{method: "GET", path: "/v1/runs/" + r.ID + "/download"}, http.StatusNotFound, v1.CodeNotFound)
}

func TestBillingRequired(t *testing.T) {
	ctx := context.Background()
	c, err := env.Server.CreateWorkspace(ctx, "unpaid", "carol")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Server.Records().Workspaces.PutBilling(ctx, c.Workspace, records.Billing{Status: records.BillingPastDue, UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	carol := caller{token: c.Token}
	readyBenchmark(t, carol, "demo-bench")
	e := wantError(t, carol, toml("/v1/runs", smokeConfig), http.StatusPaymentRequired, v1.CodeBillingRequired)
	if !strings.Contains(e.Message, "past_due") {
		t.Errorf("402 message %q does not say what is wrong", e.Message)
	}
	var report v1.ValidationReport
	carol.call(t, toml("/v1/runs/validate", smokeConfig), http.StatusOK, &report)
	if report.Valid || report.BillingProblem == "" {
		t.Errorf("validate without billing = %+v, want the billing problem", report)
	}
	var ws v1.WorkspaceView
	carol.get(t, "/v1/workspace", http.StatusOK, &ws)
	if ws.Billing.Status != "past_due" || ws.Billing.CanSubmit {
		t.Errorf("workspace billing = %+v, want past_due, cannot submit", ws.Billing)
	}
}

// slowConfig's attempts take a second each, one at a time: a run a test can
// stop after some of its attempts ran.
const slowConfig = `
[experiment]
benchmark = "demo-bench"

[tasks]
task_set = "parity"

[execution]
attempts_per_task = 1
max_concurrent_attempts = 1

[[agents]]
harness = "command"
command = "sleep 1"
`

// TestStopKeepsMetrics: a run stopped after some attempts ran keeps the
// metrics of those attempts (pass@1 over the tasks that ran) instead of
// losing pass@1 to the cancelled ones, and its agent has a start and an end.
func TestStopKeepsMetrics(t *testing.T) {
	readyBenchmark(t, alice(), "demo-bench")
	var created v1.CreatedRun
	alice().call(t, toml("/v1/runs", slowConfig), http.StatusCreated, &created)
	waitFor(t, "a first result", 2*time.Minute, func() bool {
		var d v1.RunDetail
		alice().get(t, "/v1/runs/"+created.ID, http.StatusOK, &d)
		return d.Progress.Completed >= 1
	})
	alice().call(t, request{method: "POST", path: "/v1/runs/" + created.ID + "/stop"}, http.StatusAccepted, nil)
	d := finishedRun(t, alice(), created.ID)
	a := d.AgentsDetail[0]
	ran := int(a.Outcomes.Passed + a.Outcomes.Failed + a.Outcomes.Errored)
	if d.Status != "stopped" || ran == 0 || a.Outcomes.Cancelled == 0 {
		t.Fatalf("run %s %+v, want stopped with attempts that ran and cancelled ones", d.Status, a.Outcomes)
	}
	if a.Metrics.Pass1 == nil || a.Metrics.Pass1.N != ran || a.Metrics.Tasks != ran {
		t.Errorf("stopped agent pass@1 %+v over %d tasks, want pass@1 over the %d tasks that ran", a.Metrics.Pass1, a.Metrics.Tasks, ran)
	}
	if a.Status != "stopped" || a.StartedAt == nil || a.EndedAt == nil || a.DurationSec <= 0 {
		t.Errorf("stopped agent %s started %v ended %v duration %v, want stopped with its span", a.Status, a.StartedAt, a.EndedAt, a.DurationSec)
	}
}
