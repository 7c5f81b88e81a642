package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/internal/fixtures"
	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
	"github.com/gauntlet-bench/gauntlet/pkg/prices"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

const realKey = "sk-real-provider-key-0123456789"

// mockRoute points every wire API at a mock model.
func mockRoute(base, model, priceProvider string) gateway.Route {
	return gateway.Route{
		BaseURLs: map[wireapi.API]string{
			wireapi.Responses: base + "/v1",
			wireapi.Chat:      base + "/v1",
			wireapi.Messages:  base + "/v1",
			wireapi.Gemini:    base + "/v1beta",
		},
		Model: model, PriceProvider: priceProvider, Label: "test/" + model,
	}
}

func start(t *testing.T, cfg gateway.Config) *gateway.Gateway {
	t.Helper()
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = time.Millisecond
	}
	if cfg.RecordPath == "" {
		cfg.RecordPath = filepath.Join(t.TempDir(), "calls.jsonl")
	}
	g, err := gateway.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// unixClient talks HTTP over the gateway's socket, as the forwarder does.
func unixClient(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		},
	}}
}

type fixture struct {
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

func loadFixture(t *testing.T, name string) fixture {
	t.Helper()
	p, err := fixtures.Path("agent-wire/" + name)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// call sends a recorded request of a real program through the gateway with
// the attempt token where that program puts its key.
func call(t *testing.T, c *http.Client, base, token string, f fixture) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+f.Path, bytes.NewReader(f.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	switch {
	case strings.Contains(f.Path, "/messages"):
		req.Header.Set("x-api-key", token)
		req.Header.Set("anthropic-version", "2023-06-01")
	case strings.Contains(f.Path, ":streamGenerateContent"), strings.Contains(f.Path, ":generateContent"):
		req.Header.Set("x-goog-api-key", token)
	default:
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
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

// TestRealProgramsThroughGateway sends each program's recorded requests
// through the gateway to the mock: the answer streams back, the mock got
// the real key (it refuses anything else) and the pinned model, never the
// token; the gateway metered exactly the usage the mock sent, priced it, and
// recorded every call without key or token.
func TestRealProgramsThroughGateway(t *testing.T) {
	script := modelmock.DefaultScript()
	script.APIKey = realKey
	cases := []struct {
		name, file, model, priceProvider string
	}{
		{"codex", "codex/0003-ok-POST.json", "gpt-5", "openai"},
		{"claude", "claude/0035-ok-POST.json", "claude-sonnet-4-5", "anthropic"},
		{"gemini", "gemini/0064-ok-POST.json", "gemini-2.5-flash", "google"},
		{"opencode", "opencode/0072-ok-POST.json", "my-finetune", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mock := modelmock.NewServer(script)
			defer mock.Close()
			rec := filepath.Join(t.TempDir(), "calls.jsonl")
			g := start(t, gateway.Config{Route: mockRoute(mock.URL, c.model, c.priceProvider), Key: realKey, RecordPath: rec})
			f := loadFixture(t, c.file)
			resp, body := call(t, unixClient(g.SocketPath()), "http://gateway", g.Token(), f)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if !bytes.Contains(body, []byte("echo hello > /app/out.txt")) {
				t.Errorf("answer lacks the tool call: %s", body)
			}

			reqs := mock.Requests()
			if len(reqs) != 1 {
				t.Fatalf("mock got %d requests", len(reqs))
			}
			got := reqs[0]
			if c.name == "gemini" {
				if !strings.Contains(got.Path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse") {
					t.Errorf("upstream path %s, want the pinned model", got.Path)
				}
			} else {
				var b struct{ Model string }
				if err := json.Unmarshal(got.Body, &b); err != nil || b.Model != c.model {
					t.Errorf("upstream body's model %q, want %q (%v)", b.Model, c.model, err)
				}
			}
			for k, vs := range got.Header {
				for _, v := range vs {
					if strings.Contains(v, g.Token()) {
						t.Errorf("upstream header %s carries the attempt token", k)
					}
				}
			}

			w := script.Usage
			want := gateway.Usage{Input: int64(w.Input), Cached: int64(w.Cached), Output: int64(w.Output), Reasoning: int64(w.Reasoning)}
			if c.name == "claude" {
				want.Reasoning = 0 // Anthropic's usage has no reasoning count
			}
			if c.name == "opencode" {
				want.Reasoning = int64(w.Reasoning)
			}
			tot := g.Totals()
			if tot.Usage != want || tot.Calls != 1 {
				t.Errorf("totals %+v, want usage %+v in 1 call", tot, want)
			}
			calls := g.Calls()
			if len(calls) != 1 || !calls[0].Metered || calls[0].Status != 200 || calls[0].Attempts != 1 {
				t.Fatalf("calls %+v", calls)
			}
			if c.priceProvider == "" {
				if tot.CostKnown || calls[0].CostKnown {
					t.Errorf("an endpoint model got a cost: %+v", tot)
				}
			} else {
				usd, _, ok := prices.Price(c.priceProvider, c.model, prices.Usage{Input: want.Input, CacheRead: want.Cached, Output: want.Output, Reasoning: want.Reasoning})
				if !ok || !tot.CostKnown || !tot.CostEstimated || math.Abs(tot.CostUSD-usd) > 1e-12 || usd <= 0 {
					t.Errorf("cost %+v, want %v estimated", tot, usd)
				}
			}
			if g.Fault() != nil {
				t.Errorf("fault %v on a good call", g.Fault())
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(data, []byte("\n")); n != 1 {
				t.Errorf("record has %d lines, want 1", n)
			}
			for _, secret := range []string{realKey, g.Token()} {
				if bytes.Contains(data, []byte(secret)) {
					t.Errorf("record holds a secret")
				}
			}
			var line struct {
				Call     gateway.Call
				Request  struct{ Body json.RawMessage }
				Response struct{ Body string }
			}
			if err := json.Unmarshal(data, &line); err != nil {
				t.Fatal(err)
			}
			if line.Call.Usage != want || len(line.Request.Body) == 0 || !strings.Contains(line.Response.Body, "echo hello") {
				t.Errorf("record line %+v", line.Call)
			}
		})
	}
}

func TestNonStreamingMetered(t *testing.T) {
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	g := start(t, gateway.Config{Route: mockRoute(mock.URL, "gpt-5", "openai"), TCPAddr: "127.0.0.1:0"})
	for _, f := range []fixture{
		{Path: "/v1/chat/completions", Body: json.RawMessage(`{"model":"x","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{}}}}}]}`)},
		{Path: "/v1/responses", Body: json.RawMessage(`{"model":"x","input":[],"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{}}}}]}`)},
		{Path: "/v1/messages", Body: json.RawMessage(`{"model":"x","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{}}}}]}`)},
		{Path: "/v1beta/models/x:generateContent", Body: json.RawMessage(`{"contents":[],"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object","properties":{"command":{}}}}]}]}`)},
	} {
		resp, body := call(t, http.DefaultClient, g.URL(), g.Token(), f)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %s", f.Path, resp.StatusCode, body)
		}
	}
	for _, c := range g.Calls() {
		if !c.Metered || c.Usage.Input != 1234 || c.Usage.Cached != 1000 || c.Usage.Output != 56 {
			t.Errorf("call %s: %+v", c.Path, c)
		}
	}
	if n := g.Totals().Calls; n != 4 {
		t.Errorf("%d calls", n)
	}
}

// TestStreamsUnbuffered holds the upstream's answer after its first event:
// the harness must get that event before the upstream goes on.
func TestStreamsUnbuffered(t *testing.T) {
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7}}\n\n")
	}))
	defer upstream.Close()
	g := start(t, gateway.Config{Route: mockRoute(upstream.URL, "m", ""), TCPAddr: "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL()+"/v1/messages", strings.NewReader(`{"model":"m","stream":true}`))
	req.Header.Set("x-api-key", g.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	if err != nil || line != "event: message_start\n" {
		t.Fatalf("first line %q, %v: the gateway held the stream back", line, err)
	}
	close(release)
	rest, _ := io.ReadAll(r)
	if !strings.Contains(string(rest), "message_delta") {
		t.Errorf("rest of stream: %q", rest)
	}
	resp.Body.Close()
	g.Close()
	if u := g.Usage(); u.Input != 10 || u.Output != 7 {
		t.Errorf("usage %+v, want input 10 output 7", u)
	}
}

func TestFaults(t *testing.T) {
	claude := loadFixture(t, "claude/0035-ok-POST.json")
	cases := []struct {
		name       string
		failure    modelmock.Failure
		wantStatus int
		wantFault  string
		wantTries  int
	}{
		{"401 is auth", modelmock.Failure{Status: 401}, 401, gateway.FaultAuth, 1},
		{"403 is auth", modelmock.Failure{Status: 403}, 403, gateway.FaultAuth, 1},
		{"429 retried away", modelmock.Failure{Status: 429, Times: 2}, 200, "", 3},
		{"500 after retries", modelmock.Failure{Status: 500}, 500, gateway.FaultModelUnavailable, 3},
		{"429 after retries", modelmock.Failure{Status: 429}, 429, gateway.FaultModelUnavailable, 3},
		{"400 is the harness's", modelmock.Failure{Status: 400}, 400, "", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := modelmock.DefaultScript()
			s.Failure = &c.failure
			mock := modelmock.NewServer(s)
			defer mock.Close()
			g := start(t, gateway.Config{Route: mockRoute(mock.URL, "claude-sonnet-4-5", "anthropic"), Retries: 2})
			resp, body := call(t, unixClient(g.SocketPath()), "http://gateway", g.Token(), claude)
			if resp.StatusCode != c.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.wantStatus, body)
			}
			calls := g.Calls()
			if len(calls) != 1 || calls[0].Attempts != c.wantTries || calls[0].Fault != c.wantFault {
				t.Errorf("calls %+v, want %d tries, fault %q", calls, c.wantTries, c.wantFault)
			}
			f := g.Fault()
			switch {
			case c.wantFault == "" && f != nil:
				t.Errorf("Fault() = %v, want none", f)
			case c.wantFault != "" && (f == nil || f.Kind != c.wantFault || f.Class() != run.AgentError || f.Status != c.wantStatus):
				t.Errorf("Fault() = %+v, want %s (agent error)", f, c.wantFault)
			}
		})
	}
}

// TestRecoveredFaultClears: a failure followed by a good call leaves no fault.
func TestRecoveredFaultClears(t *testing.T) {
	s := modelmock.DefaultScript()
	s.Failure = &modelmock.Failure{Status: 503, Times: 1}
	mock := modelmock.NewServer(s)
	defer mock.Close()
	g := start(t, gateway.Config{Route: mockRoute(mock.URL, "m", ""), Retries: -1})
	c := unixClient(g.SocketPath())
	f := loadFixture(t, "codex/0003-ok-POST.json")
	if resp, _ := call(t, c, "http://gw", g.Token(), f); resp.StatusCode != 503 {
		t.Fatalf("first call %d, want 503 (no retries)", resp.StatusCode)
	}
	if g.Fault() == nil || g.Fault().Kind != gateway.FaultModelUnavailable {
		t.Fatalf("after 503: %v", g.Fault())
	}
	if resp, _ := call(t, c, "http://gw", g.Token(), f); resp.StatusCode != 200 {
		t.Fatalf("second call %d", resp.StatusCode)
	}
	if g.Fault() != nil {
		t.Errorf("after a good call: %v", g.Fault())
	}
}

func TestDeadEndpointEndsAtDeadline(t *testing.T) {
	s := modelmock.DefaultScript()
	s.Failure = &modelmock.Failure{Hang: true}
	mock := modelmock.NewServer(s)
	defer mock.Close()
	g := start(t, gateway.Config{Route: mockRoute(mock.URL, "m", ""), Limits: gateway.Limits{Deadline: time.Now().Add(300 * time.Millisecond)}})
	resp, body := call(t, unixClient(g.SocketPath()), "http://gw", g.Token(), loadFixture(t, "codex/0003-ok-POST.json"))
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	// New calls past the deadline are refused without reaching the upstream.
	n := mock.Arrived()
	if resp, _ := call(t, unixClient(g.SocketPath()), "http://gw", g.Token(), loadFixture(t, "codex/0003-ok-POST.json")); resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("after the deadline: %d", resp.StatusCode)
	}
	if mock.Arrived() != n {
		t.Error("a call past the deadline reached the upstream")
	}
	if calls := g.Calls(); len(calls) != 2 || calls[0].Fault != "" {
		t.Errorf("calls %+v", calls)
	}
}

// TestCloseEndsHangingCall: Close returns while the upstream never answers,
// and the harness gets an answer instead of hanging.
func TestCloseEndsHangingCall(t *testing.T) {
	s := modelmock.DefaultScript()
	s.Failure = &modelmock.Failure{Hang: true}
	mock := modelmock.NewServer(s)
	defer mock.Close()
	g := start(t, gateway.Config{Route: mockRoute(mock.URL, "m", ""), TCPAddr: "127.0.0.1:0"})
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, g.URL()+"/v1/responses", strings.NewReader(`{"model":"m","stream":true}`))
		req.Header.Set("Authorization", "Bearer "+g.Token())
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := mock.WaitArrived(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	<-errc // either an answer or a closed connection: not a hang
	if calls := g.Calls(); len(calls) != 1 {
		t.Errorf("calls %+v, want the cut call recorded", calls)
	}
}

func TestTokenChecked(t *testing.T) {
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	g := start(t, gateway.Config{Route: mockRoute(mock.URL, "m", ""), Key: realKey})
	f := loadFixture(t, "claude/0035-ok-POST.json")
	for _, tok := range []string{"", "wrong", g.Token()[:len(g.Token())-1], realKey} {
		resp, _ := call(t, unixClient(g.SocketPath()), "http://gw", tok, f)
		if resp.StatusCode != 401 {
			t.Errorf("token %q: status %d, want 401", tok, resp.StatusCode)
		}
	}
	if n := len(mock.Requests()); n != 0 {
		t.Errorf("the upstream got %d requests without the token", n)
	}
	if n := len(g.Calls()); n != 0 {
		t.Errorf("%d calls recorded", n)
	}
}

func TestBudget(t *testing.T) {
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	g := start(t, gateway.Config{Route: mockRoute(mock.URL, "m", ""), Limits: gateway.Limits{MaxTokens: 2000}})
	c := unixClient(g.SocketPath())
	f := loadFixture(t, "opencode/0072-ok-POST.json")
	if resp, _ := call(t, c, "http://gw", g.Token(), f); resp.StatusCode != 200 {
		t.Fatalf("first call %d", resp.StatusCode) // 1,290 tokens, under 2,000
	}
	if resp, _ := call(t, c, "http://gw", g.Token(), f); resp.StatusCode != 200 {
		t.Fatalf("second call %d", resp.StatusCode) // starts at 1,290, under 2,000
	}
	resp, body := call(t, c, "http://gw", g.Token(), f)
	if resp.StatusCode != 400 || !strings.Contains(string(body), "token budget") {
		t.Fatalf("third call %d %s, want the budget refusal", resp.StatusCode, body)
	}
	if f := g.Fault(); f == nil || f.Kind != gateway.FaultBudget || f.Class() != run.AgentError {
		t.Errorf("Fault() = %v", f)
	}
	if n := len(mock.Requests()); n != 2 {
		t.Errorf("upstream got %d calls, want 2", n)
	}
}

func TestCostBudget(t *testing.T) {
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	g := start(t, gateway.Config{Route: mockRoute(mock.URL, "claude-sonnet-4-5", "anthropic"), Limits: gateway.Limits{MaxCostUSD: 0.0001}})
	c := unixClient(g.SocketPath())
	f := loadFixture(t, "claude/0035-ok-POST.json")
	call(t, c, "http://gw", g.Token(), f)
	if resp, _ := call(t, c, "http://gw", g.Token(), f); resp.StatusCode != 400 {
		t.Errorf("after the cost budget: %d", resp.StatusCode)
	}
}

func TestUnreachableUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	g := start(t, gateway.Config{Route: mockRoute("http://"+addr, "m", ""), Retries: 1})
	resp, _ := call(t, unixClient(g.SocketPath()), "http://gw", g.Token(), loadFixture(t, "gemini/0064-ok-POST.json"))
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502", resp.StatusCode)
	}
	if f := g.Fault(); f == nil || f.Kind != gateway.FaultModelUnavailable {
		t.Errorf("Fault() = %v", f)
	}
	if c := g.Calls(); len(c) != 1 || c[0].Attempts != 2 {
		t.Errorf("calls %+v, want 2 tries", c)
	}
}

// TestRecordRedactsConversation: an agent that printed its environment puts
// the token into the conversation; the record holds it in no form.
func TestRecordRedactsConversation(t *testing.T) {
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	rec := filepath.Join(t.TempDir(), "calls.jsonl")
	extra := "judge-key-abcdef123456"
	g := start(t, gateway.Config{Route: mockRoute(mock.URL, "m", ""), RecordPath: rec, Redact: []string{extra}})
	tok := g.Token()
	leak := strings.Join([]string{
		"OPENAI_API_KEY=" + tok, base64.StdEncoding.EncodeToString([]byte("x=" + tok + "\n")),
		base64.URLEncoding.EncodeToString([]byte(tok)), hex.EncodeToString([]byte(tok)), extra,
	}, " ")
	body, _ := json.Marshal(map[string]any{"model": "m", "stream": true, "messages": []any{
		map[string]any{"role": "user", "content": "hi"},
		map[string]any{"role": "tool", "content": leak},
	}})
	call(t, unixClient(g.SocketPath()), "http://gw", tok, fixture{Path: "/v1/chat/completions", Body: body})
	g.Close()
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{tok, base64.StdEncoding.EncodeToString([]byte(tok))[:20], hex.EncodeToString([]byte(tok)), extra,
		base64.RawURLEncoding.EncodeToString([]byte(tok))[:20]} {
		if bytes.Contains(data, []byte(s)) {
			t.Errorf("record holds %q", s)
		}
	}
	// The leaked base64 at an odd alignment is caught too.
	enc := base64.StdEncoding.EncodeToString([]byte("x=" + tok + "\n"))
	if bytes.Contains(data, []byte(enc[4:24])) {
		t.Errorf("record holds the token base64-encoded inside a longer text")
	}
	if !bytes.Contains(data, []byte(gateway.Redacted)) {
		t.Error("nothing was redacted")
	}
}

// TestChatStreamWithoutUsageOption: a harness that streams Chat Completions
// without stream_options.include_usage is still metered.
func TestChatStreamWithoutUsageOption(t *testing.T) {
	mock := modelmock.NewServer(modelmock.DefaultScript())
	defer mock.Close()
	g := start(t, gateway.Config{Route: mockRoute(mock.URL, "m", "")})
	body := json.RawMessage(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{}}}}}]}`)
	resp, b := call(t, unixClient(g.SocketPath()), "http://gw", g.Token(), fixture{Path: "/v1/chat/completions", Body: body})
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"usage":{`)) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if c := g.Calls(); len(c) != 1 || !c[0].Metered || c[0].Usage.Input != 1234 {
		t.Errorf("calls %+v", c)
	}
}
