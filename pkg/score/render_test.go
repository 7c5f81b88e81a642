package score

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/stats"
	"github.com/google/go-cmp/cmp"
)

const twoBoards = `{"harness":"h","model":"a","task":"x","attempt":1,"reward":1,"task_set":"parity","version":"1.0"}
{"harness":"h","model":"a","task":"y","attempt":1,"reward":1,"task_set":"parity","version":"1.0"}
{"harness":"h","model":"b","task":"x","attempt":1,"reward":0}
{"harness":"h","model":"b","task":"y","attempt":1,"reward":1}
`

func TestWriteTextOneList(t *testing.T) {
	inputs, err := ReadJSONL(strings.NewReader(twoBoards), "in", 1)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteText(&out, leaderboard.Build(inputs, leaderboard.MetricPass1, leaderboard.Options{})); err != nil {
		t.Fatal(err)
	}
	// One list: a (parity set, version 1.0) is best; b ran the full list,
	// another measurement, so it is ranked by its number and never tested
	// against a or marked as a tie.
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"Ranked by pass@1 (cost, time and tokens per task)",
		"RANK AGENT PASS@1 COST TIME TOKENS VS BEST",
		// Wilson intervals of 2/2 and 1/2 (pkg/stats/testdata/reference.py).
		"1 a (h) [parity] 100.0% (34.2–100.0) – – – best",
		"2 b (h) 50.0% (9.5–90.5) – – – –",
		"[set]: the row's run measured that task set; only rows of the best's task set and version are tested for a tie",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("WriteText() mismatch (-want +got):\n%s", diff)
	}
}

func TestWriteJSON(t *testing.T) {
	inputs, err := ReadJSONL(strings.NewReader(twoBoards), "in", 1)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteJSON(&out, leaderboard.Build(inputs, leaderboard.MetricPassAtK, leaderboard.Options{})); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metric string `json:"metric"`
		K      int    `json:"k"`
		Rows   []struct {
			Rank    int      `json:"rank"`
			Value   *float64 `json:"value"`
			Summary struct {
				Run struct {
					TaskSet string `json:"task_set"`
				} `json:"run"`
				Pass1 struct {
					Mean float64         `json:"mean"`
					CI   *stats.Interval `json:"ci"`
				} `json:"pass1"`
			} `json:"summary"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("WriteJSON() wrote invalid JSON: %v\n%s", err, out.String())
	}
	if got.Metric != "pass@k" || got.K != 1 || len(got.Rows) != 2 || got.Rows[0].Summary.Run.TaskSet != "parity" ||
		*got.Rows[1].Value != 0.5 || got.Rows[1].Summary.Pass1.CI == nil {
		t.Errorf("WriteJSON() = %s, want pass@k of both entrants in one list with values and intervals", out.String())
	}
}
