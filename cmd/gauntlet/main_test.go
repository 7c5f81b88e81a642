package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/google/go-cmp/cmp"
)

// binary is the gauntlet command built once for the whole test.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gauntlet-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "gauntlet")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// gauntlet runs the built binary and returns stdout, stderr and exit code.
func gauntlet(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if exitErr, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), errOut.String(), 0
}

var cellSeparator = regexp.MustCompile(`\s{2,}`)

// table parses a text leaderboard into header → cell maps keyed by agent.
func table(t *testing.T, out string) map[string]map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var header []string
	rows := map[string]map[string]string{}
	for _, line := range lines {
		cells := cellSeparator.Split(strings.TrimSpace(line), -1)
		switch {
		case len(cells) > 0 && cells[0] == "RANK":
			header = cells
		case header != nil && len(cells) == len(header):
			row := map[string]string{}
			for i, h := range header {
				row[h] = cells[i]
			}
			rows[row["AGENT"]] = row
		}
	}
	return rows
}

// The expected cells below are computed by hand from testdata/small.jsonl:
//
//	alpha: per-task pass@1 1, 1, 1, ½ → 87.5% over 8 attempts; Wilson
//	       with effective n 8 → (52.9–97.8) (pkg/stats/testdata/
//	       reference.py, "cli alpha"); cost ⅒,⅒,⅒,0.3 → $0.15; 10 s;
//	       1000 + 234 tokens.
//	beta:  1, ½ (an errored attempt without a class is the agent's: a
//	       failure), 1, ½ → 75% (40.9–92.9); vs alpha: t = −1, df 3,
//	       p = 0.3910, Holm-adjusted over the two comparisons
//	       max(2·0.006, 0.391) = 0.391 ⇒ tie (1*).
//	nop:   0 everywhere → (0.0–49.0), Wilson of 0/4; vs alpha t = −7,
//	       p = 0.006 ⇒ rank 3.
//	pass@2: alpha and beta pass every task within two attempts → 100%.
func TestScoreTable(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want map[string]map[string]string
	}{
		{
			name: "pass@1",
			args: []string{"score", "testdata/small.jsonl"},
			want: map[string]map[string]string{
				"prov/alpha (h1)": {"RANK": "1", "AGENT": "prov/alpha (h1)", "PASS@1": "87.5% (52.9–97.8)", "PASS@2": "100.0%", "COST": "$0.1500", "TIME": "10.0s", "TOKENS": "1.2k"},
				"prov/beta (h2)":  {"RANK": "1*", "AGENT": "prov/beta (h2)", "PASS@1": "75.0% (40.9–92.9)", "PASS@2": "100.0%", "COST": "$0.0500", "TIME": "30.0s", "TOKENS": "2.5k"},
				"nop":             {"RANK": "3", "AGENT": "nop", "PASS@1": "0.0% (0.0–49.0)", "PASS@2": "0.0%", "COST": "–", "TIME": "5.0s", "TOKENS": "–"},
			},
		},
		{
			// alpha − beta cost per task: .05, .05, .05, .25 ⇒ t = 2, df 3,
			// p = 0.139 ⇒ tie. nop reports no cost ⇒ unranked.
			name: "cost is lower-is-better",
			args: []string{"score", "--metric", "cost", "testdata/small.jsonl"},
			want: map[string]map[string]string{
				"prov/alpha (h1)": {"RANK": "1*"}, "prov/beta (h2)": {"RANK": "1"}, "nop": {"RANK": "–"},
			},
		},
		{
			// Time differences from nop are constant per task (5 s, 25 s) ⇒
			// zero spread, p = 0 ⇒ separated. Flags may follow the path.
			name: "time with the flag after the path",
			args: []string{"score", "testdata/small.jsonl", "--metric=time"},
			want: map[string]map[string]string{
				"nop": {"RANK": "1"}, "prov/alpha (h1)": {"RANK": "2"}, "prov/beta (h2)": {"RANK": "3"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := gauntlet(t, tt.args...)
			if code != exitOK {
				t.Fatalf("gauntlet %v exit %d, stderr %q", tt.args, code, stderr)
			}
			got := table(t, stdout)
			for agent, cells := range tt.want {
				for col, want := range cells {
					if got[agent][col] != want {
						t.Errorf("gauntlet %v: %s %s = %q, want %q\n%s", tt.args, agent, col, got[agent][col], want, stdout)
					}
				}
			}
		})
	}
}

func TestScoreJSON(t *testing.T) {
	stdout, stderr, code := gauntlet(t, "score", "--json", "testdata/small.jsonl")
	if code != exitOK {
		t.Fatalf("gauntlet score --json exit %d, stderr %q", code, stderr)
	}
	var board struct {
		Metric string
		K      int
		Rows   []struct {
			Rank         int
			Best         bool
			TiedWithBest bool `json:"tied_with_best"`
			Summary      struct {
				Entrant struct{ Model string }
				Pass1   struct{ Mean float64 }
			}
			VsBest *struct {
				Diff, P, T float64
				DF         int
			} `json:"vs_best"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &board); err != nil {
		t.Fatalf("decode --json output: %v\n%s", err, stdout)
	}
	type rowView struct {
		Model     string
		Rank      int
		Pass1     float64
		Diff, P   float64
		T         float64
		DF        int
		HasVsBest bool
	}
	var got []rowView
	for _, r := range board.Rows {
		v := rowView{Model: r.Summary.Entrant.Model, Rank: r.Rank, Pass1: r.Summary.Pass1.Mean}
		if r.VsBest != nil {
			v.Diff, v.P, v.T, v.DF, v.HasVsBest = r.VsBest.Diff, r.VsBest.P, r.VsBest.T, r.VsBest.DF, true
		}
		got = append(got, v)
	}
	// p-values by numerical integration of the t(3) density.
	want := []rowView{
		{Model: "prov/alpha", Rank: 1, Pass1: 0.875},
		{Model: "prov/beta", Rank: 1, Pass1: 0.75, Diff: -0.125, P: 0.3910022, T: -1, DF: 3, HasVsBest: true},
		{Model: "", Rank: 3, Pass1: 0, Diff: -0.875, P: 0.0059863, T: -7, DF: 3, HasVsBest: true},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-6 })); diff != "" {
		t.Errorf("gauntlet score --json rows mismatch (-want +got):\n%s", diff)
	}
	if board.Metric != "pass@1" || board.K != 2 {
		t.Errorf("gauntlet score --json metric %q K %d, want pass@1 and 2", board.Metric, board.K)
	}
}

func TestScoreHarborJobDir(t *testing.T) {
	job := t.TempDir()
	start := time.Date(2026, 1, 28, 14, 0, 0, 0, time.UTC)
	for i, reward := range []float64{1, 0, 1, 1} {
		end := start.Add(time.Duration(60*(i+1)) * time.Second)
		name := fmt.Sprintf("task-%d__x", i%2)
		tr := harbor.TrialResult{ID: fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i), TaskName: fmt.Sprintf("task-%d", i%2),
			TrialName: fmt.Sprintf("%s%d", name, i), StartedAt: &start, FinishedAt: &end,
			TaskID: &harbor.TaskID{Path: fmt.Sprintf("task-%d", i%2)}, Config: json.RawMessage(fmt.Sprintf(`{"task":{"path":"task-%d"}}`, i%2)),
			AgentInfo:      harbor.AgentInfo{Name: "claude-code", ModelInfo: &harbor.ModelInfo{Name: "claude-sonnet-4.5", Provider: "anthropic"}},
			VerifierResult: &harbor.VerifierResult{Rewards: map[string]float64{"reward": reward}}}
		dir := filepath.Join(job, tr.TrialName)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := harbor.WriteTrialResult(filepath.Join(dir, harbor.TrialResultFile), tr); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, code := gauntlet(t, "score", job)
	if code != exitOK {
		t.Fatalf("gauntlet score JOBDIR exit %d, stderr %q", code, stderr)
	}
	// task-0: trials 0 and 2 (1, 1) → 1; task-1: trials 1 and 3 (0, 1) → ½;
	// pass@1 75% (30.1–95.4: Wilson over 4 attempts, reference.py "cli
	// jobdir"); durations 60, 180 and 120, 240 s → 150 s.
	row := table(t, stdout)["anthropic/claude-sonnet-4.5 (claude-code)"]
	want := map[string]string{"RANK": "1", "AGENT": "anthropic/claude-sonnet-4.5 (claude-code)", "PASS@1": "75.0% (30.1–95.4)",
		"PASS@2": "100.0%", "COST": "–", "TIME": "150.0s", "TOKENS": "–", "VS BEST": "best"}
	if diff := cmp.Diff(want, row); diff != "" {
		t.Errorf("gauntlet score JOBDIR row mismatch (-want +got):\n%s\n%s", diff, stdout)
	}
}

// A job directory Harbor's own models wrote (pkg/harbor/testdata/jobs,
// scripts/harbor/golden.py) scores as Harbor scored it: lru-cache 1 and 0,
// csv-summary 1 and an agent timeout without a reward (0).
func TestScoreHarborGoldenJobDir(t *testing.T) {
	for _, dir := range []string{"../../pkg/harbor/testdata/jobs/2026-01-28__14-00-00", "../../pkg/harbor/testdata/jobs"} {
		stdout, stderr, code := gauntlet(t, "score", dir)
		if code != exitOK {
			t.Fatalf("gauntlet score %s exit %d, stderr %q", dir, code, stderr)
		}
		row := table(t, stdout)["openai/gpt-5.2 (codex)"]
		want := map[string]string{"RANK": "1", "AGENT": "openai/gpt-5.2 (codex)", "PASS@1": "50.0% (9.5–90.5)",
			"PASS@2": "100.0%", "COST": "$0.4062", "TIME": "135.0s", "TOKENS": "1.0k", "VS BEST": "best",
			// The agent timeout without a reward is the agent's error, scored
			// as a failure (docs/SCORING.md); pass@1's interval is Wilson's.
			"ERRORS": "1/0/0"}
		if diff := cmp.Diff(want, row); diff != "" {
			t.Errorf("gauntlet score %s row mismatch (-want +got):\n%s\n%s", dir, diff, stdout)
		}
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string // substring
		wantStdout string // substring
	}{
		{name: "no command", args: nil, wantCode: exitUsage, wantStderr: "usage: gauntlet <command>"},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: exitUsage, wantStderr: `unknown command "frobnicate"`},
		{name: "help", args: []string{"help"}, wantCode: exitOK, wantStdout: "score "},
		{name: "score help", args: []string{"score", "-h"}, wantCode: exitOK, wantStderr: "usage: gauntlet score"},
		{name: "no path", args: []string{"score"}, wantCode: exitUsage, wantStderr: "no PATH given"},
		{name: "bad metric", args: []string{"score", "--metric", "pass@5", "testdata/small.jsonl"}, wantCode: exitUsage,
			wantStderr: `--metric: unknown metric "pass@5": want pass@1, pass@k, pass^k, pass@1-errors-as-failures, cost, time or tokens`},
		{name: "unknown flag", args: []string{"score", "--frob", "testdata/small.jsonl"}, wantCode: exitUsage, wantStderr: "flag provided but not defined: -frob"},
		{name: "bad line", args: []string{"score", "testdata/bad.jsonl"}, wantCode: exitFailure,
			wantStderr: "gauntlet score: testdata/bad.jsonl:2: attempt: want an integer, got string\n"},
		{name: "missing file", args: []string{"score", "testdata/none.jsonl"}, wantCode: exitFailure, wantStderr: "no such file or directory"},
		{name: "ok", args: []string{"score", "--", "testdata/small.jsonl"}, wantCode: exitOK, wantStdout: "prov/alpha (h1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := gauntlet(t, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantStderr) || !strings.Contains(stdout, tt.wantStdout) {
				t.Errorf("gauntlet %v = exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
					tt.args, code, stdout, stderr, tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}
