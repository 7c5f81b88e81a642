package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
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
		model   modelref.Model
		want    gateway.Route
		wantErr string
	}{
		{"provider", modelref.Model{Type: modelref.Provider, Model: "anthropic/claude-sonnet-4-5"},
			gateway.Route{BaseURLs: map[wireapi.API]string{wireapi.Messages: "https://api.anthropic.com/v1"}, Model: "claude-sonnet-4-5", PriceProvider: "anthropic", Label: "anthropic/claude-sonnet-4-5"}, ""},
		{"operator override", modelref.Model{Type: modelref.Provider, Model: "openai/gpt-5.2"},
			gateway.Route{BaseURLs: map[wireapi.API]string{wireapi.Responses: "https://llm.example.com/openai/v1"}, Model: "gpt-5.2", PriceProvider: "openai", Label: "openai/gpt-5.2"}, ""},
		{"openrouter model with a slash", modelref.Model{Type: modelref.Provider, Model: "openrouter/anthropic/claude-sonnet-4.5"},
			gateway.Route{BaseURLs: map[wireapi.API]string{wireapi.Chat: "https://openrouter.ai/api/v1"}, Model: "anthropic/claude-sonnet-4.5", PriceProvider: "openrouter", Label: "openrouter/anthropic/claude-sonnet-4.5"}, ""},
		{"endpoint", modelref.Model{Type: modelref.Endpoint, BaseURL: "http://10.0.0.5:8000/v1/", Model: "qwen3-coder", ExtraHeaders: map[string]string{"X-Team": "a"}},
			gateway.Route{BaseURLs: map[wireapi.API]string{wireapi.Chat: "http://10.0.0.5:8000/v1", wireapi.Responses: "http://10.0.0.5:8000/v1"}, Model: "qwen3-coder", Headers: map[string]string{"X-Team": "a"}, Label: "qwen3-coder"}, ""},
		{"hosted", modelref.Model{Type: modelref.Hosted, BaseModel: "Qwen/Qwen3-8B", LoraModelName: "my-lora"},
			gateway.Route{BaseURLs: map[wireapi.API]string{wireapi.Chat: "http://vllm.internal:8000/v1"}, Model: "my-lora", Label: "Qwen/Qwen3-8B:my-lora"}, ""},
		{"unknown provider", modelref.Model{Type: modelref.Provider, Model: "nope/x"}, gateway.Route{}, `model.model: unknown provider "nope" (available: anthropic, cerebras`},
		{"no provider", modelref.Model{Type: modelref.Provider, Model: "gpt-5"}, gateway.Route{}, "is not <provider>/<model>"},
		{"endpoint Authorization", modelref.Model{Type: modelref.Endpoint, BaseURL: "http://x/v1", Model: "m", ExtraHeaders: map[string]string{"authorization": "Bearer x"}}, gateway.Route{}, "model.extra_headers"},
		{"endpoint bad URL", modelref.Model{Type: modelref.Endpoint, BaseURL: "ftp://x", Model: "m"}, gateway.Route{}, "model.base_url"},
		{"endpoint no model", modelref.Model{Type: modelref.Endpoint, BaseURL: "http://x/v1"}, gateway.Route{}, "model.model: is required"},
		{"hosted without lora", modelref.Model{Type: modelref.Hosted, BaseModel: "b"}, gateway.Route{}, "lora_model_name"},
		{"bad type", modelref.Model{Type: "local"}, gateway.Route{}, "model.type"},
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
	if _, err := gateway.NewResolver().Resolve(modelref.Model{Type: modelref.Hosted, BaseModel: "b", LoraModelName: "l"}); err == nil || !strings.Contains(err.Error(), "no hosted-model endpoint") {
		t.Errorf("hosted without an operator endpoint: %v", err)
	}
	if !r.HostsModels() || gateway.NewResolver().HostsModels() {
		t.Errorf("HostsModels = %v with [hosted], %v without; want true, false", r.HostsModels(), gateway.NewResolver().HostsModels())
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
		rt, err := r.Resolve(modelref.Model{Type: modelref.Provider, Model: m})
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	for _, c := range []struct {
		model string
		api   wireapi.API
		ok    bool
	}{
		{"openai/gpt-5", wireapi.Responses, true},
		{"openai/gpt-5", wireapi.Chat, true},
		{"openai/gpt-5", wireapi.Messages, false},
		{"anthropic/claude-sonnet-4-5", wireapi.Messages, true},
		{"anthropic/claude-sonnet-4-5", wireapi.Responses, false},
		{"google/gemini-2.5-pro", wireapi.Gemini, true},
		{"google/gemini-2.5-pro", wireapi.Chat, true},
		{"openrouter/openai/gpt-5", wireapi.Chat, true},
		{"openrouter/openai/gpt-5", wireapi.Responses, true}, // translated to Chat
		{"together/moonshotai/Kimi-K2", wireapi.Messages, false},
		{"google/gemini-2.5-pro", wireapi.Messages, false},
	} {
		err := route(c.model).CheckHarness(c.api)
		if (err == nil) != c.ok {
			t.Errorf("CheckHarness(%s, %s) = %v, want ok=%v", c.model, c.api, err, c.ok)
		}
	}
	if !route("openrouter/openai/gpt-5").Translates(wireapi.Responses) || route("openai/gpt-5").Translates(wireapi.Responses) {
		t.Error("Translates: only a Responses harness on a Chat-only upstream is translated")
	}
	err := route("anthropic/claude-sonnet-4-5").CheckHarness(wireapi.Responses)
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
		{`[hosted]
base_url = "http://vllm.internal:8000/v1"
api_key_file = "/nonexistent/hosted-key"`, "hosted.api_key_file: open /nonexistent/hosted-key"},
		{`[hosted]
base_url = "http://vllm.internal:8000/v1"
api_key_file = "/etc/key"
api_key_env = "GAUNTLET_GATEWAY_KEY_HOSTED"`, "hosted: set one of api_key_file and api_key_env, not both"},
		{`[hosted]
base_url = "http://vllm.internal:8000/v1"
api_key_env = "HOSTED_KEY"`, `hosted.api_key_env: "HOSTED_KEY" is not GAUNTLET_GATEWAY_KEY_`},
		{`[hosted]
base_url = "http://vllm.internal:8000/v1"
api_key_env = "GAUNTLET_GATEWAY_KEY_UNSET_IN_THIS_TEST"`, "hosted.api_key_env: $GAUNTLET_GATEWAY_KEY_UNSET_IN_THIS_TEST is not set"},
	} {
		if _, err := gateway.ParseOperatorConfig([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseOperatorConfig(%q) = %v, want %q", c.in, err, c.want)
		}
	}
}

// TestParseOperatorConfigKeyFromEnv reads the hosted key from the variable
// api_key_env names, through the lookup given; WithoutKeys checks the config
// (both key fields included) without reading any key.
func TestParseOperatorConfigKeyFromEnv(t *testing.T) {
	const cfg = "[hosted]\nbase_url = \"http://vllm.internal:8000/v1\"\napi_key_env = \"GAUNTLET_GATEWAY_KEY_HOSTED\"\n"
	hosted := modelref.Model{Type: modelref.Hosted, BaseModel: "Qwen/Qwen3-8B", LoraModelName: "ft"}
	env := map[string]string{"GAUNTLET_GATEWAY_KEY_HOSTED": " sk-from-env \n"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	r, err := gateway.ParseOperatorConfigWith([]byte(cfg), gateway.ParseOptions{LookupEnv: lookup})
	if err != nil {
		t.Fatal(err)
	}
	route, err := r.Resolve(hosted)
	if err != nil || route.Key != "sk-from-env" {
		t.Fatalf("Resolve(hosted) = key set %v, %v; want the key from the environment", route.Key == "sk-from-env", err)
	}
	if r.Hosted.APIKeyEnv != "GAUNTLET_GATEWAY_KEY_HOSTED" {
		t.Errorf("Hosted.APIKeyEnv = %q", r.Hosted.APIKeyEnv)
	}

	none := func(string) (string, bool) { return "", false }
	if _, err := gateway.ParseOperatorConfigWith([]byte(cfg), gateway.ParseOptions{LookupEnv: none}); err == nil {
		t.Error("parse with the key's variable unset: no error, want one")
	}
	for _, c := range []string{cfg, "[hosted]\nbase_url = \"http://vllm.internal:8000/v1\"\napi_key_file = \"/nonexistent/key\"\n"} {
		r, err := gateway.ParseOperatorConfigWith([]byte(c), gateway.ParseOptions{LookupEnv: none, WithoutKeys: true})
		if err != nil {
			t.Fatalf("WithoutKeys parse of %q: %v", c, err)
		}
		if !r.HostsModels() {
			t.Errorf("WithoutKeys parse of %q hosts no models", c)
		}
		if err := r.CheckModel(hosted, string(wireapi.Chat)); err != nil {
			t.Errorf("CheckModel(hosted) after a WithoutKeys parse: %v", err)
		}
	}
	bad := "[hosted]\nbase_url = \"http://vllm.internal:8000/v1\"\napi_key_env = \"lowercase\"\n"
	if _, err := gateway.ParseOperatorConfigWith([]byte(bad), gateway.ParseOptions{WithoutKeys: true}); err == nil || !strings.Contains(err.Error(), "hosted.api_key_env") {
		t.Errorf("WithoutKeys parse of a bad api_key_env = %v, want a hosted.api_key_env error", err)
	}
}

// TestHostedRouteReachesOperatorEndpoint follows a hosted model from the
// operator's config through the gateway: the call goes to the operator's
// endpoint, names the LoRA adapter as its model whatever the harness asked
// for, and carries the operator's key (from api_key_file), which neither the
// run config nor the harness ever sees; the harness holds only the
// attempt's token.
func TestHostedRouteReachesOperatorEndpoint(t *testing.T) {
	const operatorKey = "sk-operator-hosted-key-0123456789"
	script := modelmock.DefaultScript()
	script.APIKey = operatorKey // the mock refuses any other key
	mock := modelmock.NewServer(script)
	defer mock.Close()
	keyFile := filepath.Join(t.TempDir(), "hosted-key")
	if err := os.WriteFile(keyFile, []byte(operatorKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := gateway.ParseOperatorConfig([]byte(fmt.Sprintf("[hosted]\nbase_url = %q\napis = [\"openai-chat\"]\napi_key_file = %q\n", mock.URL+"/v1", keyFile)))
	if err != nil {
		t.Fatal(err)
	}
	route, err := r.Resolve(modelref.Model{Type: modelref.Hosted, BaseModel: "Qwen/Qwen3-8B", LoraModelName: "my-finetune-step-400"})
	if err != nil {
		t.Fatal(err)
	}
	if route.Key != operatorKey || route.Model != "my-finetune-step-400" || route.Label != "Qwen/Qwen3-8B:my-finetune-step-400" || route.PriceProvider != "" {
		t.Fatalf("route = model %q label %q price %q, key set %v; want the adapter, its label, no price and the operator's key",
			route.Model, route.Label, route.PriceProvider, route.Key == operatorKey)
	}
	// terminus-2 and opencode speak Chat Completions; codex's Responses
	// would be translated to it.
	if err := route.CheckHarness(wireapi.Chat); err != nil {
		t.Fatal(err)
	}
	g := start(t, gateway.Config{Route: route, Key: route.Key, TCPAddr: "127.0.0.1:0"})
	resp, body := call(t, http.DefaultClient, g.URL(), g.Token(), fixture{Path: "/v1/chat/completions",
		Body: json.RawMessage(`{"model":"whatever-the-harness-says","messages":[{"role":"user","content":"hi"}]}`)})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("call: %d %s", resp.StatusCode, body)
	}
	reqs := mock.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the operator's endpoint got %d requests, want 1", len(reqs))
	}
	var sent struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(reqs[0].Body, &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Model != "my-finetune-step-400" || reqs[0].Path != "/v1/chat/completions" {
		t.Errorf("upstream got %s for model %q, want /v1/chat/completions for my-finetune-step-400", reqs[0].Path, sent.Model)
	}
	if auth := reqs[0].Header.Get("Authorization"); auth != "Bearer "+operatorKey {
		t.Errorf("upstream Authorization = %q, want the operator's key", auth)
	}
	if strings.Contains(string(body), operatorKey) || g.Token() == operatorKey {
		t.Error("the operator's key reached the harness")
	}
}
