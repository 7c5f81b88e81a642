package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
)

// The fixtures in testdata/<harness>/ were recorded from the real pinned
// programs, run against a scripted model that answered two calls (a shell
// tool call writing /app/out.txt, then a final text) with 1,234 input
// tokens of which 1,000 cached, 56 output and (Responses API) 7 reasoning
// tokens each; Anthropic's shape sends 234 uncached + 1,000 cache reads.

// agentDir lays out a host copy of /logs/agent and the agent's home from
// the fixtures: stdout/stderr into the log dir, the native log where the
// program writes it.
func agentDir(t *testing.T, h string, files map[string]string) LogSource {
	t.Helper()
	src := LogSource{AgentLogDir: t.TempDir(), HomeDir: t.TempDir()}
	for from, to := range files {
		data, err := os.ReadFile(filepath.Join("testdata", h, from))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(src.AgentLogDir, to)
		if strings.HasPrefix(to, "~/") {
			dst = filepath.Join(src.HomeDir, strings.TrimPrefix(to, "~/"))
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

var nativeFixtures = map[string]map[string]string{
	"codex":       {"stdout.txt": StdoutFile, "rollout.jsonl": "~/.codex/sessions/2026/12/01/rollout-2026-12-01T18-59-43-x.jsonl"},
	"claude-code": {"stdout.txt": StdoutFile, "session.jsonl": "~/.claude/projects/-app/0787a4da.jsonl"},
	"gemini-cli":  {"stdout.txt": StdoutFile, "session.jsonl": "~/.gemini/tmp/app/chats/session-2026-12-01T19-00-297d5595.jsonl"},
	"opencode":    {"stdout.txt": StdoutFile},
	"copilot-cli": {"stdout.txt": StdoutFile, "events.jsonl": CopilotEventsFile},
	"cline":       {"stdout.txt": StdoutFile, "messages.json": "~/.cline/data/sessions/1796302078658_yjkfr/1796302078658_yjkfr.messages.json"},
	"qwen-code":   {"stdout.txt": StdoutFile, "session.jsonl": "~/.qwen/projects/-app/chats/858389f0-1559-49b4-8e6c-4dfa55bb8d50.jsonl"},
}

func TestProgramUsage(t *testing.T) {
	tests := []struct {
		harness string
		want    Usage
	}{
		{"codex", Usage{InputTokens: 2468, CacheTokens: 2000, OutputTokens: 112, ReasoningTokens: 14}},
		{"claude-code", Usage{InputTokens: 2468, CacheTokens: 2000, OutputTokens: 112, CostUSD: 0.0036839999999999998, CostReported: true}},
		{"gemini-cli", Usage{InputTokens: 2468, CacheTokens: 2000, OutputTokens: 112}},
		{"opencode", Usage{InputTokens: 2468, CacheTokens: 2000, OutputTokens: 112}},
		{"copilot-cli", Usage{InputTokens: 2468, CacheTokens: 2000, OutputTokens: 112, ReasoningTokens: 14}},
		{"cline", Usage{InputTokens: 2468, CacheTokens: 2000, OutputTokens: 112}},
		{"qwen-code", Usage{InputTokens: 2468, CacheTokens: 2000, OutputTokens: 112}},
	}
	for _, tc := range tests {
		t.Run(tc.harness, func(t *testing.T) {
			h, _ := Lookup(tc.harness)
			src := agentDir(t, tc.harness, nativeFixtures[tc.harness])
			got, ok, err := programUsage(h, src, 0)
			if err != nil || !ok {
				t.Fatalf("Usage = %+v, %v, %v", got, ok, err)
			}
			if got != tc.want {
				t.Errorf("Usage = %+v, want %+v", got, tc.want)
			}
			// No stdout: nothing reported, no error.
			if _, ok, err := programUsage(h, LogSource{AgentLogDir: t.TempDir(), HomeDir: t.TempDir()}, 0); ok || err != nil {
				t.Errorf("Usage(empty dir) = %v, %v; want not reported", ok, err)
			}
		})
	}
}

func TestProgramTrajectory(t *testing.T) {
	for _, name := range []string{"codex", "claude-code", "gemini-cli", "opencode", "copilot-cli", "cline", "qwen-code"} {
		t.Run(name, func(t *testing.T) {
			h, _ := Lookup(name)
			src := agentDir(t, name, nativeFixtures[name])
			if err := os.WriteFile(filepath.Join(src.AgentLogDir, "instruction.md"), []byte("Write hello to /app/out.txt"), 0o644); err != nil {
				t.Fatal(err)
			}
			tr, err := programTrajectory(h, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			tr.SchemaVersion, tr.Agent = atif.SchemaVersion, atif.Agent{Name: h.Name, Version: h.Version, ModelName: "mock-model"}
			tr.Total()
			if err := atif.Validate(tr); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := tr.ModelCalls(); got != 2 {
				t.Errorf("ModelCalls = %d, want 2 (the scripted conversation)", got)
			}
			fm := tr.FinalMetrics
			if fm.TotalPromptTokens != 2468 || fm.TotalCachedTokens != 2000 || fm.TotalCompletionTokens != 112 {
				t.Errorf("final metrics = %+v, want 2468 prompt (2000 cached), 112 completion", *fm)
			}
			var calls []atif.ToolCall
			var results []atif.Result
			sawUser := false
			for _, s := range tr.Steps {
				for _, c := range s.ToolCalls {
					// cline's final answer is a call of its submit_and_exit.
					if c.FunctionName != "submit_and_exit" {
						calls = append(calls, c)
					}
				}
				if s.Observation != nil {
					results = append(results, s.Observation.Results...)
				}
				sawUser = sawUser || (s.Source == atif.SourceUser && strings.Contains(s.Message, "Write hello"))
			}
			if len(calls) != 1 {
				t.Fatalf("tool calls = %+v, want the one shell call", calls)
			}
			var args map[string]any
			if err := json.Unmarshal(calls[0].Arguments, &args); err != nil {
				t.Fatal(err)
			}
			cmdArg := args["command"]
			if cmdArg == nil {
				cmdArg = args["cmd"]
			}
			if l, ok := args["commands"].([]any); ok && len(l) == 1 { // cline's run_commands
				cmdArg = l[0]
			}
			if cmdArg != "echo hello > /app/out.txt" {
				t.Errorf("tool call arguments = %s, want the scripted command", calls[0].Arguments)
			}
			// The shell's output (copilot-cli's a note of the exit code alone
			// when the command printed nothing), attached to its call.
			if len(results) == 0 || results[0].SourceCallID != calls[0].ToolCallID || strings.TrimSpace(results[0].Content) == "" {
				t.Errorf("observations = %+v, want the shell's output", results)
			}
			if !sawUser {
				t.Error("no user step holds the instruction")
			}
			last := tr.Steps[len(tr.Steps)-1]
			if last.Source != atif.SourceAgent || finalAnswer(last) != "Done: wrote hello to out.txt." {
				t.Errorf("last step = %+v, want the agent's final answer", last)
			}
			if tr.SessionID == "" {
				t.Error("no session id")
			}
		})
	}
}

// finalAnswer is an agent step's text, or the summary it submitted through
// cline's submit_and_exit.
func finalAnswer(s atif.Step) string {
	for _, c := range s.ToolCalls {
		var a struct {
			Summary string `json:"summary"`
		}
		if c.FunctionName == "submit_and_exit" && json.Unmarshal(c.Arguments, &a) == nil {
			return a.Summary
		}
	}
	return s.Message
}

func TestProgramTrajectoryWithoutLog(t *testing.T) {
	for _, h := range All() {
		if h.Trajectory == nil && h.Session == nil {
			continue
		}
		if _, err := programTrajectory(h, LogSource{AgentLogDir: t.TempDir(), HomeDir: t.TempDir()}, 0); err == nil {
			t.Errorf("%s: Trajectory of no log succeeded", h.Name)
		}
	}
}

func TestProgramModelError(t *testing.T) {
	tests := []struct {
		harness   string
		files     map[string]string
		exitCode  int
		wantClass string
	}{
		{"codex", map[string]string{"stdout-401.txt": StdoutFile}, 1, ModelErrorAuth},
		{"codex", map[string]string{"stdout-429.txt": StdoutFile}, 1, ModelErrorUnavailable},
		{"codex", map[string]string{"stdout.txt": StdoutFile}, 0, ""},
		{"claude-code", map[string]string{"stdout-401.txt": StdoutFile}, 1, ModelErrorAuth},
		{"claude-code", map[string]string{"stdout.txt": StdoutFile}, 0, ""},
		{"gemini-cli", map[string]string{"stderr-401.txt": "stderr.txt"}, 145, ModelErrorAuth},
		{"gemini-cli", map[string]string{}, 173, ModelErrorUnavailable}, // 429 mod 256, no stderr
		{"gemini-cli", map[string]string{}, 1, ""},
		{"opencode", map[string]string{"stdout-401.txt": StdoutFile}, 1, ModelErrorAuth},
		{"opencode", map[string]string{"stdout.txt": StdoutFile}, 0, ""},
		{"copilot-cli", map[string]string{"stdout-401.txt": StdoutFile}, 1, ModelErrorAuth},
		{"copilot-cli", map[string]string{"stdout.txt": StdoutFile}, 0, ""},
		{"cline", map[string]string{"stdout-401.txt": StdoutFile}, 1, ModelErrorAuth},
		{"cline", map[string]string{"stdout.txt": StdoutFile}, 0, ""},
		{"qwen-code", map[string]string{"stdout-401.txt": StdoutFile}, 1, ModelErrorAuth},
		{"qwen-code", map[string]string{"stdout.txt": StdoutFile}, 0, ""},
	}
	for _, tc := range tests {
		h, _ := Lookup(tc.harness)
		src := agentDir(t, tc.harness, tc.files)
		class, detail := programModelError(h, src, tc.exitCode, 0)
		if class != tc.wantClass {
			t.Errorf("%s ModelError(%v, exit %d) = %q (%s), want %q", tc.harness, slices.Collect(func(yield func(string) bool) {
				for k := range tc.files {
					if !yield(k) {
						return
					}
				}
			}), tc.exitCode, class, detail, tc.wantClass)
		}
	}
}

func TestBundledRowsRenderTheirConfig(t *testing.T) {
	data := RunTemplateData{Model: "openai/gpt-5.2", ModelName: "gpt-5.2", InstructionFile: InstructionPath,
		BundleDir: BundleMount, Home: "/tmp", GatewayURL: "http://127.0.0.1:4000"}
	for _, h := range All() {
		if h.Bundle == nil {
			// A platform binary (terminus-2) is mounted with the runner, not bundled.
			if h.WireAPI != "" && !strings.HasPrefix(h.Run, StaticBinDir+"/") {
				t.Errorf("%s speaks %s but has no bundle", h.Name, h.WireAPI)
			}
			continue
		}
		d := data
		d.KeyEnv = h.KeyEnv
		reads := (h.Output != nil || h.Usage != nil && h.ModelError != nil) && (h.Session != nil || h.Trajectory != nil)
		if h.KeyEnv == "" || h.WireAPI == "" || !reads || len(h.NativeLogs) == 0 {
			t.Errorf("%s: a bundled program needs KeyEnv, WireAPI, Output (or Usage and ModelError), Session (or Trajectory) and NativeLogs", h.Name)
		}
		cmd, err := h.RunCommand(d)
		prefix := BundleMount + "/" + h.Bundle.Program
		if h.Bundle.Glibc {
			// The program's loader is reached through the runtime's fd.
			prefix = "exec " + RuntimeFD + "<" + BundleMount + "/" + RuntimeLib + " && " + prefix
		}
		if err != nil || !strings.HasPrefix(cmd, prefix) || !strings.Contains(cmd, "</dev/null") {
			t.Errorf("%s run = %q, %v; want %s… with stdin closed", h.Name, cmd, err, prefix)
		}
		if !slices.Contains(h.Bundle.Path, RuntimePath) {
			t.Errorf("%s: its bundle's Path lacks %s, the runtime's bash", h.Name, RuntimePath)
		}
		env, err := h.Environment(d)
		if err != nil {
			t.Fatalf("%s env: %v", h.Name, err)
		}
		files, err := h.HomeFiles(d)
		if err != nil {
			t.Fatalf("%s files: %v", h.Name, err)
		}
		var all strings.Builder
		for _, v := range env {
			all.WriteString(v)
		}
		for _, v := range files {
			all.Write(v)
		}
		if !strings.Contains(all.String(), "http://127.0.0.1:4000") {
			t.Errorf("%s: the gateway URL reaches neither its env nor its files", h.Name)
		}
		for path, content := range files {
			if strings.HasSuffix(path, ".json") && !json.Valid(content) {
				t.Errorf("%s: %s is not JSON:\n%s", h.Name, path, content)
			}
		}
		if c, ok := env["OPENCODE_CONFIG_CONTENT"]; ok {
			var cfg struct {
				Provider map[string]struct {
					NPM     string            `json:"npm"`
					Options map[string]string `json:"options"`
				} `json:"provider"`
			}
			if err := json.Unmarshal([]byte(c), &cfg); err != nil {
				t.Fatalf("OPENCODE_CONFIG_CONTENT: %v\n%s", err, c)
			}
			want := map[string]string{"baseURL": "http://127.0.0.1:4000/v1", "apiKey": "{env:" + h.KeyEnv + "}"}
			if diff := cmp.Diff(want, cfg.Provider["gauntlet"].Options); diff != "" {
				t.Errorf("opencode provider options (-want +got):\n%s", diff)
			}
		}
	}
}

func TestAvailable(t *testing.T) {
	here := Platform{}
	for _, name := range []string{"mini-swe-agent", "openhands", "cursor-cli"} {
		h, _ := Lookup(name)
		err := h.Available(here)
		if err == nil || !strings.Contains(err.Error(), name+" needs a network install, which this platform does not allow") {
			t.Errorf("%s.Available(no network installs) = %v", name, err)
		}
		if err := h.Available(Platform{NetworkInstalls: true}); err != nil {
			t.Errorf("%s.Available(network installs) = %v", name, err)
		}
	}
	got := Runnable(All(), here)
	want := []string{"claude-code", "cline", "codex", "command", "copilot-cli", "gemini-cli", "nop", "opencode", "oracle", "qwen-code", "terminus-2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Runnable (-want +got):\n%s", diff)
	}
}

// TestStaticBinary: terminus-2 runs the platform's static binary, which the
// runner checks for before the agent starts; the other rows run none.
func TestStaticBinary(t *testing.T) {
	for _, h := range All() {
		want := ""
		if h.Name == "terminus-2" {
			want = StaticBinDir + "/terminus-2"
		}
		if got := h.StaticBinary(); got != want {
			t.Errorf("%s.StaticBinary() = %q, want %q", h.Name, got, want)
		}
	}
}
