package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
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
// harness sent it (its body as it went upstream) and the answer.
func (g *Gateway) recordLine(st *callState) []byte {
	type side struct {
		Method    string            `json:"method,omitempty"`
		URL       string            `json:"url,omitempty"`
		Status    int               `json:"status,omitempty"`
		Headers   map[string]string `json:"headers,omitempty"`
		Body      json.RawMessage   `json:"body,omitempty"`
		Truncated bool              `json:"truncated,omitempty"`
	}
	req := side{Method: "POST", URL: st.call.Path, Headers: g.redactor.headers(st.header), Body: bodyJSON(g.redactor.bytes(st.body))}
	resp := side{Status: st.call.Status, Truncated: st.trunc}
	if st.resp != nil {
		resp.Headers = g.redactor.headers(st.resp.Header)
	}
	if st.respB.Len() > 0 {
		resp.Body = bodyJSON(g.redactor.bytes(st.respB.Bytes()))
	}
	line, err := json.Marshal(struct {
		Call     Call `json:"call"`
		Request  side `json:"request"`
		Response side `json:"response"`
	}{st.call, req, resp})
	if err != nil {
		// Every part is JSON already or a string; this cannot fail.
		line = []byte(`{"error":"record: ` + err.Error() + `"}`)
	}
	return append(line, '\n')
}

// bodyJSON keeps a JSON body as JSON and anything else (an SSE stream) as a
// JSON string.
func bodyJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		var buf bytes.Buffer
		if json.Compact(&buf, b) == nil {
			return buf.Bytes()
		}
	}
	s, _ := json.Marshal(string(b))
	return s
}
