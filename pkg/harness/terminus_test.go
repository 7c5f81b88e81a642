package harness

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestTerminusParsers(t *testing.T) {
	h, ok := Lookup("terminus-2")
	if !ok {
		t.Fatal("no terminus-2 row")
	}
	cmd, err := h.RunCommand(RunTemplateData{ModelName: "gpt-5.2", InstructionFile: InstructionPath})
	if want := "/opt/gauntlet/bin/terminus-2 --model 'gpt-5.2' --instruction-file '/logs/agent/instruction.md' --logs-dir /logs/agent </dev/null"; err != nil || cmd != want {
		t.Errorf("RunCommand = %q, %v; want %q", cmd, err, want)
	}
	env, err := h.Environment(RunTemplateData{GatewayURL: "http://127.0.0.1:9"})
	if err != nil || env["TERMINUS_BASE_URL"] != "http://127.0.0.1:9/v1" || env["TERMINUS_WIRE_API"] != "chat-completions" {
		t.Errorf("Environment = %v, %v", env, err)
	}

	dir := t.TempDir()
	if _, err := h.Trajectory(LogSource{AgentLogDir: dir}); !errors.Is(err, ErrNoLog) {
		t.Errorf("Trajectory without a file = %v, want ErrNoLog", err)
	}
	doc := `{"schema_version":"ATIF-v1.7","session_id":"s","agent":{"name":"terminus-2","version":"2.0.0-gauntlet.1","model_name":"m"},
"steps":[{"step_id":1,"source":"user","message":"task"},
 {"step_id":2,"source":"agent","message":"{}","tool_calls":[{"tool_call_id":"call_1_1","function_name":"bash_command","arguments":{"keystrokes":"ls\n","duration":1}}],
  "observation":{"results":[{"source_call_id":"call_1_1","content":"New Terminal Output:\n$ ls"}]},"metrics":{"prompt_tokens":10,"completion_tokens":2,"cached_tokens":1},"extra":{"episode":1}}],
"final_metrics":{"total_prompt_tokens":10,"total_completion_tokens":2,"total_cached_tokens":1,"total_steps":2}}`
	if err := os.WriteFile(filepath.Join(dir, "trajectory.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := h.Trajectory(LogSource{AgentLogDir: dir})
	if err != nil || len(tr.Steps) != 2 || tr.Steps[1].ToolCalls[0].FunctionName != "bash_command" || tr.ModelCalls() != 1 {
		t.Errorf("Trajectory = %+v, %v", tr, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trajectory.json"), []byte(`{"schema_version":"ATIF-v1.7","steps":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Trajectory(LogSource{AgentLogDir: dir}); err == nil {
		t.Error("Trajectory accepted an invalid document")
	}

	if err := os.WriteFile(filepath.Join(dir, "usage.json"), []byte(`{"input_tokens":0,"outcome":"auth","error":"model call failed (auth, HTTP 401): bad key"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for code, want := range map[int]string{0: "", 1: "", 3: ModelErrorAuth, 4: ModelErrorUnavailable, 5: ""} {
		class, detail := h.ModelError(dir, code)
		if class != want || (want != "" && detail == "") {
			t.Errorf("ModelError(exit %d) = %q, %q; want class %q with a detail", code, class, detail, want)
		}
	}
}
