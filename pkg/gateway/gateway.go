// Package gateway is the model gateway: the one way an agent reaches its
// model. It runs outside the sandbox (in the runner process, locally and in
// the Fargate task), listens on a unix socket the runner binds into the
// sandbox (Forward relays a loopback port inside the sandbox's own network
// namespace to it, so it works under network_mode no-network), and takes a
// per-attempt token in place of the key. For each call it checks the token,
// puts the real key where the upstream wants it, forwards the call to the
// provider or endpoint and streams the answer back as it comes.
//
// On the way through it meters the call from the wire protocol itself
// (OpenAI Responses and Chat Completions, Anthropic Messages, Gemini; SSE
// and not), prices it from pkg/prices, records the request and answer
// (redacted: no key, no token) as a JSONL artifact, enforces the attempt's
// token or cost budget and deadline, and classifies failures: the upstream
// refusing the key is the agent's `auth` error, an upstream that stays
// unavailable after retries its `model_unavailable` error, a fault of the
// gateway itself infrastructure's.
//
// Use: Start(ctx, Config) → hand the harness SocketPath (through Forward) or
// URL, and Token as its API key → Close → Totals and Calls for result.json.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/prices"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// Config configures one attempt's gateway.
type Config struct {
	// Route is where calls go (Resolver.Resolve).
	Route Route
	// Key is the real API key; "" sends none (an endpoint without auth).
	Key string
	// SocketPath is the unix socket to listen on; "" makes one in a new
	// temporary directory (removed by Close).
	SocketPath string
	// TCPAddr, when set (e.g. "127.0.0.1:0"), also listens there: for
	// container isolation, where the agent shares the runner's network
	// namespace, and for tests.
	TCPAddr string
	// Limits are the attempt's budget and deadline.
	Limits Limits
	// RecordPath is the JSONL file each call is appended to, redacted; ""
	// keeps calls in memory only.
	RecordPath string
	// Redact lists further secret values no record may hold (the run's
	// [secrets] values, a judge key); the key and token always are.
	Redact []string
	// Retries is how often a call the upstream answers 429 or 5xx (or that
	// cannot reach it) is retried before the harness gets the failure: 0
	// means DefaultRetries, a negative value none.
	Retries int
	// RetryBackoff is the wait before the first retry, doubling after each;
	// a Retry-After of up to MaxRetryAfter is honoured instead. 0 means
	// DefaultRetryBackoff.
	RetryBackoff time.Duration
	// Transport reaches the upstream; nil uses a clone of
	// http.DefaultTransport (which honours HTTPS_PROXY).
	Transport http.RoundTripper
	// Logger gets one line per call; nil discards.
	Logger *slog.Logger
}

// Limits bound an attempt's model use. Zero values are no limit.
type Limits struct {
	// MaxTokens bounds input plus output tokens over the attempt.
	MaxTokens int64
	// MaxCostUSD bounds the attempt's cost (only where calls have a price).
	MaxCostUSD float64
	// Deadline ends every call in flight and refuses new ones.
	Deadline time.Time
}

// Defaults for Config.
const (
	DefaultRetries      = 2
	DefaultRetryBackoff = 500 * time.Millisecond
	MaxRetryAfter       = 20 * time.Second
	// maxRequestBody bounds one harness request.
	maxRequestBody = 32 << 20
	// maxRecordedBody bounds each body kept in the record.
	maxRecordedBody = 8 << 20
)

// Fault kinds: why the gateway holds an attempt's model use failed.
const (
	// FaultAuth: the upstream refused the key (401/403). Agent error, final.
	FaultAuth = "auth"
	// FaultModelUnavailable: 429/5xx or unreachable after retries. Agent error.
	FaultModelUnavailable = "model_unavailable"
	// FaultBudget: the attempt's token or cost budget is spent. Agent error.
	FaultBudget = "budget_exceeded"
	// FaultGateway: the gateway itself failed (its record could not be
	// written). Infrastructure error, retried.
	FaultGateway = "gateway"
)

// Fault is a failure of the attempt's model use the runner reports.
type Fault struct {
	Kind    string `json:"kind"`
	Status  int    `json:"status,omitempty"`
	Message string `json:"message"`
}

// Class is the result's error class for the fault.
func (f Fault) Class() run.ErrorClass {
	if f.Kind == FaultGateway {
		return run.Infra
	}
	return run.AgentError
}

func (f Fault) Error() string { return fmt.Sprintf("model gateway: %s: %s", f.Kind, f.Message) }

// Call is one model call as the gateway saw it: the per-call list of
// result.json.
type Call struct {
	Seq   int       `json:"seq"`
	Start time.Time `json:"start"`
	// DurationMS is from the request to the answer's end;
	// FirstByteMS to the upstream's response headers.
	DurationMS  int64   `json:"duration_ms"`
	FirstByteMS int64   `json:"first_byte_ms,omitempty"`
	API         WireAPI `json:"api"`
	// UpstreamAPI is set when the call was translated to another wire API.
	UpstreamAPI WireAPI `json:"upstream_api,omitempty"`
	// Path is the harness's request path; Upstream the URL it went to.
	Path     string `json:"path"`
	Upstream string `json:"upstream,omitempty"`
	// Model is the model the harness asked for; UpstreamModel the model
	// the answer names.
	Model         string `json:"model,omitempty"`
	UpstreamModel string `json:"upstream_model,omitempty"`
	Status        int    `json:"status"`
	// Attempts counts upstream tries (retries included).
	Attempts int `json:"attempts,omitempty"`
	// Metered says the answer carried usage.
	Metered bool  `json:"metered"`
	Usage   Usage `json:"usage"`
	// CostUSD is set when CostKnown; CostEstimated when it was computed
	// from list prices rather than reported by the provider.
	CostUSD       float64 `json:"cost_usd,omitempty"`
	CostKnown     bool    `json:"cost_known"`
	CostEstimated bool    `json:"cost_estimated,omitempty"`
	Fault         string  `json:"fault,omitempty"`
	Error         string  `json:"error,omitempty"`
}

// Totals sum an attempt's calls.
type Totals struct {
	Calls int   `json:"calls"`
	Usage Usage `json:"usage"`
	// CostUSD sums the calls with a known cost; CostKnown says every
	// metered call had one (false for unpriced endpoint and hosted models).
	CostUSD       float64 `json:"cost_usd"`
	CostKnown     bool    `json:"cost_known"`
	CostEstimated bool    `json:"cost_estimated"`
	// Unmetered counts successful generating calls whose answer carried no
	// usage.
	Unmetered int `json:"unmetered,omitempty"`
}

// Gateway is one attempt's running gateway.
type Gateway struct {
	cfg      Config
	token    string
	socket   string
	tempDir  string
	tcp      net.Listener
	srv      *http.Server
	proxy    *httputil.ReverseProxy
	redactor *redactor
	log      *slog.Logger

	ctx    context.Context // upstream calls; cancelled by Close
	cancel context.CancelFunc
	served sync.WaitGroup // listeners' Serve loops
	active sync.WaitGroup // requests in flight

	mu     sync.Mutex
	seq    int
	calls  []Call
	totals Totals
	// generating and priced count successful generating calls and those
	// with a cost.
	generating, priced int
	sticky             *Fault // budget, gateway: stay once set
	last               *Fault // the latest call's failure, cleared by a later success
	rec                *os.File
	recorder           *recorder
	closed             bool
	closeOnce          sync.Once
}

type stateKey struct{}

// callState follows one call through the proxy.
type callState struct {
	call Call
	op   op
	// upAPI is the upstream's wire API: op.api, or Chat when a Responses
	// call is translated (translate.go).
	upAPI      WireAPI
	translate  bool
	start      time.Time
	body       []byte // the request body sent upstream
	target     *url.URL
	header     http.Header // the harness's request headers, for the record
	meter      *meter
	respHeader http.Header // the upstream answer's headers, as received
	respB      bytes.Buffer
	trunc      bool
	once       sync.Once
	cancel     context.CancelFunc
	attempts   attempts
}

// Start starts a gateway for one attempt. It returns once the gateway
// listens. A failure here is the platform's (an infra error). ctx's values
// are kept, but its end does not stop the gateway: Close does (and the
// deadline in Limits ends calls).
func Start(ctx context.Context, cfg Config) (*Gateway, error) {
	if len(cfg.Route.BaseURLs) == 0 {
		return nil, errors.New("model gateway: the route has no upstream base URL")
	}
	for api, u := range cfg.Route.BaseURLs {
		if err := checkBaseURL(u); err != nil {
			return nil, fmt.Errorf("model gateway: %s base URL: %w", api, err)
		}
	}
	if err := checkHeaders(cfg.Route.Headers); err != nil {
		return nil, fmt.Errorf("model gateway: route headers: %w", err)
	}
	if cfg.Retries == 0 {
		cfg.Retries = DefaultRetries
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	if cfg.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		cfg.Transport = t
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, token: token, log: logger}
	g.redactor = newRedactor(append([]string{token, cfg.Key}, cfg.Redact...))
	g.ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if !cfg.Limits.Deadline.IsZero() {
		g.ctx, g.cancel = context.WithDeadline(context.WithoutCancel(ctx), cfg.Limits.Deadline)
	}

	fail := func(err error) (*Gateway, error) {
		g.shutdown()
		return nil, err
	}
	if cfg.RecordPath != "" {
		f, err := os.OpenFile(cfg.RecordPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return fail(fmt.Errorf("model gateway: open record: %w", err))
		}
		g.rec = f
		g.recorder = newRecorder(g, f)
	}
	g.socket = cfg.SocketPath
	if g.socket == "" {
		dir, err := os.MkdirTemp("", "gauntlet-gateway-")
		if err != nil {
			return fail(fmt.Errorf("model gateway: %w", err))
		}
		g.tempDir = dir
		g.socket = filepath.Join(dir, "gateway.sock")
	} else if err := os.Remove(g.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(fmt.Errorf("model gateway: remove stale socket: %w", err))
	}
	unixLn, err := net.Listen("unix", g.socket)
	if err != nil {
		return fail(fmt.Errorf("model gateway: listen on %s: %w", g.socket, err))
	}
	// The agent may run under a uid of its own; the token, not the mode,
	// is what admits it.
	if err := os.Chmod(g.socket, 0o666); err != nil {
		unixLn.Close()
		return fail(fmt.Errorf("model gateway: %w", err))
	}
	lns := []net.Listener{unixLn}
	if cfg.TCPAddr != "" {
		g.tcp, err = net.Listen("tcp", cfg.TCPAddr)
		if err != nil {
			unixLn.Close()
			return fail(fmt.Errorf("model gateway: listen on %s: %w", cfg.TCPAddr, err))
		}
		lns = append(lns, g.tcp)
	}
	g.proxy = &httputil.ReverseProxy{
		Rewrite:        g.rewrite,
		Transport:      &retrier{base: cfg.Transport, tries: cfg.Retries, backoff: cfg.RetryBackoff},
		FlushInterval:  -1, // every write reaches the harness at once
		ModifyResponse: g.modifyResponse,
		ErrorHandler:   g.proxyError,
		ErrorLog:       log.New(io.Discard, "", 0),
	}
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 30 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	for _, ln := range lns {
		g.served.Add(1)
		go func() {
			defer g.served.Done()
			_ = g.srv.Serve(ln)
		}()
	}
	return g, nil
}

// SocketPath is the unix socket the gateway listens on.
func (g *Gateway) SocketPath() string { return g.socket }

// URL is the gateway's base URL on TCP ("http://127.0.0.1:PORT"), or ""
// when Config.TCPAddr was not set. Harnesses append their API's own path
// (/v1/responses, /v1/messages, /v1beta/models/…).
func (g *Gateway) URL() string {
	if g.tcp == nil {
		return ""
	}
	return "http://" + g.tcp.Addr().String()
}

// Token is the per-attempt token the harness sends as its API key. It is a
// secret: the runner redacts it from everything it stores.
func (g *Gateway) Token() string { return g.token }

// Close ends calls in flight, stops listening, waits for the calls to be
// recorded and closes the record. It is safe to call more than once.
func (g *Gateway) Close() error {
	var err error
	g.closeOnce.Do(func() {
		g.mu.Lock()
		g.closed = true
		g.mu.Unlock()
		g.cancel()
		if g.srv != nil {
			err = g.srv.Close()
			g.served.Wait()
		}
		g.active.Wait()
		err = errors.Join(err, g.shutdown())
	})
	return err
}

func (g *Gateway) shutdown() error {
	g.cancel()
	var err error
	if g.recorder != nil {
		g.recorder.close()
	}
	if g.rec != nil {
		err = g.rec.Close()
	}
	if g.tempDir != "" {
		err = errors.Join(err, os.RemoveAll(g.tempDir))
	} else if g.socket != "" {
		if rerr := os.Remove(g.socket); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// Totals sums the calls so far.
func (g *Gateway) Totals() Totals {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.totals
}

// Usage is the tokens of the calls so far.
func (g *Gateway) Usage() Usage { return g.Totals().Usage }

// Calls returns the calls so far, in the order they ended.
func (g *Gateway) Calls() []Call {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Call(nil), g.calls...)
}

// Fault returns the failure the attempt's model use ended with, or nil: a
// spent budget or a gateway fault, else the failure of the latest call when
// no call succeeded after it (a harness that retried its way past a 429 has
// none).
func (g *Gateway) Fault() *Fault {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.sticky != nil:
		f := *g.sticky
		return &f
	case g.last != nil:
		f := *g.last
		return &f
	}
	return nil
}

// ServeHTTP serves one harness request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.active.Add(1)
	defer g.active.Done()

	o, opErr := parseOp(r.Method, r.URL.Path, g.cfg.Route.Model)
	api := o.api
	if opErr != nil {
		api = guessAPI(r)
	}
	if !g.authorized(r) {
		// Not a call: nothing is forwarded or recorded but a log line.
		g.log.Warn("model gateway: request without the attempt token", "path", r.URL.Path)
		writeError(w, api, http.StatusUnauthorized, "gauntlet model gateway: missing or wrong attempt token")
		return
	}
	if opErr != nil {
		writeError(w, api, http.StatusNotFound, "gauntlet model gateway: "+opErr.Error())
		return
	}
	upAPI, ok := g.cfg.Route.upstreamAPI(o.api)
	if !ok || !o.metered && upAPI != o.api {
		writeError(w, o.api, http.StatusBadRequest, fmt.Sprintf("gauntlet model gateway: model %q is not served over %s", g.cfg.Route.Label, o.api.Title()))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		writeError(w, o.api, http.StatusRequestEntityTooLarge, fmt.Sprintf("gauntlet model gateway: read request: %v", err))
		return
	}

	st := &callState{op: o, upAPI: upAPI, translate: upAPI != o.api, start: time.Now(), header: r.Header.Clone()}
	st.call = Call{Start: st.start, API: o.api, Path: r.URL.Path, Model: requestModel(o, r.URL.Path, body)}
	rest := o.rest
	switch {
	case st.translate:
		model := g.cfg.Route.Model
		if model == "" {
			model = st.call.Model
		}
		st.call.UpstreamAPI, rest = Chat, "/chat/completions"
		if body, _, err = responsesToChat(body, model); err != nil {
			writeError(w, o.api, http.StatusBadRequest, "gauntlet model gateway: "+err.Error())
			return
		}
	case o.bodyModel && g.cfg.Route.Model != "":
		body = setModel(body, g.cfg.Route.Model)
	}
	if upAPI == Chat {
		body = includeUsage(body)
	}
	st.body = body

	if msg, status, kind := g.refusal(); msg != "" {
		st.call.Status, st.call.Error, st.call.Fault = status, msg, kind
		writeError(w, o.api, status, "gauntlet model gateway: "+msg)
		g.finish(st, nil)
		return
	}

	target, err := url.Parse(g.cfg.Route.BaseURLs[upAPI] + rest)
	if err != nil {
		g.gatewayFault(fmt.Errorf("upstream URL: %w", err))
		writeError(w, o.api, http.StatusBadGateway, "gauntlet model gateway: bad upstream URL")
		return
	}
	q := r.URL.Query()
	q.Del("key") // Gemini clients may send the key (our token) as ?key=
	target.RawQuery = q.Encode()
	st.target = target
	st.call.Upstream = target.Scheme + "://" + target.Host + target.Path

	ctx, cancel := context.WithCancel(g.ctx)
	st.cancel = cancel
	stop := context.AfterFunc(r.Context(), cancel) // the harness hung up
	defer stop()
	defer cancel()
	out := r.Clone(context.WithValue(ctx, stateKey{}, st))
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	g.proxy.ServeHTTP(w, out)
	// A body the proxy never read to its end (the harness hung up) is
	// finished here; finish runs once.
	g.finish(st, r.Context().Err())
}

// rewrite shapes the upstream request: target URL, no harness credentials,
// the real key, the route's headers.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	st := pr.In.Context().Value(stateKey{}).(*callState)
	pr.Out.URL = st.target
	pr.Out.Host = st.target.Host
	for _, h := range authHeaders {
		pr.Out.Header.Del(h)
	}
	// Let the transport negotiate compression so it decompresses for the
	// meter; the harness gets the answer uncompressed.
	pr.Out.Header.Del("Accept-Encoding")
	pr.Out.Header.Del("Cookie")
	for k, v := range g.cfg.Route.Headers {
		pr.Out.Header.Set(k, v)
	}
	if g.cfg.Key != "" {
		st.upAPI.setKey(pr.Out.Header, g.cfg.Key)
	}
}

func (g *Gateway) modifyResponse(resp *http.Response) error {
	st := resp.Request.Context().Value(stateKey{}).(*callState)

	// The record reads the upstream's headers on its own goroutine; the proxy
	// and the translation go on using resp.Header.
	st.respHeader = resp.Header.Clone()
	st.call.Status = resp.StatusCode
	st.call.FirstByteMS = time.Since(st.start).Milliseconds()
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if st.op.metered && resp.StatusCode/100 == 2 {
		st.meter = newMeter(st.upAPI, sse)
	}
	t := &tap{rc: resp.Body, st: st, g: g}
	resp.Body = t
	if st.translate && resp.StatusCode/100 == 2 {
		return g.translateAnswer(resp, t, sse)
	}
	return nil
}

// translateAnswer turns the upstream's Chat answer into the Responses
// answer the harness expects: a stream through a pipe as it arrives, a
// whole answer at once.
func (g *Gateway) translateAnswer(resp *http.Response, t *tap, sse bool) error {
	model := g.cfg.Route.Model
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	if !sse {
		b, err := io.ReadAll(io.LimitReader(t, maxJSONBody))
		t.Close()
		if err != nil {
			return fmt.Errorf("read upstream answer: %w", err)
		}
		out, err := chatToResponsesJSON(b, model)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(out))
		resp.ContentLength = int64(len(out))
		resp.Header.Set("Content-Type", "application/json")
		return nil
	}
	pr, pw := io.Pipe()
	go func() {
		err := translateChatStream(t, pw, func() {}, model)
		t.Close()
		pw.CloseWithError(err)
	}()
	resp.Body = &pipeBody{pr: pr, upstream: t}
	resp.Header.Set("Content-Type", "text/event-stream")
	return nil
}

// pipeBody is a translated answer; closing it stops the translation.
type pipeBody struct {
	pr       *io.PipeReader
	upstream io.Closer
}

func (p *pipeBody) Read(b []byte) (int, error) { return p.pr.Read(b) }

func (p *pipeBody) Close() error {
	p.pr.Close()
	return p.upstream.Close()
}

// proxyError answers when the upstream could not be reached (after the
// retries) or the call was cut by the deadline or Close.
func (g *Gateway) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	st := r.Context().Value(stateKey{}).(*callState)
	status := http.StatusBadGateway
	switch {
	case errors.Is(err, context.DeadlineExceeded) && g.pastDeadline():
		status = http.StatusGatewayTimeout
		st.call.Error = "the attempt's deadline passed during the call"
	case g.isClosed():
		status = http.StatusServiceUnavailable
		st.call.Error = "the attempt ended during the call"
	case r.Context().Err() != nil && !errors.Is(g.ctx.Err(), context.Canceled):
		st.call.Error = "the harness hung up"
	default:
		st.call.Error = "upstream unreachable: " + g.redactor.string(err.Error())
		st.call.Fault = FaultModelUnavailable
	}
	st.call.Status = status
	writeError(w, st.op.api, status, "gauntlet model gateway: "+st.call.Error)
	g.finish(st, nil)
}

// tap meters and records an answer on its way to the harness.
type tap struct {
	rc io.ReadCloser
	st *callState
	g  *Gateway
}

func (t *tap) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 {
		if t.st.meter != nil {
			_, _ = t.st.meter.Write(p[:n])
		}
		if room := maxRecordedBody - t.st.respB.Len(); room > 0 {
			t.st.respB.Write(p[:min(n, room)])
			t.st.trunc = t.st.trunc || n > room
		} else {
			t.st.trunc = true
		}
	}
	if err != nil {
		var cut error
		if !errors.Is(err, io.EOF) {
			cut = err
		}
		t.g.finish(t.st, cut)
	}
	return n, err
}

func (t *tap) Close() error {
	err := t.rc.Close()
	t.g.finish(t.st, nil)
	return err
}

// finish records a call once: usage, cost, classification, totals, the
// JSONL line. cut is an error that ended the answer early.
func (g *Gateway) finish(st *callState, cut error) {
	st.once.Do(func() { g.record(st, cut) })
}

func (g *Gateway) record(st *callState, cut error) {
	c := &st.call
	c.DurationMS = time.Since(st.start).Milliseconds()
	c.Attempts = st.attemptsDone()
	if cut != nil && c.Error == "" {
		c.Error = "answer cut short: " + g.redactor.string(cut.Error())
	}
	if m := st.meter; m != nil {
		m.finish()
		c.Metered = m.found
		c.Usage = m.usage
		c.UpstreamModel = m.model
		switch {
		case m.costFound:
			c.CostUSD, c.CostKnown = m.cost, true
		case g.cfg.Route.PriceProvider != "":
			c.CostUSD, c.CostEstimated, c.CostKnown = g.price(c)
		}
	}
	if c.Fault == "" {
		switch s := c.Status; {
		case s == http.StatusUnauthorized || s == http.StatusForbidden:
			c.Fault = FaultAuth
		case s == http.StatusTooManyRequests || s >= 500 && c.Error == "":
			c.Fault = FaultModelUnavailable
		}
	}

	g.mu.Lock()
	g.seq++
	c.Seq = g.seq
	g.calls = append(g.calls, *c)
	t := &g.totals
	t.Calls++
	t.Usage = t.Usage.Add(c.Usage)
	if st.op.metered && c.Status/100 == 2 {
		if !c.Metered {
			t.Unmetered++
		}
		g.generating++
		if c.CostKnown {
			g.priced++
			t.CostUSD += c.CostUSD
			t.CostEstimated = t.CostEstimated || c.CostEstimated
		}
		t.CostKnown = g.priced == g.generating
	}
	switch {
	case c.Fault == FaultBudget:
		g.sticky = &Fault{Kind: c.Fault, Status: c.Status, Message: c.Error}
	case c.Fault != "":
		g.last = &Fault{Kind: c.Fault, Status: c.Status, Message: faultMessage(c, st)}
	case c.Status/100 == 2 && st.op.metered:
		g.last = nil
	}
	if g.recorder != nil {
		g.recorder.push(st) // under g.mu: lines keep the calls' order
	}
	g.mu.Unlock()
	g.log.Info("model call", "seq", c.Seq, "api", c.API, "status", c.Status, "ms", c.DurationMS,
		"input", c.Usage.Input, "cached", c.Usage.Cached, "output", c.Usage.Output, "fault", c.Fault)
}

func faultMessage(c *Call, st *callState) string {
	if c.Error != "" {
		return c.Error
	}
	msg := fmt.Sprintf("the upstream answered %d %s", c.Status, http.StatusText(c.Status))
	if c.Attempts > 1 {
		msg += fmt.Sprintf(" (after %d tries)", c.Attempts)
	}
	if b := strings.TrimSpace(st.respB.String()); b != "" && len(b) < 500 {
		msg += ": " + b
	}
	return msg
}

func (g *Gateway) price(c *Call) (float64, bool, bool) {
	u := prices.Usage{Input: c.Usage.Input, CacheRead: c.Usage.Cached, CacheWrite: c.Usage.CacheWrite,
		Output: c.Usage.Output, Reasoning: c.Usage.Reasoning, Requests: 1}
	for _, m := range []string{g.cfg.Route.Model, c.UpstreamModel} {
		if m == "" {
			continue
		}
		if usd, _, ok := prices.PriceAt(g.cfg.Route.PriceProvider, m, u, c.Start); ok {
			return usd, true, true
		}
	}
	return 0, false, false
}

// refusal says whether a new call is refused: past the deadline, or the
// budget spent.
func (g *Gateway) refusal() (msg string, status int, kind string) {
	if g.pastDeadline() {
		return "the attempt's deadline has passed", http.StatusGatewayTimeout, ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	l, t := g.cfg.Limits, g.totals
	switch {
	case l.MaxTokens > 0 && t.Usage.Total() >= l.MaxTokens:
		return fmt.Sprintf("the attempt's token budget is spent (%d of %d tokens)", t.Usage.Total(), l.MaxTokens), http.StatusBadRequest, FaultBudget
	case l.MaxCostUSD > 0 && t.CostUSD >= l.MaxCostUSD:
		return fmt.Sprintf("the attempt's cost budget is spent ($%.4f of $%.4f)", t.CostUSD, l.MaxCostUSD), http.StatusBadRequest, FaultBudget
	}
	return "", 0, ""
}

func (g *Gateway) pastDeadline() bool {
	d := g.cfg.Limits.Deadline
	return !d.IsZero() && !time.Now().Before(d)
}

func (g *Gateway) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

func (g *Gateway) gatewayFault(err error) {
	g.log.Error("model gateway fault", "err", err)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sticky == nil || g.sticky.Kind != FaultGateway {
		g.sticky = &Fault{Kind: FaultGateway, Message: err.Error()}
	}
}

// authorized checks the attempt token wherever the harness's API puts its
// key, in constant time.
func (g *Gateway) authorized(r *http.Request) bool {
	cands := []string{
		strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "),
		r.Header.Get("X-Api-Key"),
		r.Header.Get("X-Goog-Api-Key"),
		r.URL.Query().Get("key"),
	}
	ok := 0
	for _, c := range cands {
		ok |= subtle.ConstantTimeCompare([]byte(c), []byte(g.token))
	}
	return ok == 1
}

func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("model gateway: token: %w", err)
	}
	return "gw-" + base64.RawURLEncoding.EncodeToString(b), nil
}

// requestModel is the model the harness asked for.
func requestModel(o op, path string, body []byte) string {
	if o.api == Gemini {
		if i := strings.LastIndex(path, "/models/"); i >= 0 {
			m, _, _ := strings.Cut(path[i+len("/models/"):], ":")
			return m
		}
		return ""
	}
	if _, _, m, ok := topLevelString(body, "model"); ok {
		return m
	}
	var b struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Model
}

// setModel puts model into a JSON body's "model" field when it differs,
// leaving every other byte as it was (providers' prompt caches key on the
// prompt, and the record shows what the harness sent).
func setModel(body []byte, model string) []byte {
	want, _ := json.Marshal(model)
	if s, e, cur, ok := topLevelString(body, "model"); ok {
		if cur == model {
			return body
		}
		out := make([]byte, 0, len(body)+len(want))
		out = append(append(append(out, body[:s]...), want...), body[e:]...)
		return out
	}
	// No plain "model" string: decode to set it.
	var b map[string]json.RawMessage
	if json.Unmarshal(body, &b) != nil {
		return body
	}
	b["model"] = want
	out, err := json.Marshal(b)
	if err != nil {
		return body
	}
	return out
}

// includeUsage asks a streamed Chat Completions call for its usage chunk
// (stream_options.include_usage) when the harness did not, so every call is
// metered: without it the stream carries no usage at all. OpenAI's clients
// accept the extra chunk (empty choices) the option adds.
func includeUsage(body []byte) []byte {
	s, e, ok := topLevelValue(body, "stream")
	if !ok || string(body[s:e]) != "true" {
		return body
	}
	if s, e, ok := topLevelValue(body, "stream_options"); ok {
		var opts map[string]json.RawMessage
		if json.Unmarshal(body[s:e], &opts) != nil || string(opts["include_usage"]) == "true" {
			return body
		}
		opts["include_usage"] = json.RawMessage("true")
		v, err := json.Marshal(opts)
		if err != nil {
			return body
		}
		return append(append(append(make([]byte, 0, len(body)+24), body[:s]...), v...), body[e:]...)
	}
	i := bytes.IndexByte(body, '{') + 1 // topLevelValue found an object
	return append(append(append(make([]byte, 0, len(body)+40), body[:i]...), `"stream_options":{"include_usage":true},`...), body[i:]...)
}

// guessAPI picks the error shape for a request that is not a model call.
func guessAPI(r *http.Request) WireAPI {
	switch {
	case r.Header.Get("X-Api-Key") != "" || r.Header.Get("Anthropic-Version") != "":
		return Messages
	case r.Header.Get("X-Goog-Api-Key") != "" || strings.Contains(r.URL.Path, "/models/"):
		return Gemini
	}
	return Chat
}

// writeError answers in the API's own error shape, so the harness reports
// the gateway's message as it would the provider's.
func writeError(w http.ResponseWriter, api WireAPI, status int, msg string) {
	var body any
	switch api {
	case Messages:
		typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}[status]
		if typ == "" {
			typ = "api_error"
		}
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	case Gemini:
		st := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}[status]
		if st == "" {
			st = "INTERNAL"
		}
		body = map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}}
	default:
		body = map[string]any{"error": map[string]any{"message": msg, "type": "gauntlet_gateway", "code": http.StatusText(status)}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
