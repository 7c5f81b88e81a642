package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// chatWire is OpenAI Chat Completions, non-streaming.
type chatWire struct{}

type chatRequest struct {
	Model               string    `json:"model"`
	Messages            []Message `json:"messages"`
	MaxCompletionTokens int       `json:"max_completion_tokens,omitempty"`
	Temperature         *float64  `json:"temperature,omitempty"`
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			// reasoning_content is what DeepSeek, vLLM and SGLang call
			// the reasoning of thinking models; OpenRouter says reasoning.
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
			Refusal          string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func (chatWire) request(ctx context.Context, cfg Config, msgs []Message) (*http.Request, error) {
	req, err := postJSON(ctx, cfg.BaseURL+"/chat/completions", chatRequest{
		Model: cfg.Model, Messages: msgs, MaxCompletionTokens: cfg.MaxTokens, Temperature: cfg.Temperature})
	if err != nil {
		return nil, err
	}
	if cfg.Key != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Key)
	}
	return req, nil
}

func (chatWire) parse(body []byte) (Reply, error) {
	var r chatResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return Reply{}, fmt.Errorf("chat completion reply: not JSON: %w", err)
	}
	if len(r.Choices) == 0 {
		return Reply{}, errors.New("chat completion reply: no choices")
	}
	m := r.Choices[0].Message
	reply := Reply{Model: r.Model, Reasoning: m.ReasoningContent}
	if reply.Reasoning == "" {
		reply.Reasoning = m.Reasoning
	}
	switch {
	case m.Content != nil:
		reply.Content = *m.Content
	case m.Refusal != "":
		reply.Content = m.Refusal
	}
	if u := r.Usage; u != nil {
		reply.Usage = Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Reported: true}
		if u.PromptTokensDetails != nil {
			reply.Usage.CachedTokens = u.PromptTokensDetails.CachedTokens
		}
	}
	return reply, nil
}

// anthropicWire is Anthropic Messages, non-streaming.
type anthropicWire struct{}

// anthropicVersion is the Messages API version header every call carries.
const anthropicVersion = "2023-06-01"

type anthropicRequest struct {
	Model       string    `json:"model"`
	MaxTokens   int       `json:"max_tokens"`
	Messages    []Message `json:"messages"`
	Temperature *float64  `json:"temperature,omitempty"`
}

type anthropicResponse struct {
	Model   string `json:"model"`
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"content"`
	Usage *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

func (anthropicWire) request(ctx context.Context, cfg Config, msgs []Message) (*http.Request, error) {
	maxTokens := cfg.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	req, err := postJSON(ctx, cfg.BaseURL+"/v1/messages", anthropicRequest{
		Model: cfg.Model, MaxTokens: maxTokens, Messages: msgs, Temperature: cfg.Temperature})
	if err != nil {
		return nil, err
	}
	req.Header.Set("anthropic-version", anthropicVersion)
	if cfg.Key != "" {
		req.Header.Set("x-api-key", cfg.Key)
	}
	return req, nil
}

func (anthropicWire) parse(body []byte) (Reply, error) {
	var r anthropicResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return Reply{}, fmt.Errorf("messages reply: not JSON: %w", err)
	}
	reply := Reply{Model: r.Model}
	var text, thinking []string
	for _, c := range r.Content {
		switch c.Type {
		case "text":
			text = append(text, c.Text)
		case "thinking":
			thinking = append(thinking, c.Thinking)
		}
	}
	reply.Content = strings.Join(text, "")
	reply.Reasoning = strings.Join(thinking, "\n")
	if u := r.Usage; u != nil {
		// Anthropic's input_tokens excludes the cache reads and writes.
		cached := u.CacheReadInputTokens
		reply.Usage = Usage{
			PromptTokens:     u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
			CompletionTokens: u.OutputTokens, CachedTokens: cached, Reported: true}
	}
	return reply, nil
}
