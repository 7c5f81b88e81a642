package gateway_test

import (
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
)

func TestResolve(t *testing.T) {
	r, err := gateway.ParseOperatorConfig([]byte(`
[providers.openai]
base_urls = { openai-responses = "https://llm.example.com/openai/v1/" }
prices = "openai"

[hosted]
base_url = "http://vllm.internal:8000/v1"
apis = ["openai-chat"]
`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		model   runconfig.Model
		want    gateway.Route
		wantErr string
	}{
		{"provider", runconfig.Model{Type: runconfig.Provider, Model: "anthropic/claude-sonnet-4-5"},
			gateway.Route{BaseURLs: map[gateway.WireAPI]string{gateway.Messages: "https://api.anthropic.com/v1"}, Model: "claude-sonnet-4-5", PriceProvider: "anthropic", Label: "anthropic/claude-sonnet-4-5"}, ""},
		{"operator override", runconfig.Model{Type: runconfig.Provider, Model: "openai/gpt-5.2"},
			gateway.Route{BaseURLs: map[gateway.WireAPI]string{gateway.Responses: "https://llm.example.com/openai/v1"}, Model: "gpt-5.2", PriceProvider: "openai", Label: "openai/gpt-5.2"}, ""},
		{"openrouter model with a slash", runconfig.Model{Type: runconfig.Provider, Model: "openrouter/anthropic/claude-sonnet-4.5"},
			gateway.Route{BaseURLs: map[gateway.WireAPI]string{gateway.Chat: "https://openrouter.ai/api/v1"}, Model: "anthropic/claude-sonnet-4.5", PriceProvider: "openrouter", Label: "openrouter/anthropic/claude-sonnet-4.5"}, ""},
		{"endpoint", runconfig.Model{Type: runconfig.Endpoint, BaseURL: "http://10.0.0.5:8000/v1/", Model: "qwen3-coder", ExtraHeaders: map[string]string{"X-Team": "a"}},
			gateway.Route{BaseURLs: map[gateway.WireAPI]string{gateway.Chat: "http://10.0.0.5:8000/v1", gateway.Responses: "http://10.0.0.5:8000/v1"}, Model: "qwen3-coder", Headers: map[string]string{"X-Team": "a"}, Label: "qwen3-coder"}, ""},
		{"hosted", runconfig.Model{Type: runconfig.Hosted, BaseModel: "Qwen/Qwen3-8B", LoraModelName: "my-lora"},
			gateway.Route{BaseURLs: map[gateway.WireAPI]string{gateway.Chat: "http://vllm.internal:8000/v1"}, Model: "my-lora", Label: "Qwen/Qwen3-8B:my-lora"}, ""},
		{"unknown provider", runconfig.Model{Type: runconfig.Provider, Model: "nope/x"}, gateway.Route{}, `model.model: unknown provider "nope" (available: anthropic, cerebras`},
		{"no provider", runconfig.Model{Type: runconfig.Provider, Model: "gpt-5"}, gateway.Route{}, "is not <provider>/<model>"},
		{"endpoint Authorization", runconfig.Model{Type: runconfig.Endpoint, BaseURL: "http://x/v1", Model: "m", ExtraHeaders: map[string]string{"authorization": "Bearer x"}}, gateway.Route{}, "model.extra_headers"},
		{"endpoint bad URL", runconfig.Model{Type: runconfig.Endpoint, BaseURL: "ftp://x", Model: "m"}, gateway.Route{}, "model.base_url"},
		{"endpoint no model", runconfig.Model{Type: runconfig.Endpoint, BaseURL: "http://x/v1"}, gateway.Route{}, "model.model: is required"},
		{"hosted without lora", runconfig.Model{Type: runconfig.Hosted, BaseModel: "b"}, gateway.Route{}, "lora_model_name"},
		{"bad type", runconfig.Model{Type: "local"}, gateway.Route{}, "model.type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := r.Resolve(c.model)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Resolve = %v, want error containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalRoute(got, c.want) {
				t.Errorf("Resolve = %+v, want %+v", got, c.want)
			}
		})
	}
	if _, err := gateway.NewResolver().Resolve(runconfig.Model{Type: runconfig.Hosted, BaseModel: "b", LoraModelName: "l"}); err == nil || !strings.Contains(err.Error(), "no hosted-model endpoint") {
		t.Errorf("hosted without an operator endpoint: %v", err)
	}
}

func equalRoute(a, b gateway.Route) bool {
	if a.Model != b.Model || a.PriceProvider != b.PriceProvider || a.Label != b.Label || len(a.BaseURLs) != len(b.BaseURLs) || len(a.Headers) != len(b.Headers) {
		return false
	}
	for k, v := range a.BaseURLs {
		if b.BaseURLs[k] != v {
			return false
		}
	}
	for k, v := range a.Headers {
		if b.Headers[k] != v {
			return false
		}
	}
	return true
}

func TestCheckHarness(t *testing.T) {
	r := gateway.NewResolver()
	route := func(m string) gateway.Route {
		rt, err := r.Resolve(runconfig.Model{Type: runconfig.Provider, Model: m})
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	for _, c := range []struct {
		model string
		api   gateway.WireAPI
		ok    bool
	}{
		{"openai/gpt-5", gateway.Responses, true},
		{"openai/gpt-5", gateway.Chat, true},
		{"openai/gpt-5", gateway.Messages, false},
		{"anthropic/claude-sonnet-4-5", gateway.Messages, true},
		{"anthropic/claude-sonnet-4-5", gateway.Responses, false},
		{"google/gemini-2.5-pro", gateway.Gemini, true},
		{"google/gemini-2.5-pro", gateway.Chat, true},
		{"openrouter/openai/gpt-5", gateway.Chat, true},
		{"openrouter/openai/gpt-5", gateway.Responses, true}, // translated to Chat
		{"together/moonshotai/Kimi-K2", gateway.Messages, false},
		{"google/gemini-2.5-pro", gateway.Messages, false},
	} {
		err := route(c.model).CheckHarness(c.api)
		if (err == nil) != c.ok {
			t.Errorf("CheckHarness(%s, %s) = %v, want ok=%v", c.model, c.api, err, c.ok)
		}
	}
	if !route("openrouter/openai/gpt-5").Translates(gateway.Responses) || route("openai/gpt-5").Translates(gateway.Responses) {
		t.Error("Translates: only a Responses harness on a Chat-only upstream is translated")
	}
	err := route("anthropic/claude-sonnet-4-5").CheckHarness(gateway.Responses)
	if err == nil || !strings.Contains(err.Error(), "speaks OpenAI Responses") || !strings.Contains(err.Error(), "Anthropic Messages only") {
		t.Errorf("message: %v", err)
	}
}

func TestParseOperatorConfigErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`[providers.x]`, "providers.x.base_urls: is required"},
		{`[providers.x]
base_urls = { smoke-signals = "https://x" }`, `unknown wire API "smoke-signals"`},
		{`[providers.x]
base_urls = { openai-chat = "https://x" }
headers = { Authorization = "Bearer y" }`, "providers.x.headers"},
		{`[hosted]
base_url = "nope"`, "hosted.base_url"},
		{`nonsense = 1`, "unknown field nonsense"},
	} {
		if _, err := gateway.ParseOperatorConfig([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseOperatorConfig(%q) = %v, want %q", c.in, err, c.want)
		}
	}
}
