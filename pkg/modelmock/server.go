package modelmock

import (
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
	// Status is the HTTP status answered; 0 when the request hung.
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
	once sync.Once
}

// NewHandler returns a handler replaying s. It panics on an invalid script:
// callers building scripts in code pass literals; files go through
// LoadScript, which returns the error.
func NewHandler(s Script) *Handler {
	if err := s.Validate(); err != nil {
		panic(fmt.Sprintf("modelmock: invalid script: %v", err))
	}
	return &Handler{script: s, done: make(chan struct{})}
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

// ServeHTTP answers one model request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body, Turn: -1}
	api, ok := routeAPI(r.URL.Path)
	rec.API = api
	status := h.serve(w, r, rec.API, ok, body, err, &rec)
	rec.Status = status
	h.mu.Lock()
	h.requests = append(h.requests, rec)
	h.mu.Unlock()
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, api API, known bool, body []byte, readErr error, rec *Request) int {
	fail := func(status int, msg string) int {
		writeJSON(w, status, errorBody(api, status, msg))
		return status
	}
	switch {
	case !known:
		return fail(http.StatusNotFound, fmt.Sprintf("modelmock: no wire API at %s", r.URL.Path))
	case r.Method != http.MethodPost:
		return fail(http.StatusMethodNotAllowed, "modelmock: POST only")
	case readErr != nil:
		return fail(http.StatusBadRequest, "modelmock: read body: "+readErr.Error())
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
		return fail(http.StatusUnauthorized, "modelmock: invalid API key")
	}
	if failure != nil {
		if failure.Hang {
			select {
			case <-r.Context().Done():
			case <-h.done:
			}
			return 0
		}
		if failure.Status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		return fail(failure.Status, fmt.Sprintf("modelmock: scripted failure %d", failure.Status))
	}

	p, err := parseRequest(api, r.URL.Path, body)
	if err != nil {
		return fail(http.StatusBadRequest, "modelmock: request body is not JSON: "+err.Error())
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
		rec.Turn = i
		t := s.Turns[i]
		if t.Usage != nil {
			a.usage = *t.Usage
		}
		switch {
		case t.Text != "":
			a.text = t.Text
		case t.Shell != nil:
			name, args, ok := shellCall(p.tools, *t.Shell)
			if !ok {
				return fail(http.StatusBadRequest, fmt.Sprintf("modelmock: turn %d calls the shell, but the request offers no shell tool (known: %s)", i, strings.Join(shellTools, ", ")))
			}
			a.tool, a.args = name, mustJSON(args)
		case t.Tool != nil:
			a.tool, a.args = t.Tool.Name, mustJSON(t.Tool.Arguments)
		}
	}

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
	return http.StatusOK
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
