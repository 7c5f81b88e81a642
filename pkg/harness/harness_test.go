package harness

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHarnessTable(t *testing.T) {
	var names []string
	for _, h := range All() {
		names = append(names, h.Name)
		if h.Description == "" || h.Version == "" || h.Run == "" {
			t.Errorf("harness %q lacks a description, version or run command", h.Name)
		}
	}
	want := []string{"claude-code", "cline", "codex", "command", "copilot-cli", "cursor-cli", "gemini-cli", "mini-swe-agent", "nop", "opencode", "openhands", "oracle", "qwen-code", "terminus-2"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("harness names (-want +got):\n%s", diff)
	}
	if _, ok := Lookup("no-such-harness"); ok {
		t.Error(`Lookup("no-such-harness") found a row`)
	}
	oracle, ok := Lookup("oracle")
	if !ok || !oracle.MountsSolution {
		t.Errorf("oracle = %+v, %v; want a row that mounts the solution", oracle, ok)
	}
	for _, h := range All() {
		if h.MountsSolution && h.Name != "oracle" {
			t.Errorf("harness %q mounts the solution; only the oracle may", h.Name)
		}
		// A harness that reaches a model through the gateway cannot run
		// without one.
		if h.ModelFree && (h.WireAPI != "" || h.KeyEnv != "") {
			t.Errorf("harness %q is model-free but speaks %q with key %q", h.Name, h.WireAPI, h.KeyEnv)
		}
	}
}

func TestHarnessRunCommand(t *testing.T) {
	data := RunTemplateData{Command: "/agent/run.sh --fast", Model: "m", SolutionDir: "/solution"}
	tests := []struct {
		harness string
		data    RunTemplateData
		want    string
		wantErr bool
	}{
		{harness: "command", data: data, want: "/agent/run.sh --fast"},
		{harness: "command", data: RunTemplateData{}, wantErr: true},
		{harness: "oracle", data: data, want: "bash /solution/solve.sh"},
		{harness: "nop", data: data, want: ":"},
	}
	for _, tc := range tests {
		h, _ := Lookup(tc.harness)
		got, err := h.RunCommand(tc.data)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s.RunCommand(%+v) = %q, %v; want %q (error %v)", tc.harness, tc.data, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestReadUsageJSON(t *testing.T) {
	tests := []struct {
		name    string
		content string // "" = no file
		want    Usage
		wantOK  bool
		wantErr bool
	}{
		{name: "absent"},
		{name: "full", content: `{"input_tokens": 10, "cache_tokens": 2, "output_tokens": 3, "cost_usd": 0.5, "extra": true}`,
			want: Usage{InputTokens: 10, CacheTokens: 2, OutputTokens: 3, CostUSD: 0.5, CostReported: true}, wantOK: true},
		{name: "partial", content: `{"output_tokens": 7}`, want: Usage{OutputTokens: 7}, wantOK: true},
		{name: "negative", content: `{"input_tokens": -1}`, wantErr: true},
		{name: "not json", content: `tokens: 3`, wantErr: true},
		{name: "wrong type", content: `{"cost_usd": "free"}`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.content != "" {
				if err := os.WriteFile(filepath.Join(dir, "usage.json"), []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, ok, err := ReadUsageJSON(dir)
			if (err != nil) != tc.wantErr || ok != tc.wantOK || got != tc.want {
				t.Errorf("ReadUsageJSON = %+v, %v, %v; want %+v, %v, error %v", got, ok, err, tc.want, tc.wantOK, tc.wantErr)
			}
		})
	}
}
