package gateway

import (
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

// feed writes s to a meter in chunks of n bytes, so events split anywhere.
func feed(api wireapi.API, sse bool, s string, n int) *meter {
	m := newMeter(api, sse)
	for len(s) > 0 {
		k := min(n, len(s))
		_, _ = m.Write([]byte(s[:k]))
		s = s[k:]
	}
	m.finish()
	return m
}

func TestMeter(t *testing.T) {
	cases := []struct {
		name  string
		api   wireapi.API
		sse   bool
		body  string
		want  Usage
		model string
		cost  float64
	}{
		{"anthropic stream, input repeated in message_delta", wireapi.Messages, true,
			"event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5-20250929\",\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":2000,\"output_tokens\":1}}}\r\n\r\n" +
				"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"usage is\"}}\r\n\r\n" +
				"event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":2000,\"output_tokens\":345}}\r\n\r\n" +
				"event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n",
			Usage{Input: 2112, Cached: 2000, CacheWrite: 100, Output: 345}, "claude-sonnet-4-5-20250929", 0},
		{"anthropic JSON", wireapi.Messages, false,
			`{"id":"msg_1","model":"claude-x","usage":{"input_tokens":5,"cache_read_input_tokens":10,"output_tokens":7}}`,
			Usage{Input: 15, Cached: 10, Output: 7}, "claude-x", 0},
		{"responses stream", wireapi.Responses, true,
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"model\":\"gpt-5-2025-08-07\",\"usage\":null}}\n\n" +
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"the usage\"}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-5-2025-08-07\",\"usage\":{\"input_tokens\":900,\"input_tokens_details\":{\"cached_tokens\":800},\"output_tokens\":60,\"output_tokens_details\":{\"reasoning_tokens\":40}}}}\n\n",
			Usage{Input: 900, Cached: 800, Output: 60, Reasoning: 40}, "gpt-5-2025-08-07", 0},
		{"chat stream with usage chunk and reported cost", wireapi.Chat, true,
			"data: {\"model\":\"anthropic/claude-sonnet-4.5\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n" +
				"data: {\"model\":\"anthropic/claude-sonnet-4.5\",\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":5,\"prompt_tokens_details\":{\"cached_tokens\":20},\"completion_tokens_details\":{\"reasoning_tokens\":2},\"cost\":0.00123}}\n\n" +
				"data: [DONE]\n\n",
			Usage{Input: 50, Cached: 20, Output: 5, Reasoning: 2}, "anthropic/claude-sonnet-4.5", 0.00123},
		{"chat stream ending without blank line", wireapi.Chat, true,
			"data: {\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}",
			Usage{Input: 3, Output: 4}, "m", 0},
		{"gemini stream, usage on every chunk", wireapi.Gemini, true,
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}],\"usageMetadata\":{\"promptTokenCount\":100,\"candidatesTokenCount\":1},\"modelVersion\":\"gemini-2.5-pro\"}\r\n\r\n" +
				"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"b\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":100,\"cachedContentTokenCount\":60,\"candidatesTokenCount\":9,\"thoughtsTokenCount\":30,\"toolUsePromptTokenCount\":5},\"modelVersion\":\"gemini-2.5-pro\"}\r\n\r\n",
			Usage{Input: 105, Cached: 60, Output: 39, Reasoning: 30}, "gemini-2.5-pro", 0},
		{"gemini JSON array (no alt=sse)", wireapi.Gemini, false,
			`[{"candidates":[],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":1}},{"candidates":[],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":3},"modelVersion":"g"}]`,
			Usage{Input: 7, Output: 3}, "g", 0},
	}
	for _, c := range cases {
		for _, n := range []int{1, 7, 1 << 20} {
			m := feed(c.api, c.sse, c.body, n)
			if !m.found || m.usage != c.want || m.model != c.model || m.cost != c.cost {
				t.Errorf("%s (chunks of %d): found %v usage %+v model %q cost %v; want %+v %q %v", c.name, n, m.found, m.usage, m.model, m.cost, c.want, c.model, c.cost)
			}
		}
	}
	if m := feed(wireapi.Chat, true, "data: {\"choices\":[{\"delta\":{\"content\":\"no usage here\"}}]}\n\ndata: [DONE]\n\n", 3); m.found {
		t.Error("usage found in a stream without any")
	}
	if m := feed(wireapi.Responses, false, strings.Repeat("x", 100), 10); m.found {
		t.Error("usage found in a body that is not JSON")
	}
}

func TestTopLevelString(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`{"model":"gpt-5"}`, "gpt-5", true},
		{` { "input" : [ {"model":"inner"}, "x\"}" ], "n": 1.5e3, "t": true, "model" : "m-1" , "z": null}`, "m-1", true},
		{`{"messages":[{"content":"model"}],"stream":true}`, "", false},
		{`{"model":"a\u0062"}`, "", false},
		{`{"model":7}`, "", false},
		{`[{"model":"x"}]`, "", false},
		{`{"model":"unterminated`, "", false},
	} {
		s, e, got, ok := topLevelString([]byte(c.in), "model")
		if ok != c.ok || got != c.want || ok && c.in[s:e] != `"`+c.want+`"` {
			t.Errorf("topLevelString(%s) = %q, %v (%d:%d); want %q, %v", c.in, got, ok, s, e, c.want, c.ok)
		}
	}
	if got := string(setModel([]byte(`{"a":[1,{"model":"no"}], "model": "x", "b":2}`), "gpt-5")); got != `{"a":[1,{"model":"no"}], "model": "gpt-5", "b":2}` {
		t.Errorf("setModel = %s", got)
	}
	if got := string(setModel([]byte(`{"a":1}`), "m")); got != `{"a":1,"model":"m"}` {
		t.Errorf("setModel without model = %s", got)
	}
}

func TestIncludeUsage(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"model":"m","stream":true,"messages":[]}`, `{"stream_options":{"include_usage":true},"model":"m","stream":true,"messages":[]}`},
		{`{"stream":true,"stream_options":{"include_usage":true}}`, `{"stream":true,"stream_options":{"include_usage":true}}`},
		{`{"stream":true,"stream_options":{"include_usage":false,"x":1}}`, `{"stream":true,"stream_options":{"include_usage":true,"x":1}}`},
		{`{"stream":false,"messages":[]}`, `{"stream":false,"messages":[]}`},
		{`{"messages":[{"stream":true}]}`, `{"messages":[{"stream":true}]}`},
	} {
		if got := string(includeUsage([]byte(c.in))); got != c.want {
			t.Errorf("includeUsage(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
