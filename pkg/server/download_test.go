package server_test

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor/harbortest"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// unzip downloads a run's zip of kind and returns its files by name.
func unzip(t *testing.T, id, kind string) map[string][]byte {
	t.Helper()
	status, hdr, body := alice().do(t, request{method: "GET", path: "/v1/runs/" + id + "/download?type=" + kind})
	if status != http.StatusOK || hdr.Get("Content-Type") != "application/zip" {
		t.Fatalf("download %s = %d %s", kind, status, hdr.Get("Content-Type"))
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("download %s: %v", kind, err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s in the zip: %v", f.Name, err)
		}
		files[f.Name] = data
		seen.add(string(data))
	}
	return files
}

func readCSV(t *testing.T, name string, data []byte) [][]string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return rows
}

func checkDownload(t *testing.T, id string) {
	files := unzip(t, id, "all")
	results := listResults(t, id, "", 500)

	summary := readCSV(t, "summary.csv", files["summary.csv"])
	if len(summary) != 4 || summary[0][0] != "run_id" {
		t.Fatalf("summary.csv has %d rows (%v), want a header and 3 agents", len(summary), summary)
	}
	col := slices.Index(summary[0], "pass1")
	if got := []string{summary[1][col], summary[2][col]}; !slices.Equal(got, []string{"1", "0"}) {
		t.Errorf("summary.csv pass1 of oracle and nop = %v, want 1 and 0", got)
	}

	// The heuristic command agent's tokens and cost are its own usage.json:
	// marked self-reported, never as metered; oracle and nop have none.
	col = slices.Index(summary[0], "usage_source")
	if got := []string{summary[1][col], summary[2][col], summary[3][col]}; col < 0 || !slices.Equal(got, []string{"", "", "self_reported"}) {
		t.Errorf("summary.csv usage_source of oracle, nop, heuristic = %v (column %d), want \"\", \"\", self_reported", got, col)
	}

	rows := readCSV(t, "results.csv", files["results.csv"])
	if len(rows) != len(results)+1 {
		t.Fatalf("results.csv has %d rows, want %d results and a header", len(rows), len(results))
	}
	usageCol, agentCol := slices.Index(rows[0], "usage_source"), slices.Index(rows[0], "agent")
	for _, r := range rows[1:] {
		if want := map[string]string{"0": "", "1": "", "2": "self_reported"}[r[agentCol]]; usageCol < 0 || r[usageCol] != want {
			t.Errorf("results.csv %s: usage_source %q, want %q", r[0], r[min(max(usageCol, 0), len(r)-1)], want)
			break
		}
	}
	var csvIDs, apiIDs []string
	for _, r := range rows[1:] {
		csvIDs = append(csvIDs, r[0])
	}
	for _, r := range results {
		apiIDs = append(apiIDs, r.ID)
	}
	if diff := cmp.Diff(apiIDs, csvIDs); diff != "" {
		t.Errorf("results.csv ids (-api +csv):\n%s", diff)
	}

	var logs v1.LogList
	alice().get(t, "/v1/runs/"+id+"/logs?limit=500", http.StatusOK, &logs)
	lines := strings.Split(strings.TrimSuffix(string(files["logs.txt"]), "\n"), "\n")
	if len(lines) != len(logs.Logs) {
		t.Errorf("logs.txt has %d lines, want %d", len(lines), len(logs.Logs))
	}
	for i, l := range logs.Logs {
		if i < len(lines) && lines[i] != v1.FormatLogLine(l.At, l.Level, l.Step, l.Slot, l.Message) {
			t.Errorf("logs.txt line %d = %q, want %+v", i, lines[i], l)
		}
	}

	for _, r := range results {
		var d v1.ResultDetail
		alice().get(t, "/v1/runs/"+id+"/results/"+r.ID, http.StatusOK, &d)
		for _, a := range d.Artifacts {
			name := "artifacts/" + r.ID + "/" + a.Path
			data, ok := files[name]
			if !ok {
				t.Errorf("zip lacks %s", name)
				continue
			}
			if int64(len(data)) != a.Size {
				t.Errorf("%s: %d bytes in the zip, %d listed", name, len(data), a.Size)
			}
		}
	}
	d := v1.ResultID(2, 1, "word-frequency")
	if _, ok := files["artifacts/"+d+"/result.json"]; !ok {
		t.Errorf("zip lacks artifacts/%s/result.json", d)
	}

	for kind, want := range map[string][]string{"summary": {"summary.csv"}, "results": {"results.csv"}, "logs": {"logs.txt"}} {
		var names []string
		for name := range unzip(t, id, kind) {
			names = append(names, name)
		}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("download type=%s files (-want +got):\n%s", kind, diff)
		}
	}
	onlyArtifacts := unzip(t, id, "artifacts")
	for name := range onlyArtifacts {
		if !strings.HasPrefix(name, "artifacts/") {
			t.Errorf("download type=artifacts holds %s", name)
		}
	}
	if len(onlyArtifacts) < len(results) {
		t.Errorf("download type=artifacts holds %d files, want at least one per result", len(onlyArtifacts))
	}
	wantError(t, alice(), request{method: "GET", path: "/v1/runs/" + id + "/download?type=everything"}, 400, v1.CodeBadRequest)
}

// checkHarborDownload checks the run's Harbor job directory against the
// shapes Harbor's models define (field names, required fields, types) and
// the paths Harbor's job loader reads: <job>/config.json, <job>/result.json,
// and per attempt <job>/<trial>/{result.json,config.json,agent/,verifier/,
// artifacts/}, the trial named as its result says.
func checkHarborDownload(t *testing.T, id string) {
	status, hdr, body := alice().do(t, request{method: "GET", path: "/v1/runs/" + id + "/download?format=harbor"})
	if status != http.StatusOK || hdr.Get("Content-Type") != "application/zip" {
		t.Fatalf("download format=harbor = %d %s", status, hdr.Get("Content-Type"))
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	files, dirs := map[string][]byte{}, map[string]bool{}
	jobs := map[string]bool{}
	for _, f := range zr.File {
		jobs[strings.SplitN(f.Name, "/", 2)[0]] = true
		if strings.HasSuffix(f.Name, "/") {
			dirs[strings.TrimSuffix(f.Name, "/")] = true
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name] = data
		seen.add(string(data))
	}
	if len(jobs) != 1 {
		t.Fatalf("zip holds %d top-level entries %v, want one job directory", len(jobs), jobs)
	}
	var job string
	for job = range jobs {
	}
	check := func(name, shape string) []byte {
		t.Helper()
		data, ok := files[job+"/"+name]
		if !ok {
			t.Errorf("job directory lacks %s", name)
			return nil
		}
		if err := harbortest.Check(shape, data); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		return data
	}
	var jobConfig struct {
		JobName string `json:"job_name"`
		Agents  []struct {
			Name string            `json:"name"`
			Env  map[string]string `json:"env"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(check("config.json", harbortest.JobConfig), &jobConfig); err != nil {
		t.Fatal(err)
	}
	if jobConfig.JobName != job || len(jobConfig.Agents) != 3 || jobConfig.Agents[0].Env["RUN_TOKEN"] != "${RUN_TOKEN}" {
		t.Errorf("job config = %+v, want job_name %q, 3 agents, RUN_TOKEN by name", jobConfig, job)
	}
	results := listResults(t, id, "", 500)
	var jobResult struct {
		ID           string `json:"id"`
		NTotalTrials int    `json:"n_total_trials"`
		Stats        struct {
			Completed int `json:"n_completed_trials"`
			Evals     map[string]struct {
				PassAtK map[string]float64 `json:"pass_at_k"`
			} `json:"evals"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(check("result.json", harbortest.JobResult), &jobResult); err != nil {
		t.Fatal(err)
	}
	if jobResult.ID != run.HarborJobID(id) || jobResult.NTotalTrials != 48 || jobResult.Stats.Completed != len(results) {
		t.Errorf("job result = %+v, want id %s, 48 trials, %d completed", jobResult, run.HarborJobID(id), len(results))
	}
	if len(jobResult.Stats.Evals) != 3 {
		t.Errorf("job stats have evals %v, want one per agent", jobResult.Stats.Evals)
	}
	for _, r := range results {
		trial := run.TrialName(run.SlotID(r.Agent, r.Task, r.Attempt), r.Generation)
		raw := check(trial+"/result.json", harbortest.TrialResult)
		config := check(trial+"/config.json", harbortest.TrialConfig)
		var tr struct {
			TrialName string          `json:"trial_name"`
			Config    json.RawMessage `json:"config"`
		}
		if err := json.Unmarshal(raw, &tr); err != nil {
			t.Fatal(err)
		}
		var a, b any
		_ = json.Unmarshal(tr.Config, &a)
		_ = json.Unmarshal(config, &b)
		if tr.TrialName != trial || !cmp.Equal(a, b) {
			t.Errorf("%s: trial_name %q, config.json equal to result's config: %v", trial, tr.TrialName, cmp.Equal(a, b))
		}
		for _, sub := range []string{"agent", "verifier", "artifacts"} {
			if !dirs[job+"/"+trial+"/"+sub] {
				t.Errorf("%s lacks %s/", trial, sub)
			}
		}
		for _, f := range []string{"trial.log", "verifier/test-stdout.txt"} {
			if _, ok := files[job+"/"+trial+"/"+f]; !ok {
				t.Errorf("%s lacks %s", trial, f)
			}
		}
		if r.Outcome == "passed" {
			_, txt := files[job+"/"+trial+"/verifier/reward.txt"]
			_, js := files[job+"/"+trial+"/verifier/reward.json"]
			if !txt && !js {
				t.Errorf("%s passed but has no verifier/reward.txt or reward.json", trial)
			}
		}
	}
	wantError(t, alice(), request{method: "GET", path: "/v1/runs/" + id + "/download?format=harbor&type=summary"}, 400, v1.CodeBadRequest)
	wantError(t, alice(), request{method: "GET", path: "/v1/runs/" + id + "/download?format=csv"}, 400, v1.CodeBadRequest)
}
