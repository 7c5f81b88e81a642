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

func TestFormatters(t *testing.T) {
	est := func(mean float64, ci *stats.Interval) *leaderboard.Estimate {
		return &leaderboard.Estimate{Mean: mean, Tasks: 2, CI: ci}
	}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"percent with CI", percent(est(0.6666666, &stats.Interval{Lo: 0.25, Hi: 0.99949})), "66.7% (25.0–99.9)"},
		{"percent without CI", percent(est(0.5, nil)), "50.0%"},
		{"percent missing", percent(nil), "–"},
		{"small dollars", dollars(est(0.01234, nil)), "$0.0123"},
		{"large dollars", dollars(est(12.345, nil)), "$12.35"},
		{"zero dollars", dollars(est(0, nil)), "$0.00"},
		{"seconds", seconds(est(83.44, nil)), "83.4s"},
		{"tokens", tokens(est(1234567.4, nil)), "1,234,567"},
		{"few tokens", tokens(est(999.5, nil)), "1,000"},
		{"zero tokens", tokens(est(0, nil)), "0"},
		{"tokens missing", tokens(nil), "–"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

const twoBoards = `{"harness":"h","model":"a","task":"x","attempt":1,"reward":1,"task_set":"parity","version":"1.0"}
{"harness":"h","model":"a","task":"y","attempt":1,"reward":1,"task_set":"parity","version":"1.0"}
{"harness":"h","model":"b","task":"x","attempt":1,"reward":0}
{"harness":"h","model":"b","task":"y","attempt":1,"reward":1}
`

func TestWriteTextGroups(t *testing.T) {
	inputs, err := ReadJSONL(strings.NewReader(twoBoards), "in", 1)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteText(&out, leaderboard.Build(inputs, leaderboard.MetricPass1, leaderboard.Options{})); err != nil {
		t.Fatal(err)
	}
	// One attempt per task: no Pass@k column; b and a are on different
	// boards, so each is rank 1 and neither is marked as a tie.
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"Ranked by pass@1 · all tasks · 2 tasks",
		"Rank Agent Pass@1 Cost/task Time/task Tokens/task",
		"1 b (h) 50.0% (0.0–100.0) – – –",
		"",
		"Ranked by pass@1 · task set parity · version 1.0 · 2 tasks",
		"Rank Agent Pass@1 Cost/task Time/task Tokens/task",
		"1 a (h) 100.0% (100.0–100.0) – – –",
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
		Groups []struct {
			TaskSet string `json:"task_set"`
			K       int    `json:"k"`
			Rows    []struct {
				Rank    int      `json:"rank"`
				Value   *float64 `json:"value"`
				Summary struct {
					Pass1 struct {
						Mean float64         `json:"mean"`
						CI   *stats.Interval `json:"ci"`
					} `json:"pass1"`
				} `json:"summary"`
			} `json:"rows"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("WriteJSON() wrote invalid JSON: %v\n%s", err, out.String())
	}
	if got.Metric != "pass@k" || len(got.Groups) != 2 || got.Groups[1].TaskSet != "parity" || got.Groups[0].K != 1 ||
		*got.Groups[0].Rows[0].Value != 0.5 || got.Groups[0].Rows[0].Summary.Pass1.CI == nil {
		t.Errorf("WriteJSON() = %s, want pass@k over two groups with values and intervals", out.String())
	}
}
