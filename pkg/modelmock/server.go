package modelmock

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Request is one request the mock received, as it arrived.
type Request struct {
	Time   time.Time
	Method string
	// Path is the URL path with its query ("/v1/messages?beta=true").
	Path   string
	Header http.Header
	Body   []byte
	// API is the wire API the path selected ("" for an unknown path).
	API API
	// Turn is the script turn answered, -1 for a failure or a no-tools answer.
	Turn int
	// Status is the HTTP status answered; 0 while the request is held (a
	// hang failure) or not yet answered.
	Status int
}

// Handler serves a Script. It is safe for concurrent use; its script and
// failure can be changed while it serves.
type Handler struct {
	mu       sync.Mutex
	script   Script
	requests []Request
	failed   int // requests answered by the script's failure

	seq  atomic.Int64
	done chan struct{} // closed by Close: releases hanging requests

	arrived int           // requests received, answered or not
	arrival chan struct{} // closed and replaced at each arrival and each answer
	once    sync.Once
}

// NewHandler returns a handler replaying s. It panics on an invalid script:
// callers building scripts in code pass literals; files go through
// LoadScript, which returns the error.
func NewHandler(s Script) *Handler {
	if err := s.Validate(); err != nil {
		panic(fmt.Sprintf("modelmock: invalid script: %v", err))
	}
	return &Handler{script: s, done: make(chan struct{}), arrival: make(chan struct{})}
}

// Arrived is the number of requests received so far, answered or not.
func (h *Handler) Arrived() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.arrived
}

// WaitArrived blocks until n requests have arrived (answered or not: a
// hanging one counts once it is held) or ctx ends.
func (h *Handler) WaitArrived(ctx context.Context, n int) error {
	for {
		h.mu.Lock()
		got, ch := h.arrived, h.arrival
		h.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("modelmock: %d of %d requests arrived: %w", got, n, ctx.Err())
		}
	}
}

// WaitTurn blocks until a request for the script's turn i has been
// answered or, for a hang turn, is being held — so every call before it
// was answered — or ctx ends.
func (h *Handler) WaitTurn(ctx context.Context, i int) error {
	for {
		h.mu.Lock()
		ch := h.arrival
		for _, r := range h.requests {
			if r.Turn == i {
				h.mu.Unlock()
				return nil
			}
		}
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("modelmock: no request reached turn %d: %w", i, ctx.Err())
		}
	}
}

// SetScript replaces the script (and resets the failure count).
func (h *Handler) SetScript(s Script) error {
	if err := s.Validate(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.script, h.failed = s, 0
	return nil
}

// SetFailure makes the following requests fail as f says; nil stops failing.
func (h *Handler) SetFailure(f *Failure) error {
	if f != nil {
		if err := f.validate("failure"); err != nil {
			return err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.script.Failure, h.failed = f, 0
	return nil
}

// Requests returns a copy of the requests received so far, in arrival order.
func (h *Handler) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Request(nil), h.requests...)
}

// Close releases requests held by a hang failure; later hangs return at
// once, so a server can always shut down.
func (h *Handler) Close() {
	h.once.Do(func() { close(h.done) })
}

// ServeHTTP answers one model request. The request is recorded as it
// arrives and its turn and status before the answer is written, so a client
// that has read an answer finds its request in Requests.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	api, ok := routeAPI(r.URL.Path)
	h.mu.Lock()
	idx := len(h.requests)
	h.requests = append(h.requests, Request{Time: time.Now(), Method: r.Method, Path: r.URL.RequestURI(),
		Header: r.Header.Clone(), Body: body, API: api, Turn: -1})
	h.arrived++
	close(h.arrival)
	h.arrival = make(chan struct{})
	h.mu.Unlock()
	h.serve(w, r, api, ok, body, err, func(turn, status int) {
		h.mu.Lock()
		h.requests[idx].Turn, h.requests[idx].Status = turn, status
		close(h.arrival) // a change WaitTurn waits for
		h.arrival = make(chan struct{})
		h.mu.Unlock()
	})
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, api API, known bool, body []byte, readErr error, set func(turn, status int)) {
	turn := -1
	fail := func(status int, msg string) {
		set(turn, status)
		writeJSON(w, status, errorBody(api, status, msg))
	}
	switch {
	case !known:
		fail(http.StatusNotFound, fmt.Sprintf("modelmock: no wire API at %s", r.URL.Path))
		return
	case r.Method != http.MethodPost:
		fail(http.StatusMethodNotAllowed, "modelmock: POST only")
		return
	case readErr != nil:
		fail(http.StatusBadRequest, "modelmock: read body: "+readErr.Error())
		return
	}

	h.mu.Lock()
	s := h.script
	failure := s.Failure
	if failure != nil {
		if failure.Times > 0 && h.failed >= failure.Times {
			failure = nil
		} else {
			h.failed++
		}
	}
	h.mu.Unlock()

	if s.APIKey != "" && !keyMatches(r.Header, s.APIKey) {
		fail(http.StatusUnauthorized, "modelmock: invalid API key")
		return
	}
	if failure != nil {
		if failure.Hang {
			select {
			case <-r.Context().Done():
			case <-h.done:
			}
			return
		}
		if failure.Status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		fail(failure.Status, fmt.Sprintf("modelmock: scripted failure %d", failure.Status))
		return
	}

	p, err := parseRequest(api, r.URL.Path, body)
	if err != nil {
		fail(http.StatusBadRequest, "modelmock: request body is not JSON: "+err.Error())
		return
	}
	n := h.seq.Add(1)
	a := answer{id: strconv.FormatInt(n, 10), model: p.model, callID: fmt.Sprintf("call_%d", n), usage: s.Usage}
	if s.Model != "" {
		a.model = s.Model
	}
	if len(p.tools) == 0 && s.NoToolsText != "" {
		a.text = s.NoToolsText
	} else {
		i := min(p.turns, len(s.Turns)-1)
		turn = i
		t := s.Turns[i]
		if t.Usage != nil {
			a.usage = *t.Usage
		}
		switch {
		case t.Hang:
			set(turn, 0)
			select {
			case <-r.Context().Done():
			case <-h.done:
			}
			return
		case t.Text != "":
			a.text = t.Text
			if name, args, ok := finishCall(p.tools, t.Text); ok {
				a.tool, a.args = name, mustJSON(args)
			}
		case t.Shell != nil:
			name, args, ok := shellCall(p.tools, *t.Shell)
			if !ok {
				fail(http.StatusBadRequest, fmt.Sprintf("modelmock: turn %d calls the shell, but the request offers no shell tool (known: %s)", i, strings.Join(shellTools, ", ")))
				return
			}
			a.tool, a.args = name, mustJSON(args)
		case t.Tool != nil:
			a.tool, a.args = t.Tool.Name, mustJSON(t.Tool.Arguments)
		}
	}

	set(turn, http.StatusOK)
	switch api {
	case Responses:
		a.writeResponses(w, p.stream)
	case Chat:
		a.writeChat(w, p.stream, includeUsage(body))
	case Messages:
		a.writeMessages(w, p.stream)
	case Gemini:
		a.writeGemini(w, p.stream)
	}
}

func includeUsage(body []byte) bool {
	var b struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(body, &b)
	return b.StreamOptions.IncludeUsage
}

func mustJSON(v any) string {
	if v == nil {
		return "{}"
	}
	return string(marshal(v))
}

// keyMatches reports whether the request carries key in any of the three
// places the wire APIs put it.
func keyMatches(h http.Header, key string) bool {
	for _, got := range []string{h.Get("x-api-key"), h.Get("x-goog-api-key"), strings.TrimPrefix(h.Get("Authorization"), "Bearer ")} {
		if got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(key)) == 1 {
			return true
		}
	}
	return false
}

// Server is a Handler served over HTTP on 127.0.0.1, for tests.
type Server struct {
	*Handler
	// URL is the server's base URL, "http://127.0.0.1:PORT" (no /v1).
	URL string
	srv *httptest.Server
}

// NewServer starts a mock on a free loopback port; Close stops it.
func NewServer(s Script) *Server {
	h := NewHandler(s)
	srv := httptest.NewServer(h)
	return &Server{Handler: h, URL: srv.URL, srv: srv}
}

// Close releases hanging requests and stops the server.
func (s *Server) Close() {
	s.Handler.Close()
	s.srv.CloseClientConnections()
	s.srv.Close()
}
