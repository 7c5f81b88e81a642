package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

func chatOnlyRoute(base string) gateway.Route {
	return gateway.Route{BaseURLs: map[wireapi.API]string{wireapi.Chat: base + "/v1"}, Model: "moonshotai/kimi-k2", PriceProvider: "openrouter", Label: "openrouter/moonshotai/kimi-k2"}
}

// TestResponsesTranslatedToChat: codex's recorded requests through the
// gateway to an upstream that serves Chat Completions only. The upstream
// gets a Chat request (system text, the user turns, the function call and its
// output, the function tools); codex gets the Responses events it reads.
func TestResponsesTranslatedToChat(t *testing.T) {
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	g := start(t, gateway.Config{Route: chatOnlyRoute(mock.URL)})
	c := unixClient(g.SocketPath())

	resp, body := call(t, c, "http://gw", g.Token(), loadFixture(t, "codex/0003-ok-POST.json"))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	evs := sseEvents(t, string(body))
	last := evs[len(evs)-1]
	if last["type"] != "response.completed" {
		t.Fatalf("last event %v", last["type"])
	}
	out := last["response"].(map[string]any)["output"].([]any)
	item := out[0].(map[string]any)
	if item["type"] != "function_call" || item["name"] != "exec_command" || item["arguments"] != `{"cmd":"echo hello > /app/out.txt"}` || item["call_id"] == "" {
		t.Errorf("function call item %v", item)
	}
	u := last["response"].(map[string]any)["usage"].(map[string]any)
	if u["input_tokens"].(float64) != 1234 || u["input_tokens_details"].(map[string]any)["cached_tokens"].(float64) != 1000 || u["output_tokens"].(float64) != 56 {
		t.Errorf("usage %v", u)
	}
	for _, want := range []string{"response.created", "response.output_item.added", "response.function_call_arguments.delta", "response.output_item.done"} {
		if !hasEvent(evs, want) {
			t.Errorf("no %s event", want)
		}
	}

	// The second turn carries the function call and its output.
	resp, body = call(t, c, "http://gw", g.Token(), loadFixture(t, "codex/0004-ok-POST.json"))
	evs = sseEvents(t, string(body))
	var text string
	for _, e := range evs {
		if e["type"] == "response.output_text.delta" {
			text += e["delta"].(string)
		}
	}
	if resp.StatusCode != 200 || text != "Done: wrote hello to out.txt." || !hasEvent(evs, "response.output_text.done") {
		t.Errorf("second turn %d text %q: %.2000s", resp.StatusCode, text, body)
	}

	reqs := mock.Requests()
	if len(reqs) != 2 || reqs[1].API != modelmock.Chat || !strings.HasSuffix(reqs[1].Path, "/v1/chat/completions") {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	var chat struct {
		Model         string
		Stream        bool
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []struct {
			Role       string
			Content    any
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		}
		Tools []struct {
			Function struct{ Name string }
		}
	}
	if err := json.Unmarshal(reqs[1].Body, &chat); err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range chat.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,user,assistant,tool" {
		t.Errorf("roles %s", got)
	}
	m := chat.Messages
	if chat.Model != "moonshotai/kimi-k2" || !chat.Stream || !chat.StreamOptions.IncludeUsage ||
		len(m) != 5 || len(m[3].ToolCalls) != 1 || m[3].ToolCalls[0].Function.Name != "exec_command" || m[4].ToolCallID != m[3].ToolCalls[0].ID ||
		!strings.Contains(m[0].Content.(string), "You are a coding agent") || !strings.Contains(m[0].Content.(string), "<permissions instructions>") {
		t.Errorf("chat request: model %q stream %v messages %+v", chat.Model, chat.Stream, m)
	}
	var tools []string
	for _, tl := range chat.Tools {
		tools = append(tools, tl.Function.Name)
	}
	if !strings.Contains(strings.Join(tools, ","), "exec_command,write_stdin") || strings.Contains(strings.Join(tools, ","), "multi_agent") {
		t.Errorf("tools %v", tools)
	}

	calls := g.Calls()
	if len(calls) != 2 || calls[0].API != wireapi.Responses || calls[0].UpstreamAPI != wireapi.Chat || !calls[0].Metered || calls[0].Usage.Input != 1234 {
		t.Errorf("calls %+v", calls)
	}
}

func TestResponsesTranslatedNonStreaming(t *testing.T) {
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	g := start(t, gateway.Config{Route: chatOnlyRoute(mock.URL), TCPAddr: "127.0.0.1:0"})
	f := fixture{Path: "/v1/responses", Body: json.RawMessage(`{"model":"x","instructions":"be brief","input":"hi","tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{}}}}]}`)}
	resp, body := call(t, http.DefaultClient, g.URL(), g.Token(), f)
	var r map[string]any
	if err := json.Unmarshal(body, &r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	item := r["output"].([]any)[0].(map[string]any)
	if r["status"] != "completed" || item["name"] != "exec_command" || r["usage"].(map[string]any)["input_tokens"].(float64) != 1234 {
		t.Errorf("answer %s", body)
	}
}

// TestTranslatedErrorPassesThrough: an upstream error reaches the harness
// as is, classified like any other.
func TestTranslatedErrorPassesThrough(t *testing.T) {
	s := modelmock.DefaultScript()
	s.Failure = &modelmock.Failure{Status: 401}
	mock := modelmock.NewServer(s)
	defer mock.Close()
	g := start(t, gateway.Config{Route: chatOnlyRoute(mock.URL)})
	resp, _ := call(t, unixClient(g.SocketPath()), "http://gw", g.Token(), loadFixture(t, "codex/0003-ok-POST.json"))
	if resp.StatusCode != 401 || g.Fault() == nil || g.Fault().Kind != gateway.FaultAuth {
		t.Errorf("status %d fault %v", resp.StatusCode, g.Fault())
	}
}

func sseEvents(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(body, "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			t.Fatalf("event %q: %v", d, err)
		}
		out = append(out, v)
	}
	return out
}

func hasEvent(evs []map[string]any, typ string) bool {
	for _, e := range evs {
		if e["type"] == typ {
			return true
		}
	}
	return false
}
