package server_test

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/api/v1"
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

	rows := readCSV(t, "results.csv", files["results.csv"])
	if len(rows) != len(results)+1 {
		t.Fatalf("results.csv has %d rows, want %d results and a header", len(rows), len(results))
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
