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

	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

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
	upAPI      wireapi.API
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
