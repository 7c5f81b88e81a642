package modelmock_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/internal/fixtures"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
)

// fixture is one recorded request of a real agent program.
type fixture struct {
	Path     string          `json:"path"`
	Body     json.RawMessage `json:"body"`
	Response map[string]any  `json:"response"`
}

func loadFixture(t *testing.T, name string) fixture {
	t.Helper()
	p, err := fixtures.Path("agent-wire/" + name)
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return f
}

func post(t *testing.T, url string, body []byte, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// events splits an SSE body into its data payloads, decoded; "[DONE]" is
// kept as the string.
func events(t *testing.T, body []byte) []any {
	t.Helper()
	var out []any
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			out = append(out, data)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, v)
	}
	return out
}

func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// TestRealRequests replays each program's recorded requests and checks the
// mock answers the way the recording says it answered: the same kind of
// reply, the shell call with the program's own tool and argument names, and
// the usage in the API's own fields.
func TestRealRequests(t *testing.T) {
	srv := modelmock.NewServer(modelmock.DefaultScript())
	defer srv.Close()

	cases := []struct {
		file  string
		check func(t *testing.T, evs []any)
	}{
		{"codex/0003-ok-POST.json", func(t *testing.T, evs []any) {
			last := evs[len(evs)-1]
			if get(last, "type") != "response.completed" {
				t.Fatalf("last event %v, want response.completed", get(last, "type"))
			}
			item := get(last, "response", "output", 0)
			if get(item, "name") != "exec_command" || get(item, "arguments") != `{"cmd":"echo hello > /app/out.txt"}` {
				t.Errorf("tool call = %v", item)
			}
			u := get(last, "response", "usage")
			if num(get(u, "input_tokens")) != 1234 || num(get(u, "input_tokens_details", "cached_tokens")) != 1000 ||
				num(get(u, "output_tokens")) != 56 || num(get(u, "output_tokens_details", "reasoning_tokens")) != 7 {
				t.Errorf("usage = %v", u)
			}
		}},
		{"codex/0004-ok-POST.json", func(t *testing.T, evs []any) {
			item := get(evs[len(evs)-1], "response", "output", 0)
			if get(item, "type") != "message" || get(item, "content", 0, "text") != "Done: wrote hello to out.txt." {
				t.Errorf("final item = %v", item)
			}
		}},
		{"claude/0035-ok-POST.json", func(t *testing.T, evs []any) {
			start := get(evs[1], "content_block")
			if get(start, "type") != "tool_use" || get(start, "name") != "Bash" {
				t.Fatalf("content_block_start = %v", start)
			}
			var in map[string]any
			if err := json.Unmarshal([]byte(get(evs[2], "delta", "partial_json").(string)), &in); err != nil {
				t.Fatal(err)
			}
			if in["command"] != "echo hello > /app/out.txt" || in["description"] == nil {
				t.Errorf("input = %v", in)
			}
			if u := get(evs[0], "message", "usage"); num(get(u, "input_tokens")) != 234 || num(get(u, "cache_read_input_tokens")) != 1000 {
				t.Errorf("message_start usage = %v", u)
			}
			if d := evs[len(evs)-2]; get(d, "delta", "stop_reason") != "tool_use" || num(get(d, "usage", "output_tokens")) != 56 {
				t.Errorf("message_delta = %v", d)
			}
			if get(evs[len(evs)-1], "type") != "message_stop" {
				t.Errorf("last event = %v", evs[len(evs)-1])
			}
		}},
		{"claude/0036-ok-POST.json", func(t *testing.T, evs []any) {
			if get(evs[2], "delta", "text") != "Done: wrote hello to out.txt." {
				t.Errorf("text delta = %v", evs[2])
			}
		}},
		{"gemini/0064-ok-POST.json", func(t *testing.T, evs []any) {
			c := evs[len(evs)-1]
			fc := get(c, "candidates", 0, "content", "parts", 0, "functionCall")
			if get(fc, "name") != "run_shell_command" || get(fc, "args", "command") != "echo hello > /app/out.txt" {
				t.Errorf("functionCall = %v", fc)
			}
			u := get(c, "usageMetadata")
			if num(get(u, "promptTokenCount")) != 1234 || num(get(u, "cachedContentTokenCount")) != 1000 ||
				num(get(u, "candidatesTokenCount")) != 49 || num(get(u, "thoughtsTokenCount")) != 7 {
				t.Errorf("usageMetadata = %v", u)
			}
		}},
		{"gemini/0065-ok-POST.json", func(t *testing.T, evs []any) {
			if got := get(evs[0], "candidates", 0, "content", "parts", 0, "text"); got != "Done: wrote hello to out.txt." {
				t.Errorf("text = %v", got)
			}
		}},
		{"opencode/0071-ok-POST.json", func(t *testing.T, evs []any) {
			var text string
			for _, e := range evs {
				if s, ok := get(e, "choices", 0, "delta", "content").(string); ok {
					text += s
				}
			}
			if text != "Mock title" {
				t.Errorf("title text = %q", text)
			}
		}},
		{"opencode/0072-ok-POST.json", func(t *testing.T, evs []any) {
			tc := get(evs[0], "choices", 0, "delta", "tool_calls", 0)
			if get(tc, "function", "name") != "bash" {
				t.Errorf("tool call = %v", tc)
			}
			if args := get(evs[1], "choices", 0, "delta", "tool_calls", 0, "function", "arguments"); !strings.Contains(args.(string), `"command":"echo hello > /app/out.txt"`) {
				t.Errorf("arguments = %v", args)
			}
			if evs[len(evs)-1] != "[DONE]" {
				t.Errorf("last event = %v, want [DONE]", evs[len(evs)-1])
			}
			u := get(evs[len(evs)-2], "usage")
			if num(get(u, "prompt_tokens")) != 1234 || num(get(u, "prompt_tokens_details", "cached_tokens")) != 1000 || num(get(u, "completion_tokens")) != 56 {
				t.Errorf("usage chunk = %v", u)
			}
		}},
		{"opencode/0073-ok-POST.json", func(t *testing.T, evs []any) {
			if get(evs[len(evs)-3], "choices", 0, "finish_reason") != "stop" {
				t.Errorf("finish chunk = %v", evs[len(evs)-3])
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f := loadFixture(t, c.file)
			resp, body := post(t, srv.URL+f.Path, f.Body, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type = %q", ct)
			}
			c.check(t, events(t, body))
		})
	}
	if got := len(srv.Requests()); got != len(cases) {
		t.Errorf("recorded %d requests, want %d", got, len(cases))
	}
}

func TestNonStreaming(t *testing.T) {
	s := modelmock.DefaultScript()
	s.NoToolsText = ""
	srv := modelmock.NewServer(s)
	defer srv.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]}`
	resp, b := post(t, srv.URL+"/v1/chat/completions", []byte(body), nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if get(v, "choices", 0, "message", "tool_calls", 0, "function", "name") != "bash" || num(get(v, "usage", "prompt_tokens")) != 1234 {
		t.Errorf("answer = %s", b)
	}
	resp, b = post(t, srv.URL+"/v1beta/models/gemini-2.5-pro:generateContent", []byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"x"}]}]}`), nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"Done: wrote hello to out.txt."`) || !strings.Contains(string(b), `"modelVersion":"gemini-2.5-pro"`) {
		t.Errorf("gemini answer %d %s", resp.StatusCode, b)
	}
}

func TestFailures(t *testing.T) {
	body := []byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	for _, status := range []int{401, 429, 500} {
		s := modelmock.DefaultScript()
		s.Failure = &modelmock.Failure{Status: status, Times: 1}
		srv := modelmock.NewServer(s)
		resp, b := post(t, srv.URL+"/v1/messages?beta=true", body, nil)
		if resp.StatusCode != status || !strings.Contains(string(b), `"type":"error"`) {
			t.Errorf("status %d: got %d %s", status, resp.StatusCode, b)
		}
		if resp, _ := post(t, srv.URL+"/v1/messages", body, nil); resp.StatusCode != 200 {
			t.Errorf("after times=1 failure: status %d, want 200", resp.StatusCode)
		}
		srv.Close()
	}

	s := modelmock.DefaultScript()
	s.APIKey = "sk-right"
	srv := modelmock.NewServer(s)
	defer srv.Close()
	if resp, _ := post(t, srv.URL+"/v1/messages", body, map[string]string{"x-api-key": "sk-wrong"}); resp.StatusCode != 401 {
		t.Errorf("wrong key: status %d, want 401", resp.StatusCode)
	}
	if resp, _ := post(t, srv.URL+"/v1/messages", body, map[string]string{"x-api-key": "sk-right"}); resp.StatusCode != 200 {
		t.Errorf("right key: status %d, want 200", resp.StatusCode)
	}

	if err := srv.SetFailure(&modelmock.Failure{Hang: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("x-api-key", "sk-right")
	_, err := http.DefaultClient.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hanging endpoint: err = %v, want the client's deadline", err)
	}
}

func TestParseScript(t *testing.T) {
	for _, c := range []struct{ name, in, wantErr string }{
		{"ok", `{"turns":[{"text":"hi"}]}`, ""},
		{"unknown field", `{"turns":[{"text":"hi"}],"nope":1}`, "unknown field"},
		{"two kinds", `{"turns":[{"text":"hi","shell":{"command":"ls"}}]}`, "turns[0]: give exactly one"},
		{"no command", `{"turns":[{"shell":{}}]}`, "turns[0].shell.command"},
		{"cached > input", `{"usage":{"input":1,"cached":2},"turns":[{"text":"x"}]}`, "usage.cached"},
		{"bad status", `{"failure":{"status":200}}`, "failure.status"},
		{"empty", `{}`, "turns: at least one"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := modelmock.ParseScript([]byte(c.in))
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("ParseScript(%s) = %v, want error containing %q", c.in, err, c.wantErr)
			}
		})
	}
}

func TestBuiltinScripts(t *testing.T) {
	names := modelmock.BuiltinScripts()
	if len(names) == 0 {
		t.Fatal("no built-in scripts")
	}
	for _, n := range names {
		if _, err := modelmock.BuiltinScript(n); err != nil {
			t.Errorf("BuiltinScript(%q): %v", n, err)
		}
	}
	if _, err := modelmock.BuiltinScript("nope"); err == nil || !strings.Contains(err.Error(), "fix-median") {
		t.Errorf("BuiltinScript(nope) = %v, want an error listing the scripts", err)
	}
}

// TestConversationAdvances plays the fix-median script against claude's
// recorded request shape: each answer is picked by the assistant turns the
// request already holds.
func TestConversationAdvances(t *testing.T) {
	s, err := modelmock.BuiltinScript("fix-median")
	if err != nil {
		t.Fatal(err)
	}
	srv := modelmock.NewServer(s)
	defer srv.Close()
	f := loadFixture(t, "claude/0035-ok-POST.json")
	var req map[string]any
	if err := json.Unmarshal(f.Body, &req); err != nil {
		t.Fatal(err)
	}
	msgs := req["messages"].([]any)
	for turn := range s.Turns {
		body, _ := json.Marshal(req)
		_, b := post(t, srv.URL+f.Path, body, nil)
		evs := events(t, b)
		block := get(evs[1], "content_block")
		want := s.Turns[turn]
		if want.Shell != nil {
			var in map[string]any
			_ = json.Unmarshal([]byte(get(evs[2], "delta", "partial_json").(string)), &in)
			if get(block, "name") != "Bash" || in["command"] != want.Shell.Command {
				t.Fatalf("turn %d: block %v input %v, want Bash %q", turn, block, in, want.Shell.Command)
			}
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": get(block, "id"), "name": "Bash", "input": in}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": get(block, "id"), "content": "ok"}}})
			req["messages"] = msgs
		} else if get(evs[2], "delta", "text") != want.Text {
			t.Fatalf("turn %d: %v, want text %q", turn, evs[2], want.Text)
		}
	}
	reqs := srv.Requests()
	for i, r := range reqs {
		if r.Turn != i || r.API != modelmock.Messages || r.Status != 200 {
			t.Errorf("request %d: turn %d api %s status %d", i, r.Turn, r.API, r.Status)
		}
	}
}

// TestRecordedRequestsOfCopilotAndCline replays the requests of copilot-cli
// (BYOK, Chat Completions) and cline (openai-compatible, Chat Completions)
// recorded through a loopback proxy in testdata/agent-wire: the shell call
// goes to copilot's bash {command, description} and to cline's
// run_commands {commands: […]}; the final answer is copilot's text and,
// since cline ends a run only through it, a call of cline's submit_and_exit.
func TestRecordedRequestsOfCopilotAndCline(t *testing.T) {
	srv := modelmock.NewServer(modelmock.DefaultScript())
	defer srv.Close()
	toolCall := func(t *testing.T, evs []any) (string, map[string]any) {
		t.Helper()
		name, _ := get(evs[0], "choices", 0, "delta", "tool_calls", 0, "function", "name").(string)
		var args map[string]any
		raw, _ := get(evs[1], "choices", 0, "delta", "tool_calls", 0, "function", "arguments").(string)
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			t.Fatalf("tool call arguments %q: %v", raw, err)
		}
		return name, args
	}
	usage := func(t *testing.T, evs []any) {
		t.Helper()
		if evs[len(evs)-1] != "[DONE]" {
			t.Errorf("last event = %v, want [DONE]", evs[len(evs)-1])
		}
		u := get(evs[len(evs)-2], "usage")
		if num(get(u, "prompt_tokens")) != 1234 || num(get(u, "prompt_tokens_details", "cached_tokens")) != 1000 || num(get(u, "completion_tokens")) != 56 {
			t.Errorf("usage chunk = %v", u)
		}
	}
	cases := []struct {
		file  string
		check func(t *testing.T, evs []any)
	}{
		{"copilot-cli/0001-ok-POST.json", func(t *testing.T, evs []any) {
			name, args := toolCall(t, evs)
			if name != "bash" || args["command"] != "echo hello > /app/out.txt" || args["description"] == nil {
				t.Errorf("tool call = %s %v, want bash {command, description}", name, args)
			}
			usage(t, evs)
		}},
		{"copilot-cli/0002-ok-POST.json", func(t *testing.T, evs []any) {
			if got := get(evs[1], "choices", 0, "delta", "content"); got != "Done: wrote hello to out.txt." {
				t.Errorf("text = %v", got)
			}
			usage(t, evs)
		}},
		{"cline/0001-ok-POST.json", func(t *testing.T, evs []any) {
			name, args := toolCall(t, evs)
			if cmds, _ := args["commands"].([]any); name != "run_commands" || len(cmds) != 1 || cmds[0] != "echo hello > /app/out.txt" {
				t.Errorf("tool call = %s %v, want run_commands {commands: [the command]}", name, args)
			}
			usage(t, evs)
		}},
		{"cline/0002-ok-POST.json", func(t *testing.T, evs []any) {
			name, args := toolCall(t, evs)
			if name != "submit_and_exit" || args["summary"] != "Done: wrote hello to out.txt." || args["verified"] != true {
				t.Errorf("tool call = %s %v, want submit_and_exit {summary, verified}", name, args)
			}
			usage(t, evs)
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/agent-wire/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			var f fixture
			if err := json.Unmarshal(data, &f); err != nil {
				t.Fatal(err)
			}
			resp, body := post(t, srv.URL+f.Path, f.Body, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			c.check(t, events(t, body))
		})
	}
}

// TestQwenCodeRequests replays qwen-code 0.24.4's two requests, recorded
// through a loopback proxy between the real program and this mock
// (testdata/agent-wire/qwen-code: request headers with the key redacted,
// body, and the answer the program accepted), and checks the mock answers
// each the same way: the shell call through qwen-code's run_shell_command,
// then the final text, each with the usage chunk its stream_options asks for.
func TestQwenCodeRequests(t *testing.T) {
	s := modelmock.DefaultScript()
	s.Turns[0].Shell.Description = "write hello" // as the recording's script said
	srv := modelmock.NewServer(s)
	defer srv.Close()
	for _, name := range []string{"0001-POST.json", "0002-POST.json"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile("testdata/agent-wire/qwen-code/" + name)
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				Path     string          `json:"path"`
				Body     json.RawMessage `json:"body"`
				Response string          `json:"response"`
			}
			if err := json.Unmarshal(data, &rec); err != nil {
				t.Fatal(err)
			}
			resp, body := post(t, srv.URL+rec.Path, rec.Body, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			got, want := events(t, body), events(t, []byte(rec.Response))
			// Ids and timestamps differ between two answers; the rest must not.
			strip := func(evs []any) []any {
				for _, e := range evs {
					if m, ok := e.(map[string]any); ok {
						delete(m, "created")
						delete(m, "id")
					}
				}
				return evs
			}
			gotJSON, _ := json.Marshal(strip(got))
			wantJSON, _ := json.Marshal(strip(want))
			if string(gotJSON) != string(wantJSON) {
				t.Errorf("answer differs from the recorded one\n got: %s\nwant: %s", gotJSON, wantJSON)
			}
		})
	}
}

// TestHangTurn: the calls before a hang turn are answered; the hang turn's
// request is held (recorded with its turn, status 0) until the client gives
// up, and WaitTurn sees it held.
func TestHangTurn(t *testing.T) {
	s := modelmock.DefaultScript()
	s.Turns[1] = modelmock.Turn{Hang: true}
	srv := modelmock.NewServer(s)
	defer srv.Close()
	tools := `"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]`
	resp, _ := post(t, srv.URL+"/v1/chat/completions", []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],`+tools+`}`), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("turn 0: status %d", resp.StatusCode)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x"}],`+tools+`}`))
		_, err := http.DefaultClient.Do(req)
		errc <- err
	}()
	wait, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if err := srv.Handler.WaitTurn(wait, 1); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Handler.Requests()
	if len(reqs) != 2 || reqs[1].Turn != 1 || reqs[1].Status != 0 {
		t.Fatalf("requests = %+v, want turn 1 held (status 0)", reqs)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Error("the held request was answered")
	}
	if err := (modelmock.Script{Turns: []modelmock.Turn{{Hang: true, Text: "x"}}}).Validate(); err == nil {
		t.Error("a turn with hang and text validated")
	}
}
