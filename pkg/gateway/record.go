package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// Redacted replaces every secret value in stored text.
const Redacted = "[redacted]"

// redactor replaces secret values in the forms they may take in a
// conversation an agent had: raw, base64 (standard and URL alphabets, at
// each of the three alignments inside a longer encoded text) and hex.
type redactor struct {
	forms []string // longest first, so a form containing another goes first
	rep   *strings.Replacer
}

func newRedactor(secrets []string) *redactor {
	seen := map[string]bool{}
	var forms []string
	add := func(s string) {
		if len(s) >= 6 && !seen[s] {
			seen[s] = true
			forms = append(forms, s)
		}
	}
	for _, s := range secrets {
		if len(s) < 6 {
			continue // too short to search for without hitting everything
		}
		add(s)
		add(hex.EncodeToString([]byte(s)))
		add(strings.ToUpper(hex.EncodeToString([]byte(s))))
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			for k := 0; k < 3; k++ {
				e := enc.EncodeToString(append(make([]byte, k), s...))
				// Only the characters all of whose bits come from s.
				start, end := (8*k+5)/6, (8*(k+len(s)))/6
				add(e[start:end])
			}
		}
	}
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	var pairs []string
	for _, f := range forms {
		pairs = append(pairs, f, Redacted)
	}
	return &redactor{forms: forms, rep: strings.NewReplacer(pairs...)}
}

func (r *redactor) string(s string) string {
	if len(r.forms) == 0 {
		return s
	}
	return r.rep.Replace(s)
}

func (r *redactor) bytes(b []byte) []byte {
	if len(r.forms) == 0 {
		return b
	}
	for _, f := range r.forms {
		if bytes.Contains(b, []byte(f)) {
			return []byte(r.rep.Replace(string(b)))
		}
	}
	return b
}

// recordedHeaders are a request's or answer's headers with credentials
// replaced and every value redacted.
func (r *redactor) headers(h http.Header) map[string]string {
	out := map[string]string{}
	for k, vs := range h {
		v := strings.Join(vs, ", ")
		for _, a := range authHeaders {
			if http.CanonicalHeaderKey(k) == a {
				v = Redacted
			}
		}
		out[k] = r.string(v)
	}
	return out
}

// recordLine is one JSONL line of the record: the call, the request as the
// harness sent it (its body as it went upstream) and the answer. JSON bodies
// stay JSON; streams (SSE text) become strings.
func (g *Gateway) recordLine(st *callState) []byte {
	type side struct {
		Method    string            `json:"method,omitempty"`
		URL       string            `json:"url,omitempty"`
		Status    int               `json:"status,omitempty"`
		Headers   map[string]string `json:"headers,omitempty"`
		Body      json.RawMessage   `json:"body,omitempty"`
		Truncated bool              `json:"truncated,omitempty"`
	}
	reqBody := g.redactor.bytes(st.body)
	req := side{Method: "POST", URL: st.call.Path, Headers: g.redactor.headers(st.header), Body: bodyJSON(reqBody, true)}
	resp := side{Status: st.call.Status, Truncated: st.trunc}
	respJSON := true
	if st.respHeader != nil {
		resp.Headers = g.redactor.headers(st.respHeader)
		respJSON = !strings.HasPrefix(st.respHeader.Get("Content-Type"), "text/event-stream")
	}
	respBody := g.redactor.bytes(st.respB.Bytes())
	resp.Body = bodyJSON(respBody, respJSON && !st.trunc)
	type line struct {
		Call     Call `json:"call"`
		Request  side `json:"request"`
		Response side `json:"response"`
	}
	// Marshal validates the raw JSON bodies; one that is not JSON after all
	// is kept as a string.
	out, err := json.Marshal(line{st.call, req, resp})
	if err != nil {
		req.Body, resp.Body = bodyJSON(reqBody, false), bodyJSON(respBody, false)
		out, err = json.Marshal(line{st.call, req, resp})
	}
	if err != nil {
		out = []byte(`{"error":"record: unencodable call"}`)
	}
	return append(out, '\n')
}

// bodyJSON keeps a body as raw JSON when asJSON (it is checked when the
// line is marshalled), else as a JSON string.
func bodyJSON(b []byte, asJSON bool) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if asJSON {
		if t := bytes.TrimSpace(b); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
			return t
		}
	}
	s, _ := json.Marshal(string(b))
	return s
}

// recorder writes record lines in call order on a goroutine of its own, so
// encoding a large conversation never delays the answer's end.
type recorder struct {
	g    *Gateway
	w    io.Writer
	mu   sync.Mutex
	q    []*callState
	shut bool
	wake chan struct{}
	done chan struct{}
}

func newRecorder(g *Gateway, w io.Writer) *recorder {
	r := &recorder{g: g, w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go r.run()
	return r
}

func (r *recorder) push(st *callState) {
	r.mu.Lock()
	r.q = append(r.q, st)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// close writes what is queued and stops.
func (r *recorder) close() {
	r.mu.Lock()
	r.shut = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	<-r.done
}

func (r *recorder) run() {
	defer close(r.done)
	failed := false
	for {
		r.mu.Lock()
		q, shut := r.q, r.shut
		r.q = nil
		r.mu.Unlock()
		for _, st := range q {
			if failed {
				continue
			}
			if _, err := r.w.Write(r.g.recordLine(st)); err != nil {
				failed = true
				r.g.gatewayFault(fmt.Errorf("write record: %w", err))
			}
		}
		if shut && len(q) == 0 {
			return
		}
		if len(q) == 0 {
			<-r.wake
		}
	}
}
