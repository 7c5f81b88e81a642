package score

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/google/go-cmp/cmp"
)

func offlineRun(taskSet, version string) leaderboard.Run {
	coverage := leaderboard.CoverageFull
	if taskSet != "" {
		coverage = leaderboard.CoverageParity
	}
	return leaderboard.Run{ID: OfflineRunID, TaskSet: taskSet, ManifestVersion: version,
		Finished: true, AgentFinished: true, Coverage: coverage, AllSlotsReported: true}
}

func TestReadJSONL(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		threshold float64
		want      []leaderboard.EntrantInput
	}{
		{
			name: "rewards, outcomes and usage",
			in: `{"harness":"codex","model":"openai/gpt-5.2","task":"a","attempt":1,"reward":1,"cost_usd":0.25,"input_tokens":100,"output_tokens":20,"cache_tokens":60,"duration_sec":12.5}

{"harness":"codex","model":"openai/gpt-5.2","task":"a","attempt":2,"reward":0.99}
{"harness":"codex","model":"openai/gpt-5.2","task":"b","attempt":1,"outcome":"errored","output_tokens":7}
{"harness":"oracle","task":"a","attempt":1,"outcome":"passed","reward":0}
`,
			threshold: 1,
			want: []leaderboard.EntrantInput{
				{Entrant: leaderboard.Entrant{Harness: "codex", Model: "openai/gpt-5.2"}, Run: offlineRun("", ""),
					Attempts: []leaderboard.Attempt{
						{Task: "a", Outcome: leaderboard.Passed, CostUSD: 0.25, HasCost: true, InputTokens: 100, OutputTokens: 20, CacheTokens: 60, HasTokens: true, DurationSec: 12.5, HasDuration: true},
						{Task: "a", Outcome: leaderboard.Failed},
						{Task: "b", Outcome: leaderboard.Errored, OutputTokens: 7, HasTokens: true},
					}},
				// outcome wins over reward.
				{Entrant: leaderboard.Entrant{Harness: "oracle"}, Run: offlineRun("", ""),
					Attempts: []leaderboard.Attempt{{Task: "a", Outcome: leaderboard.Passed}}},
			},
		},
		{
			name: "error classes and failed judges",
			in: `{"harness":"h","model":"m","task":"a","attempt":1,"outcome":"errored","error_class":"platform"}
{"harness":"h","model":"m","task":"a","attempt":2,"outcome":"errored","error_class":"agent"}
{"harness":"h","model":"m","task":"a","attempt":3,"outcome":"judge_failed"}`,
			threshold: 1,
			want: []leaderboard.EntrantInput{{Entrant: leaderboard.Entrant{Harness: "h", Model: "m"}, Run: offlineRun("", ""),
				Attempts: []leaderboard.Attempt{
					{Task: "a", Outcome: leaderboard.Errored, ErrorClass: leaderboard.PlatformError},
					{Task: "a", Outcome: leaderboard.Errored, ErrorClass: leaderboard.AgentError},
					{Task: "a", Outcome: leaderboard.JudgeFailed},
				}}},
		},
		{
			name: "threshold applies to reward",
			in: `{"harness":"h","model":"m","task":"a","attempt":1,"reward":0.5}
{"harness":"h","model":"m","task":"a","attempt":2,"reward":0.49}`,
			threshold: 0.5,
			want: []leaderboard.EntrantInput{{Entrant: leaderboard.Entrant{Harness: "h", Model: "m"}, Run: offlineRun("", ""),
				Attempts: []leaderboard.Attempt{{Task: "a", Outcome: leaderboard.Passed}, {Task: "a", Outcome: leaderboard.Failed}}}},
		},
		{
			name: "task set and version split entrants",
			in: `{"harness":"h","model":"m","task":"a","attempt":1,"reward":1,"task_set":"parity","version":"2.0"}
{"harness":"h","model":"m","task":"a","attempt":1,"reward":0,"version":"2.0"}
{"harness":"h","model":"m","task":"a","attempt":1,"outcome":"cancelled"}`,
			threshold: 1,
			want: []leaderboard.EntrantInput{
				{Entrant: leaderboard.Entrant{Harness: "h", Model: "m"}, Run: offlineRun("", ""),
					Attempts: []leaderboard.Attempt{{Task: "a", Outcome: leaderboard.Cancelled}}},
				{Entrant: leaderboard.Entrant{Harness: "h", Model: "m"}, Run: offlineRun("", "2.0"),
					Attempts: []leaderboard.Attempt{{Task: "a", Outcome: leaderboard.Failed}}},
				{Entrant: leaderboard.Entrant{Harness: "h", Model: "m"}, Run: offlineRun("parity", "2.0"),
					Attempts: []leaderboard.Attempt{{Task: "a", Outcome: leaderboard.Passed}}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadJSONL(strings.NewReader(tt.in), "in.jsonl", tt.threshold)
			if err != nil {
				t.Fatalf("ReadJSONL() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ReadJSONL() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadJSONLBadLines(t *testing.T) {
	const ok = `{"harness":"h","model":"m","task":"a","attempt":1,"reward":1}` + "\n"
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"not JSON", ok + "{harness", "f.jsonl:2: invalid JSON: invalid character 'h' looking for beginning of object key string"},
		{"two values", `{"harness":"h","task":"a","attempt":1,"reward":1} {}`, "f.jsonl:1: more than one JSON value on the line"},
		{"missing harness", `{"model":"m","task":"a","attempt":1,"reward":1}`, "f.jsonl:1: harness: required"},
		{"blank task", `{"harness":"h","task":" ","attempt":1,"reward":1}`, "f.jsonl:1: task: required"},
		{"missing attempt", `{"harness":"h","task":"a","reward":1}`, "f.jsonl:1: attempt: required"},
		{"zero attempt", `{"harness":"h","task":"a","attempt":0,"reward":1}`, "f.jsonl:1: attempt: must be from 1 to 1000000, got 0"},
		{"huge attempt", `{"harness":"h","task":"a","attempt":99999999999,"reward":1}`, "f.jsonl:1: attempt: must be from 1 to 1000000, got 99999999999"},
		{"not an object", `[1]`, "f.jsonl:1: want a JSON object, got array"},
		{"object field of wrong kind", `{"harness":{"a":1},"task":"a","attempt":1,"reward":1}`, "f.jsonl:1: harness: want a string, got object"},
		{"line over the limit", ok + `{"harness":"` + strings.Repeat("h", MaxLineBytes) + `"}`, "f.jsonl:2: line longer than the 65536-byte limit"},
		{"fractional attempt", `{"harness":"h","task":"a","attempt":1.5,"reward":1}`, "f.jsonl:1: attempt: want an integer, got number 1.5"},
		{"string reward", `{"harness":"h","task":"a","attempt":1,"reward":"1"}`, "f.jsonl:1: reward: want a number, got string"},
		{"neither reward nor outcome", ok + ok[:len(ok)-len(`,"reward":1}`)-1] + `}`, "f.jsonl:2: reward: required when outcome is absent"},
		{"bad outcome", `{"harness":"h","task":"a","attempt":1,"outcome":"pass"}`, `f.jsonl:1: outcome: want passed, failed, errored, judge_failed or cancelled, got "pass"`},
		{"error class of a pass", `{"harness":"h","task":"a","attempt":1,"outcome":"passed","error_class":"agent"}`, "f.jsonl:1: error_class: only an errored attempt has one, this one is passed"},
		{"bad error class", `{"harness":"h","task":"a","attempt":1,"outcome":"errored","error_class":"infra"}`, `f.jsonl:1: error_class: want agent or platform, got "infra"`},
		{"negative cost", `{"harness":"h","task":"a","attempt":1,"reward":1,"cost_usd":-1}`, "f.jsonl:1: cost_usd: must be ≥ 0, got -1"},
		{"negative tokens", `{"harness":"h","task":"a","attempt":1,"reward":1,"output_tokens":-3}`, "f.jsonl:1: output_tokens: must be ≥ 0, got -3"},
		{"negative duration", `{"harness":"h","task":"a","attempt":1,"reward":1,"duration_sec":-0.5}`, "f.jsonl:1: duration_sec: must be ≥ 0, got -0.5"},
		{"unknown field", `{"harness":"h","task":"a","attempt":1,"reward":1,"score":1}`,
			"f.jsonl:1: score: unknown field (want harness, model, task, attempt, reward, outcome, cost_usd, input_tokens, output_tokens, cache_tokens, duration_sec, task_set, version)"},
		{"duplicate attempt", ok + "\n" + ok, "f.jsonl:3: attempt: duplicate of f.jsonl:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadJSONL(strings.NewReader(tt.in), "f.jsonl", 1)
			var lineErr *LineError
			if err == nil || !errors.As(err, &lineErr) || err.Error() != tt.want {
				t.Errorf("ReadJSONL(%q) error = %v, want %q (a *LineError)", tt.in, err, tt.want)
			}
		})
	}
}

func TestReadArguments(t *testing.T) {
	dir := t.TempDir()
	empty := dir + "/empty.jsonl"
	writeFile(t, empty, "\n\n")
	tests := []struct {
		name      string
		paths     []string
		threshold float64
		want      string
	}{
		{"no paths", nil, 1, "no input paths"},
		{"NaN threshold", []string{empty}, math.NaN(), "threshold: must be a finite number, got NaN"},
		{"missing file", []string{dir + "/nope.jsonl"}, 1, "read attempts: stat " + dir + "/nope.jsonl: no such file or directory"},
		{"no attempts", []string{empty}, 1, "no attempts found in " + empty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Read(tt.paths, nil, tt.threshold); err == nil || err.Error() != tt.want {
				t.Errorf("Read(%v) error = %v, want %q", tt.paths, err, tt.want)
			}
		})
	}
}

func TestReadMergesFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/a.jsonl", `{"harness":"h","model":"m","task":"a","attempt":1,"reward":1}`)
	writeFile(t, dir+"/b.jsonl", `{"harness":"h","model":"m","task":"a","attempt":2,"reward":0}`)
	writeFile(t, dir+"/dup.jsonl", `{"harness":"h","model":"m","task":"a","attempt":1,"reward":0}`)
	got, err := Read([]string{dir + "/a.jsonl", dir + "/b.jsonl"}, nil, 1)
	if err != nil {
		t.Fatalf("Read() error = %v", err)
	}
	want := []leaderboard.EntrantInput{{Entrant: leaderboard.Entrant{Harness: "h", Model: "m"}, Run: offlineRun("", ""),
		Attempts: []leaderboard.Attempt{{Task: "a", Outcome: leaderboard.Passed}, {Task: "a", Outcome: leaderboard.Failed}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read() mismatch (-want +got):\n%s", diff)
	}
	_, err = Read([]string{dir + "/a.jsonl", dir + "/dup.jsonl"}, nil, 1)
	if want := dir + "/dup.jsonl:1: attempt: duplicate of " + dir + "/a.jsonl:1"; err == nil || err.Error() != want {
		t.Errorf("Read(duplicate across files) error = %v, want %q", err, want)
	}
}

// zeros is /dev/zero: an endless stream of NUL bytes without a newline.
type zeros struct{ read int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.read += int64(len(p))
	return len(p), nil
}

// TestReadJSONLEndlessInput: `gauntlet score /dev/zero` stops at the line
// limit, having read about that much, instead of growing without bound.
func TestReadJSONLEndlessInput(t *testing.T) {
	z := &zeros{}
	_, err := ReadJSONL(z, "/dev/zero", 1)
	var lineErr *LineError
	if !errors.As(err, &lineErr) || !strings.Contains(err.Error(), "line longer than the 65536-byte limit") {
		t.Fatalf("ReadJSONL(/dev/zero) error = %v, want the line limit", err)
	}
	if z.read > 2*MaxLineBytes {
		t.Errorf("read %d bytes of /dev/zero before stopping, want at most about %d", z.read, MaxLineBytes)
	}
}
