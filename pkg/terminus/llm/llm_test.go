package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestChatCompletions(t *testing.T) {
	var got struct {
		Model    string    `json:"model"`
		Messages []Message `json:"messages"`
	}
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		auth = r.Header.Get("Authorization")
		_ = json.NewDecoder(r.Body).Decode(&got)
		_, _ = io.WriteString(w, `{"model":"m-2026","choices":[{"message":{"role":"assistant","content":"hello","reasoning_content":"thought"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":40}}}`)
	}))
	defer srv.Close()
	c, err := New(Config{API: ChatCompletions, BaseURL: srv.URL + "/v1/", Model: "m", Key: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := c.Complete(context.Background(), []Message{{Role: "user", Content: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	want := Reply{Content: "hello", Reasoning: "thought", Model: "m-2026",
		Usage: Usage{PromptTokens: 100, CompletionTokens: 7, CachedTokens: 40, Reported: true}}
	if reply != want {
		t.Errorf("Complete = %+v, want %+v", reply, want)
	}
	if auth != "Bearer tok" || got.Model != "m" || len(got.Messages) != 1 || got.Messages[0].Content != "hi" {
		t.Errorf("request: auth %q, body %+v", auth, got)
	}
}

func TestAnthropicMessages(t *testing.T) {
	var key, version string
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
		key, version = r.Header.Get("x-api-key"), r.Header.Get("anthropic-version")
		_ = json.NewDecoder(r.Body).Decode(&body)
		_, _ = io.WriteString(w, `{"model":"claude-x","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"a"},{"type":"text","text":"b"}],
			"usage":{"input_tokens":10,"cache_read_input_tokens":50,"cache_creation_input_tokens":5,"output_tokens":3}}`)
	}))
	defer srv.Close()
	c, err := New(Config{API: AnthropicMessages, BaseURL: srv.URL, Model: "claude", Key: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := c.Complete(context.Background(), []Message{{Role: "user", Content: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	want := Reply{Content: "ab", Reasoning: "hmm", Model: "claude-x",
		Usage: Usage{PromptTokens: 65, CompletionTokens: 3, CachedTokens: 50, Reported: true}}
	if reply != want {
		t.Errorf("Complete = %+v, want %+v", reply, want)
	}
	if key != "tok" || version != anthropicVersion || body["max_tokens"] != float64(DefaultAnthropicMaxTokens) {
		t.Errorf("request: key %q version %q body %v", key, version, body)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		wantKind Kind
		wantHits int32 // calls made, retries included
	}{
		{name: "auth", status: 401, body: `{"error":{"message":"bad key"}}`, wantKind: KindAuth, wantHits: 1},
		{name: "forbidden", status: 403, body: `{}`, wantKind: KindAuth, wantHits: 1},
		{name: "rate limit retried", status: 429, body: `{"error":{"message":"slow down"}}`, wantKind: KindUnavailable, wantHits: 3},
		{name: "server error retried", status: 503, body: `oops`, wantKind: KindUnavailable, wantHits: 3},
		{name: "context", status: 400, body: `{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}`, wantKind: KindContextLength, wantHits: 1},
		{name: "anthropic context", status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, wantKind: KindContextLength, wantHits: 1},
		{name: "not found", status: 404, body: `{"error":{"message":"no such model"}}`, wantKind: KindRejected, wantHits: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c, err := New(Config{API: ChatCompletions, BaseURL: srv.URL, Model: "m", Retries: 2, Backoff: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Complete(context.Background(), nil)
			var e *Error
			if !errors.As(err, &e) || e.Kind != tc.wantKind || e.Status != tc.status {
				t.Fatalf("Complete error = %v, want kind %v status %d", err, tc.wantKind, tc.status)
			}
			if hits.Load() != tc.wantHits {
				t.Errorf("calls = %d, want %d", hits.Load(), tc.wantHits)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := New(Config{API: AnthropicMessages, BaseURL: url, Model: "m", Retries: 1, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), nil)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindUnavailable || e.Status != 0 {
		t.Fatalf("Complete error = %v, want unavailable without a status", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{API: "responses", BaseURL: "http://x", Model: "m"},
		{API: ChatCompletions, BaseURL: "x", Model: "m"},
		{API: ChatCompletions, BaseURL: "http://x"},
		{API: ChatCompletions, BaseURL: "http://x", Model: "m", Retries: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error", cfg)
		}
	}
}
