package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

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
		st.call.UpstreamAPI, rest = wireapi.Chat, "/chat/completions"
		if body, _, err = responsesToChat(body, model); err != nil {
			writeError(w, o.api, http.StatusBadRequest, "gauntlet model gateway: "+err.Error())
			return
		}
	case o.bodyModel && g.cfg.Route.Model != "":
		body = setModel(body, g.cfg.Route.Model)
	}
	if upAPI == wireapi.Chat {
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
		setKey(st.upAPI, pr.Out.Header, g.cfg.Key)
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
