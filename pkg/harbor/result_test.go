package harbor

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func at(s string) *time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func TestReadTrialResultHarborFiles(t *testing.T) {
	tests := []struct {
		file       string
		want       TrialResult
		wantReward float64
		hasReward  bool
	}{
		{
			file: "testdata/results/passed.json",
			want: TrialResult{
				ID:        "5f0c6a0e-8a4e-4d3b-9a53-3f2a9d1c7b21",
				TaskName:  "git-multibranch",
				TrialName: "git-multibranch__Xk3PqL9",
				TrialURI:  "file:///home/runner/jobs/2026-01-28__14-02-11/git-multibranch__Xk3PqL9",
				TaskID: &TaskID{GitURL: "https://github.com/laude-institute/terminal-bench-2.git",
					GitCommitID: "69671fbaac6d67a7ef0dfec016cc38a64ef7a77c", Path: "git-multibranch"},
				Source:       ptr("terminal-bench"),
				TaskChecksum: "9b1e3c0f5a2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f",
				AgentInfo:    AgentInfo{Name: "codex", Version: "0.77.0", ModelInfo: &ModelInfo{Name: "gpt-5.2", Provider: "openai"}},
				AgentResult: &AgentResult{NInputTokens: ptr(184213), NCacheTokens: ptr(150528), NOutputTokens: ptr(9120),
					CostUSD: ptr(0.3187), Metadata: map[string]any{"n_episodes": 23.0}},
				VerifierResult:   &VerifierResult{Rewards: map[string]float64{"reward": 1}},
				StartedAt:        at("2026-01-28T14:02:13.512034Z"),
				FinishedAt:       at("2026-01-28T14:09:41.007215Z"),
				EnvironmentSetup: &TimingInfo{at("2026-01-28T14:02:13.51312Z"), at("2026-01-28T14:02:49.880412Z")},
				AgentSetup:       &TimingInfo{at("2026-01-28T14:02:49.880901Z"), at("2026-01-28T14:03:20.114577Z")},
				AgentExecution:   &TimingInfo{at("2026-01-28T14:03:20.114902Z"), at("2026-01-28T14:08:57.450118Z")},
				Verifier:         &TimingInfo{at("2026-01-28T14:08:57.4506Z"), at("2026-01-28T14:09:40.991804Z")},
				Extra: map[string]json.RawMessage{"step_results": json.RawMessage("null"),
					"environment_state": json.RawMessage(`{"snapshot_id":null,"image_ref":"ghcr.io/example/git-multibranch:latest"}`)},
			},
			wantReward: 1, hasReward: true,
		},
		{
			file: "testdata/results/errored.json",
			want: TrialResult{
				ID:           "c2a9e4f1-6b7d-4c8e-9f10-2a3b4c5d6e7f",
				TaskName:     "hello-world",
				TrialName:    "hello-world__7QmZr2a",
				TrialURI:     "file:///home/runner/jobs/2026-01-28__14-02-11/hello-world__7QmZr2a",
				TaskID:       &TaskID{Path: "examples/tasks/hello-world"},
				TaskChecksum: "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
				AgentInfo:    AgentInfo{Name: "oracle", Version: "1.0.0"},
				AgentResult:  &AgentResult{},
				ExceptionInfo: &ExceptionInfo{
					ExceptionType:      "AgentTimeoutError",
					ExceptionMessage:   "Agent execution timed out after 120.0 seconds",
					ExceptionTraceback: "Traceback (most recent call last):\n  File \"/harbor/trial/trial.py\", line 231, in _execute_agent\n    await asyncio.wait_for(\nTimeoutError\n",
					OccurredAt:         *at("2026-01-28T14:06:02.331907+00:00"),
				},
				StartedAt:        at("2026-01-28T14:02:13.6Z"),
				FinishedAt:       at("2026-01-28T14:06:03Z"),
				EnvironmentSetup: &TimingInfo{at("2026-01-28T14:02:13.6001Z"), at("2026-01-28T14:03:01.2Z")},
				AgentExecution:   &TimingInfo{StartedAt: at("2026-01-28T14:04:02Z")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ReadTrialResult(tt.file)
			if err != nil {
				t.Fatalf("ReadTrialResult(%q) error: %v", tt.file, err)
			}
			config := got.Config
			got.Config = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ReadTrialResult(%q) mismatch (-want +got):\n%s", tt.file, diff)
			}
			if !json.Valid(config) || !bytes.HasPrefix(config, []byte("{")) {
				t.Errorf("ReadTrialResult(%q) config = %s, want the verbatim object", tt.file, config)
			}
			r, ok := got.Reward()
			if r != tt.wantReward || ok != tt.hasReward {
				t.Errorf("Reward() = %v, %v, want %v, %v", r, ok, tt.wantReward, tt.hasReward)
			}
		})
	}
}

// A Harbor file decoded and written back must hold the same JSON value:
// same keys (including ones we do not model), same values, nulls kept.
func TestTrialResultRoundTripKeepsHarborJSON(t *testing.T) {
	for _, file := range []string{"testdata/results/passed.json", "testdata/results/errored.json"} {
		t.Run(file, func(t *testing.T) {
			tr, err := ReadTrialResult(file)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "result.json")
			if err := WriteTrialResult(out, tr); err != nil {
				t.Fatalf("WriteTrialResult: %v", err)
			}
			want := normalizedJSON(t, file)
			got := normalizedJSON(t, out)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("round trip of %s changed the document (-want +got):\n%s", file, diff)
			}
			again, err := ReadTrialResult(out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tr, again); diff != "" {
				t.Errorf("re-read mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// normalizedJSON decodes a result file to generic values with every
// timestamp field rewritten to RFC 3339 UTC, the form WriteTrialResult uses.
func normalizedJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	normalizeTimes(t, doc)
	return doc
}

func normalizeTimes(t *testing.T, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, val := range m {
		if s, isStr := val.(string); isStr && (strings.HasSuffix(k, "_at")) {
			var p pyTime
			if err := p.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			m[k] = time.Time(p).UTC().Format(time.RFC3339Nano)
			continue
		}
		if k == "config" {
			continue // verbatim
		}
		normalizeTimes(t, val)
	}
}

func TestWriteTrialResultShape(t *testing.T) {
	started := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	tr := TrialResult{
		ID: "8d2f7c1e-3b4a-5c6d-8e9f-0a1b2c3d4e5f", TaskName: "csv-summary", TrialName: "csv-summary__a1",
		TaskID:         &TaskID{GitURL: "https://example.com/tasks.git", Path: "tasks/csv-summary"},
		AgentInfo:      AgentInfo{Name: "codex", Version: "0.77.0", ModelInfo: &ModelInfo{Name: "gpt-5.2", Provider: "openai"}},
		AgentResult:    &AgentResult{NInputTokens: ptr(10), NOutputTokens: ptr(2), CostUSD: ptr(0.01)},
		VerifierResult: &VerifierResult{Rewards: map[string]float64{"reward": 0.5}},
		StartedAt:      &started,
		AgentExecution: &TimingInfo{StartedAt: &started},
		Extra:          map[string]json.RawMessage{"zz_custom": json.RawMessage(`{"k":1}`), "task_name": json.RawMessage(`"shadowed"`)},
		Config:         json.RawMessage(`{"task":{"path":"tasks/csv-summary","git_url":"https://example.com/tasks.git"},"trial_name":"csv-summary__a1","timeout_multiplier":1,"agent":{"name":"codex"},"environment":{},"verifier":{}}`),
	}
	out := filepath.Join(t.TempDir(), "result.json")
	if err := WriteTrialResult(out, tr); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	data, _ := os.ReadFile(out)
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("written file is not JSON: %v\n%s", err, data)
	}
	want := map[string]any{
		"id": "8d2f7c1e-3b4a-5c6d-8e9f-0a1b2c3d4e5f", "task_name": "csv-summary", "trial_name": "csv-summary__a1",
		"trial_uri": "", "source": nil, "task_checksum": "",
		"config": map[string]any{"task": map[string]any{"path": "tasks/csv-summary", "git_url": "https://example.com/tasks.git"},
			"trial_name": "csv-summary__a1", "timeout_multiplier": 1.0, "agent": map[string]any{"name": "codex"},
			"environment": map[string]any{}, "verifier": map[string]any{}},
		"task_id":    map[string]any{"git_url": "https://example.com/tasks.git", "git_commit_id": nil, "path": "tasks/csv-summary"},
		"agent_info": map[string]any{"name": "codex", "version": "0.77.0", "model_info": map[string]any{"name": "gpt-5.2", "provider": "openai"}},
		"agent_result": map[string]any{"n_input_tokens": 10.0, "n_cache_tokens": nil, "n_output_tokens": 2.0,
			"cost_usd": 0.01, "rollout_details": nil, "metadata": nil},
		"verifier_result": map[string]any{"rewards": map[string]any{"reward": 0.5}},
		"exception_info":  nil,
		"started_at":      "2026-02-01T10:00:00Z", "finished_at": nil,
		"environment_setup": nil, "agent_setup": nil, "verifier": nil,
		"agent_execution": map[string]any{"started_at": "2026-02-01T10:00:00Z", "finished_at": nil},
		"zz_custom":       map[string]any{"k": 1.0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("written result.json mismatch (-want +got):\n%s", diff)
	}
	if !bytes.HasPrefix(data, []byte("{\n    \"id\"")) {
		t.Errorf("written result.json is not indented by 4 spaces as Harbor writes it:\n%.60s", data)
	}
}

func TestWriteTrialResultValidates(t *testing.T) {
	good := TrialResult{ID: "8d2f7c1e-3b4a-5c6d-8e9f-0a1b2c3d4e5f", TaskName: "t", TrialName: "t__1", AgentInfo: AgentInfo{Name: "a"},
		TaskID: &TaskID{Path: "t"}, Config: json.RawMessage(`{"task":{"path":"t"},"agent":{"name":"a"}}`)}
	tests := []struct {
		name    string
		mutate  func(*TrialResult)
		wantErr string
	}{
		{"valid", func(*TrialResult) {}, ""},
		{"id not uuid", func(tr *TrialResult) { tr.ID = "trial-1" }, "id must be a UUID"},
		{"no task name", func(tr *TrialResult) { tr.TaskName = "" }, "task_name is required"},
		{"no trial name", func(tr *TrialResult) { tr.TrialName = "" }, "trial_name is required"},
		{"no agent", func(tr *TrialResult) { tr.AgentInfo.Name = "" }, "agent_info.name is required"},
		{"no task id", func(tr *TrialResult) { tr.TaskID = nil }, "task_id is required"},
		{"no config", func(tr *TrialResult) { tr.Config = nil }, "config is required"},
		{"null config", func(tr *TrialResult) { tr.Config = json.RawMessage("null") }, "config is required"},
		{"config not an object", func(tr *TrialResult) { tr.Config = json.RawMessage(`[]`) }, "trial result: config:"},
		{"config task without path or name", func(tr *TrialResult) { tr.Config = json.RawMessage(`{"task":{},"agent":{"name":"a"}}`) },
			"either path or name must be set"},
		{"config task with path and name", func(tr *TrialResult) {
			tr.Config = json.RawMessage(`{"task":{"path":"t","name":"o/t"},"agent":{"name":"a"}}`)
		}, "cannot set both path and name"},
		{"config commit without url", func(tr *TrialResult) {
			tr.Config = json.RawMessage(`{"task":{"path":"t","git_commit_id":"abc"},"agent":{"name":"a"}}`)
		}, "git_commit_id requires git_url"},
		{"config zero multiplier", func(tr *TrialResult) {
			tr.Config = json.RawMessage(`{"task":{"path":"t"},"agent":{"name":"a"},"timeout_multiplier":0}`)
		}, "timeout_multiplier must be > 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := good
			tt.mutate(&tr)
			path := filepath.Join(t.TempDir(), "result.json")
			err := WriteTrialResult(path, tr)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("WriteTrialResult error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("WriteTrialResult error = %v, want %q", err, tt.wantErr)
			}
			if _, statErr := os.Stat(path); !os.IsNotExist(statErr) {
				t.Errorf("WriteTrialResult wrote a file despite the error")
			}
		})
	}
}

func TestDecodeTrialResult(t *testing.T) {
	tests := []struct {
		name       string
		doc        string
		wantErr    string
		wantReward float64
		hasReward  bool
	}{
		{"sole reward of another name", `{"task_name":"t","trial_name":"r","agent_info":{"name":"a"},"verifier_result":{"rewards":{"accuracy":0.3}}}`, "", 0.3, true},
		{"several rewards, none named reward: the least", `{"task_name":"t","trial_name":"r","agent_info":{"name":"a"},"verifier_result":{"rewards":{"a":1,"b":0.25}}}`, "", 0.25, true},
		{"null reward value dropped", `{"task_name":"t","trial_name":"r","agent_info":{"name":"a"},"verifier_result":{"rewards":{"reward":null}}}`, "", 0, false},
		{"integer reward", `{"task_name":"t","trial_name":"r","agent_info":{"name":"a"},"verifier_result":{"rewards":{"reward":1}}}`, "", 1, true},
		{"null rewards", `{"task_name":"t","trial_name":"r","agent_info":{"name":"a"},"verifier_result":{"rewards":null}}`, "", 0, false},
		{"missing names", `{"agent_info":{"name":"a"}}`, "task_name is required", 0, false},
		{"bad timestamp", `{"task_name":"t","trial_name":"r","agent_info":{"name":"a"},"started_at":"yesterday"}`, "invalid timestamp", 0, false},
		{"not json", `{`, "decode trial result", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := DecodeTrialResult(strings.NewReader(tt.doc))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeTrialResult(%s) error = %v, want %q", tt.doc, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeTrialResult(%s) error: %v", tt.doc, err)
			}
			r, ok := tr.Reward()
			if r != tt.wantReward || ok != tt.hasReward {
				t.Errorf("Reward() = %v, %v, want %v, %v", r, ok, tt.wantReward, tt.hasReward)
			}
		})
	}
}

func TestTimingInfoDuration(t *testing.T) {
	tr, err := ReadTrialResult("testdata/results/passed.json")
	if err != nil {
		t.Fatal(err)
	}
	got, ok := tr.AgentExecution.Duration()
	want := 5*time.Minute + 37*time.Second + 335216*time.Microsecond
	if !ok || got != want {
		t.Errorf("AgentExecution.Duration() = %v, %v, want %v, true", got, ok, want)
	}
	if _, ok := (*TimingInfo)(nil).Duration(); ok {
		t.Errorf("nil TimingInfo Duration() ok = true, want false")
	}
}
