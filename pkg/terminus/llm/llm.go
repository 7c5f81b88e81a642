// Package llm is terminus-2's model client: one non-streaming call per turn
// over OpenAI Chat Completions or Anthropic Messages, chosen by
// configuration, with the usage each reply reports and provider errors
// sorted into the classes the runner scores (auth, unavailable, context
// too long, rejected).
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Wire APIs.
const (
	ChatCompletions   = "chat-completions"
	AnthropicMessages = "anthropic-messages"
)

// Message is one turn of the conversation.
type Message struct {
	Role    string `json:"role"` // "user" or "assistant"
	Content string `json:"content"`
}

// Usage is what the provider reported for one call. PromptTokens includes
// CachedTokens (Anthropic's input, cache-read and cache-write tokens summed).
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64
	// Reported is false when the reply carried no usage at all.
	Reported bool
}

// Reply is the model's answer to one call.
type Reply struct {
	Content   string
	Reasoning string // reasoning text the provider returned, if any
	Model     string // the model that answered, as the provider names it
	Usage     Usage
}

// Kind classifies a failed call.
type Kind int

// Kinds of Error.
const (
	// KindRejected: the provider refused the request (400, 404, …).
	KindRejected Kind = iota
	// KindAuth: 401/403; retrying will not help.
	KindAuth
	// KindUnavailable: 429, 5xx or no answer, after the retries.
	KindUnavailable
	// KindContextLength: the conversation no longer fits the model.
	KindContextLength
)

func (k Kind) String() string {
	switch k {
	case KindAuth:
		return "auth"
	case KindUnavailable:
		return "model_unavailable"
	case KindContextLength:
		return "context_length"
	}
	return "rejected"
}

// Error is a failed model call.
type Error struct {
	Kind   Kind
	Status int // HTTP status; 0 when no answer arrived
	// Message is the provider's error message (never a request header).
	Message string
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("model call failed (%s): %s", e.Kind, e.Message)
	}
	return fmt.Sprintf("model call failed (%s, HTTP %d): %s", e.Kind, e.Status, e.Message)
}

// Config configures a Client.
type Config struct {
	// API is ChatCompletions or AnthropicMessages.
	API string
	// BaseURL is the API root as each ecosystem's own clients take it:
	// OpenAI's includes /v1 (POST BaseURL/chat/completions), Anthropic's
	// does not (POST BaseURL/v1/messages).
	BaseURL string
	Model   string
	// Key is sent as a bearer token (Chat Completions) or x-api-key
	// (Anthropic).
	Key string
	// MaxTokens bounds each reply (0 = the provider's default; Anthropic
	// requires one, so 0 means DefaultAnthropicMaxTokens there).
	MaxTokens int
	// Temperature, when set, is sent with every call.
	Temperature *float64
	// Retries is how many times a 429, 5xx or transport failure is retried.
	Retries int
	// Backoff is the first retry's delay, doubled for each further one
	// (0 = one second).
	Backoff time.Duration
	// HTTPClient sends the calls (nil = one with a 10-minute timeout).
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// DefaultAnthropicMaxTokens is the reply bound sent to Anthropic when
// Config.MaxTokens is 0.
const DefaultAnthropicMaxTokens = 8192

// maxResponseBytes bounds a reply body.
const maxResponseBytes = 32 << 20

// Client calls one model.
type Client struct {
	cfg  Config
	wire wire
}

// wire is one wire API's request and response shapes.
type wire interface {
	request(ctx context.Context, cfg Config, msgs []Message) (*http.Request, error)
	parse(body []byte) (Reply, error)
}

// New checks cfg and returns its client.
func New(cfg Config) (*Client, error) {
	var w wire
	switch cfg.API {
	case ChatCompletions:
		w = chatWire{}
	case AnthropicMessages:
		w = anthropicWire{}
	default:
		return nil, fmt.Errorf("wire API %q: want %q or %q", cfg.API, ChatCompletions, AnthropicMessages)
	}
	if cfg.BaseURL == "" || !(strings.HasPrefix(cfg.BaseURL, "http://") || strings.HasPrefix(cfg.BaseURL, "https://")) {
		return nil, fmt.Errorf("base URL %q: want an http:// or https:// URL", cfg.BaseURL)
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Model == "" {
		return nil, errors.New("model: required")
	}
	if cfg.Retries < 0 {
		return nil, fmt.Errorf("retries %d: want ≥ 0", cfg.Retries)
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Minute}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, wire: w}, nil
}

// Complete sends the conversation and returns the model's reply, retrying
// what may pass (429, 5xx, no answer) with exponential backoff.
func (c *Client) Complete(ctx context.Context, msgs []Message) (Reply, error) {
	delay := c.cfg.Backoff
	for attempt := 0; ; attempt++ {
		reply, err := c.once(ctx, msgs)
		var e *Error
		if err == nil || !errors.As(err, &e) || e.Kind != KindUnavailable || attempt >= c.cfg.Retries {
			return reply, err
		}
		c.cfg.Logger.WarnContext(ctx, "model call failed; retrying", "attempt", attempt+1, "status", e.Status, "delay", delay)
		select {
		case <-ctx.Done():
			return Reply{}, &Error{Kind: KindUnavailable, Message: ctx.Err().Error()}
		case <-time.After(delay):
		}
		delay *= 2
	}
}

func (c *Client) once(ctx context.Context, msgs []Message) (Reply, error) {
	req, err := c.wire.request(ctx, c.cfg, msgs)
	if err != nil {
		return Reply{}, err
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return Reply{}, &Error{Kind: KindUnavailable, Message: transportMessage(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return Reply{}, &Error{Kind: KindUnavailable, Status: resp.StatusCode, Message: "read reply: " + err.Error()}
	}
	if resp.StatusCode/100 != 2 {
		return Reply{}, classify(resp.StatusCode, body)
	}
	reply, err := c.wire.parse(body)
	if err != nil {
		return Reply{}, &Error{Kind: KindRejected, Status: resp.StatusCode, Message: err.Error()}
	}
	return reply, nil
}

// transportMessage describes a failed round trip without the request URL's
// query (a key could hide there) that *url.Error carries.
func transportMessage(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}

// classify maps an error status and body to an Error.
func classify(status int, body []byte) *Error {
	msg := errorMessage(body)
	e := &Error{Kind: KindRejected, Status: status, Message: msg}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = KindAuth
	case status == http.StatusTooManyRequests || status >= 500 || status == http.StatusRequestTimeout:
		e.Kind = KindUnavailable
	case isContextLength(msg, body):
		e.Kind = KindContextLength
	}
	return e
}

// errorMessage pulls the message out of either provider's error body
// ({"error": {"message"}} for both), else a bounded prefix of the body.
func errorMessage(body []byte) string {
	var b struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &b) == nil && len(b.Error) > 0 {
		var inner struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(b.Error, &inner) == nil && inner.Message != "" {
			return inner.Message
		}
		var s string
		if json.Unmarshal(b.Error, &s) == nil && s != "" {
			return s
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	if s == "" {
		s = "empty error body"
	}
	return s
}

// isContextLength recognises both providers' "the prompt is too long"
// refusals (OpenAI's code context_length_exceeded, Anthropic's "prompt is
// too long", and the wording of OpenAI-compatible servers such as vLLM).
func isContextLength(msg string, body []byte) bool {
	lower := strings.ToLower(msg + " " + string(body))
	for _, s := range []string{"context_length_exceeded", "context length", "prompt is too long",
		"maximum context", "context window", "too many tokens"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

func postJSON(ctx context.Context, url string, body any) (*http.Request, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gauntlet-terminus-2")
	return req, nil
}
