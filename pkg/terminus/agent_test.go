package terminus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/atif"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/terminus/llm"
	"github.com/gauntlet-bench/gauntlet/pkg/terminus/terminal"
)

// scriptedModel is a Chat Completions server on loopback that answers
// each call with the next scripted reply, in arrival order, and records the
// requests. modelmock picks its answer by the number of assistant turns a
// request holds, which the handoff's fresh context resets; the tests of
// the handoff and of call-by-call failures need answers in call order.
type scriptedModel struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []scriptedReply
	calls   []chatCall
}

type scriptedReply struct {
	status  int // 0 = 200
	content string
	prompt  int64 // usage reported
	output  int64
	cached  int64
}

type chatCall struct {
	Messages []llm.Message
}

func newScriptedModel(t *testing.T, replies ...scriptedReply) *scriptedModel {
	m := &scriptedModel{t: t, replies: replies}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *scriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model    string        `json:"model"`
		Messages []llm.Message `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.calls = append(m.calls, chatCall{Messages: req.Messages})
	if len(m.replies) == 0 {
		m.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"message":"the script has no more replies"}}`)
		return
	}
	rep := m.replies[0]
	m.replies = m.replies[1:]
	m.mu.Unlock()
	if rep.status != 0 {
		w.WriteHeader(rep.status)
		_, _ = io.WriteString(w, rep.content)
		return
	}
	body, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": rep.content}}},
		"usage": map[string]any{"prompt_tokens": rep.prompt, "completion_tokens": rep.output,
			"total_tokens": rep.prompt + rep.output, "prompt_tokens_details": map[string]any{"cached_tokens": rep.cached}},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (m *scriptedModel) recorded() []chatCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]chatCall(nil), m.calls...)
}

// answer builds a JSON reply in terminus-2's format.
func answer(taskComplete bool, keystrokes ...string) string {
	cmds := make([]map[string]any, len(keystrokes))
	for i, k := range keystrokes {
		cmds[i] = map[string]any{"keystrokes": k, "duration": 30}
	}
	b, _ := json.Marshal(map[string]any{"analysis": "looking", "plan": "type", "commands": cmds, "task_complete": taskComplete})
	return string(b)
}

func lastUser(c chatCall) string { return c.Messages[len(c.Messages)-1].Content }

// readTrajectory reads and validates the trajectory in dir.
func readTrajectory(t *testing.T, dir string) atif.Trajectory {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, TrajectoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := atif.ValidateJSON(data); err != nil {
		t.Fatalf("trajectory.json is not valid ATIF: %v\n%s", err, data)
	}
	var tr atif.Trajectory
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatal(err)
	}
	if err := atif.Validate(tr); err != nil {
		t.Fatalf("trajectory.json is not valid ATIF: %v", err)
	}
	return tr
}

func readUsage(t *testing.T, dir string) UsageReport {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, UsageFile))
	if err != nil {
		t.Fatal(err)
	}
	var u UsageReport
	if err := json.Unmarshal(data, &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestMainSolvesTask runs the whole program against modelmock (the
// platform's scripted model server) in a real terminal, over both wire
// APIs: it writes a file, answers once with broken JSON, claims completion,
// is asked to confirm, confirms.
func TestMainSolvesTask(t *testing.T) {
	for _, tc := range []struct{ api, terminal string }{
		{llm.ChatCompletions, "pty"}, {llm.AnthropicMessages, "pty"}, {llm.ChatCompletions, "tmux"},
	} {
		t.Run(tc.api+"/"+tc.terminal, func(t *testing.T) { testMainSolvesTask(t, tc.api, tc.terminal) })
	}
}

func testMainSolvesTask(t *testing.T, api, term string) {
	turn := func(text string, input, cached, output int) modelmock.Turn {
		return modelmock.Turn{Text: text, Usage: &modelmock.Usage{Input: input, Cached: cached, Output: output}}
	}
	mock := modelmock.NewServer(modelmock.Script{APIKey: "tok-123", Turns: []modelmock.Turn{
		turn(answer(false, "printf 'hello world\\n' > greeting.txt\n", "echo \"key=[$TERMINUS_API_KEY]\" > env.txt\n"), 1200, 0, 80),
		turn("I believe the file is written now.", 1500, 1000, 10),
		turn("Sure, here it is:\n"+answer(true, "cat greeting.txt\n"), 1700, 1400, 60),
		turn(answer(true), 1900, 1600, 30),
	}})
	t.Cleanup(mock.Close)
	baseURL := mock.URL
	if api == llm.ChatCompletions {
		baseURL += "/v1"
	}
	work, logs := t.TempDir(), t.TempDir()
	t.Chdir(work)
	instr := filepath.Join(logs, "instruction.md")
	if err := os.WriteFile(instr, []byte("Create greeting.txt containing the line 'hello world'."), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "PS1=$ ",
		EnvBaseURL + "=" + baseURL, EnvWireAPI + "=" + api, EnvAPIKey + "=tok-123", "GAUNTLET_MODEL=scripted-1"}
	code := Main([]string{"--instruction-file", instr, "--logs-dir", logs, "--terminal", term}, env, &stderr)
	if code != 0 {
		t.Fatalf("Main = %d, want 0; stderr:\n%s", code, stderr.String())
	}

	if got, err := os.ReadFile(filepath.Join(work, "greeting.txt")); err != nil || string(got) != "hello world\n" {
		t.Errorf("greeting.txt = %q, %v; want %q", got, err, "hello world\n")
	}
	if got, _ := os.ReadFile(filepath.Join(work, "env.txt")); string(got) != "key=[]\n" {
		t.Errorf("the terminal saw the model token: env.txt = %q", got)
	}
	var calls [][]llm.Message
	for _, r := range mock.Requests() {
		var body struct {
			Messages []llm.Message `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || r.Status != http.StatusOK {
			t.Fatalf("request %s answered %d: %v", r.Path, r.Status, err)
		}
		calls = append(calls, body.Messages)
	}
	if len(calls) != 4 {
		t.Fatalf("model calls = %d, want 4", len(calls))
	}
	last := func(i int) string { return calls[i][len(calls[i])-1].Content }
	if len(calls[0]) != 1 || calls[0][0].Role != "user" {
		t.Fatalf("first call = %+v; want one user message (no system message)", calls[0])
	}
	first := calls[0][0].Content
	if strings.Contains(first, "(the screen is empty)") {
		t.Errorf("the first prompt shows no shell prompt:\n%s", first)
	}
	for _, want := range []string{"Create greeting.txt", `"task_complete"`, "# The terminal now"} {
		if !strings.Contains(first, want) {
			t.Errorf("first prompt lacks %q:\n%s", want, first)
		}
	}
	if got := last(1); !strings.HasPrefix(got, newOutputHeading) || !strings.Contains(got, "greeting.txt") {
		t.Errorf("second prompt is not the new output:\n%s", got)
	}
	if got := last(2); !strings.Contains(got, "ERROR: no JSON object found") {
		t.Errorf("third prompt does not report the parse error:\n%s", got)
	}
	confirm := last(3)
	for _, want := range []string{"WARNING: text before the JSON object was ignored", "\nhello world\n", "You said the task is complete"} {
		if !strings.Contains(confirm, want) {
			t.Errorf("confirmation prompt lacks %q:\n%s", want, confirm)
		}
	}
	if len(calls[3]) != 7 {
		t.Errorf("fourth call carries %d messages, want the whole conversation (7)", len(calls[3]))
	}

	tr := readTrajectory(t, logs)
	if tr.Agent.Name != "terminus-2" || tr.Agent.Version != Version || tr.Agent.ModelName != "scripted-1" {
		t.Errorf("agent = %+v", tr.Agent)
	}
	if len(tr.Steps) != 5 || tr.Steps[0].Source != atif.SourceUser {
		t.Fatalf("steps = %d (first %q), want the prompt and 4 agent steps", len(tr.Steps), tr.Steps[0].Source)
	}
	bash := tr.Steps[1].ToolCalls
	var args Command
	if len(bash) == 2 {
		_ = json.Unmarshal(bash[0].Arguments, &args)
	}
	if len(bash) != 2 || bash[0].FunctionName != ToolBashCommand || args != (Command{Keystrokes: "printf 'hello world\\n' > greeting.txt\n", Duration: 30}) {
		t.Errorf("step 2 tool calls = %+v", bash)
	}
	if tc := tr.Steps[2].ToolCalls; len(tc) != 0 {
		t.Errorf("the unparsable step has tool calls %+v", tc)
	}
	for _, i := range []int{3, 4} {
		tc := tr.Steps[i].ToolCalls
		if len(tc) == 0 || tc[len(tc)-1].FunctionName != ToolMarkTaskComplete {
			t.Errorf("step %d tool calls = %+v, want mark_task_complete last", i+1, tc)
		}
	}
	fm := tr.FinalMetrics
	if fm == nil || fm.TotalPromptTokens != 6300 || fm.TotalCompletionTokens != 180 || fm.TotalCachedTokens != 4000 || fm.TotalSteps != 5 {
		t.Errorf("final metrics = %+v, want 6300 prompt, 180 completion, 4000 cached, 5 steps", fm)
	}
	u := readUsage(t, logs)
	if u.InputTokens != 6300 || u.OutputTokens != 180 || u.CacheTokens != 4000 || u.ModelCalls != 4 || u.Outcome != string(Completed) || u.Episodes != 4 {
		t.Errorf("usage.json = %+v", u)
	}
}

// runAgent runs Run in a real terminal in a temp dir against model.
func runAgent(t *testing.T, model *scriptedModel, cfg Config) (Result, string) {
	t.Helper()
	client, err := llm.New(llm.Config{API: llm.ChatCompletions, BaseURL: model.srv.URL + "/v1", Model: "scripted-1", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	cfg.LogDir = t.TempDir()
	cfg.Model = "scripted-1"
	if cfg.Instruction == "" {
		cfg.Instruction = "Do the task."
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := Run(ctx, cfg, client, func() (Term, error) {
		return terminal.Start(terminal.Options{Shell: []string{"bash", "--norc", "--noprofile", "-i"}, Dir: work,
			Env: []string{"PATH=/usr/bin:/bin", "PS1=$ ", "HOME=" + work}})
	})
	return res, cfg.LogDir
}

func TestOutputIsCapped(t *testing.T) {
	model := newScriptedModel(t,
		scriptedReply{content: answer(false, "seq 100000 105000\n"), prompt: 100, output: 10},
		scriptedReply{content: answer(true), prompt: 100, output: 10},
		scriptedReply{content: answer(true), prompt: 100, output: 10},
	)
	res, _ := runAgent(t, model, Config{})
	if res.Outcome != Completed {
		t.Fatalf("outcome = %s (%v), want completed", res.Outcome, res.Err)
	}
	got := lastUser(model.recorded()[1])
	body := strings.TrimPrefix(got, newOutputHeading+"\n")
	if !strings.Contains(body, "bytes of output omitted") {
		t.Fatalf("the 35 kB output was not cut:\n%.300s", got)
	}
	note := body[strings.Index(body, "\n[..."):]
	note = note[:strings.Index(note, "]\n")+2]
	if n := len(body) - len(note); n > MaxOutputBytes {
		t.Errorf("observation keeps %d bytes of output, want ≤ %d", n, MaxOutputBytes)
	}
	// The head starts with the command line; the tail ends with the last
	// number and the prompt.
	if !strings.HasPrefix(body, "$ seq 100000 105000\n100000\n") || !strings.HasSuffix(body, "104999\n105000\n$") {
		t.Errorf("head or tail missing:\n%.200s\n…\n%s", body, body[len(body)-200:])
	}
}

func TestEpisodeLimit(t *testing.T) {
	model := newScriptedModel(t,
		scriptedReply{content: answer(false, "true\n"), prompt: 100, output: 10},
		scriptedReply{content: answer(true, "true\n"), prompt: 100, output: 10},
		scriptedReply{content: answer(true), prompt: 100, output: 10},
	)
	res, logs := runAgent(t, model, Config{MaxEpisodes: 2})
	if res.Outcome != EpisodeLimit || res.Outcome.ExitCode() != 5 || res.Episodes != 2 {
		t.Fatalf("Run = %s after %d episodes (%v), want episode_limit after 2", res.Outcome, res.Episodes, res.Err)
	}
	if n := len(model.recorded()); n != 2 {
		t.Errorf("model calls = %d, want 2", n)
	}
	tr := readTrajectory(t, logs)
	if len(tr.Steps) != 3 {
		t.Errorf("steps = %d, want 3", len(tr.Steps))
	}
	if u := readUsage(t, logs); u.Outcome != string(EpisodeLimit) || u.ModelCalls != 2 {
		t.Errorf("usage = %+v", u)
	}
}

func TestModelErrors(t *testing.T) {
	tests := []struct {
		status int
		want   Outcome
		code   int
	}{
		{401, AuthError, 3},
		{503, ModelUnavailable, 4},
		{404, ModelRejected, 6},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			model := newScriptedModel(t, scriptedReply{status: tc.status, content: `{"error":{"message":"no"}}`})
			res, logs := runAgent(t, model, Config{})
			if res.Outcome != tc.want || res.Outcome.ExitCode() != tc.code {
				t.Fatalf("Run = %s (%v), want %s (exit %d)", res.Outcome, res.Err, tc.want, tc.code)
			}
			tr := readTrajectory(t, logs)
			if len(tr.Steps) != 1 {
				t.Errorf("steps = %d, want the prompt only", len(tr.Steps))
			}
			if u := readUsage(t, logs); u.Outcome != string(tc.want) || u.Error == "" {
				t.Errorf("usage = %+v", u)
			}
		})
	}
}

// TestSummarisation sets a small context: once the reported usage leaves
// fewer than MinFreeTokens free, the next turn starts with the three
// handoff calls and continues in the fresh context.
func TestSummarisation(t *testing.T) {
	model := newScriptedModel(t,
		scriptedReply{content: answer(false, "echo one > one.txt\n"), prompt: 300, output: 20},
		scriptedReply{content: answer(false, "echo two\n"), prompt: 2500, output: 40},
		scriptedReply{content: "SUMMARY: wrote one.txt, echoed two.", prompt: 1700, output: 50},
		scriptedReply{content: "1. Is one.txt complete?\n2. What next?", prompt: 900, output: 30},
		scriptedReply{content: "ANSWERS: yes; nothing.", prompt: 1800, output: 40},
		scriptedReply{content: answer(true), prompt: 1200, output: 20},
		scriptedReply{content: answer(true), prompt: 1300, output: 20},
	)
	res, logs := runAgent(t, model, Config{ContextTokens: 10000, Instruction: "Write one.txt."})
	if res.Outcome != Completed {
		t.Fatalf("outcome = %s (%v), want completed", res.Outcome, res.Err)
	}
	calls := model.recorded()
	if len(calls) != 7 {
		t.Fatalf("model calls = %d, want 7", len(calls))
	}
	if got := lastUser(calls[2]); got != summaryPrompt || len(calls[2].Messages) != 5 {
		t.Errorf("call 3 = %d messages ending %q, want the conversation plus the summary request", len(calls[2].Messages), got)
	}
	q := calls[3].Messages
	if len(q) != 1 || !strings.Contains(q[0].Content, "SUMMARY: wrote one.txt") || !strings.Contains(q[0].Content, "Write one.txt.") {
		t.Errorf("call 4 (questions) = %+v, want one fresh message with the task and the summary", q)
	}
	if got := lastUser(calls[4]); !strings.Contains(got, "1. Is one.txt complete?") || len(calls[4].Messages) != 7 {
		t.Errorf("call 5 (answers) = %d messages ending %q", len(calls[4].Messages), got)
	}
	resume := calls[5].Messages
	if len(resume) != 3 || resume[0].Content != q[0].Content || !strings.Contains(resume[2].Content, "ANSWERS: yes") ||
		!strings.Contains(resume[2].Content, newOutputHeading) {
		t.Errorf("call 6 = %+v, want the fresh context: questions prompt, questions, answers with the pending output", resume)
	}
	tr := readTrajectory(t, logs)
	parts := []string{}
	for _, s := range tr.Steps {
		if p, ok := s.Extra["part"]; ok {
			parts = append(parts, fmt.Sprint(p))
		}
	}
	if strings.Join(parts, ",") != "summary,questions,answers" {
		t.Errorf("summarisation steps = %v", parts)
	}
	if len(tr.Steps) != 8 || tr.FinalMetrics.TotalPromptTokens != 9700 {
		t.Errorf("steps = %d, prompt tokens = %d; want 8 and 9700", len(tr.Steps), tr.FinalMetrics.TotalPromptTokens)
	}
	if u := readUsage(t, logs); u.Summaries != 1 || u.ModelCalls != 7 {
		t.Errorf("usage = %+v", u)
	}
}

func TestExitedShellIsReplaced(t *testing.T) {
	model := newScriptedModel(t,
		scriptedReply{content: answer(false, "exit\n"), prompt: 100, output: 10},
		scriptedReply{content: answer(false, "echo alive\n"), prompt: 100, output: 10},
		scriptedReply{content: answer(true), prompt: 100, output: 10},
		scriptedReply{content: answer(true), prompt: 100, output: 10},
	)
	res, _ := runAgent(t, model, Config{})
	if res.Outcome != Completed {
		t.Fatalf("outcome = %s (%v), want completed", res.Outcome, res.Err)
	}
	calls := model.recorded()
	if got := lastUser(calls[1]); !strings.Contains(got, "The shell exited, so a new terminal was started") {
		t.Errorf("second prompt does not say the shell was replaced:\n%s", got)
	}
	if got := lastUser(calls[2]); !strings.Contains(got, "\nalive\n") {
		t.Errorf("the new shell did not run the next command:\n%s", got)
	}
}
