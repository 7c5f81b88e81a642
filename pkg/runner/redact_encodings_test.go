package runner

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

const canary = "sk-canary-Zq8/+x?&=9#k%"

// TestRedactorEncodings: the secret inside base64 text (both alphabets,
// padded or not, at every byte offset), hex and URL-encoded text is
// redacted, and no 8 characters of its encoding survive.
func TestRedactorEncodings(t *testing.T) {
	r := newRedactor(map[string]secret.Value{"K": canary})
	type text struct{ name, encoded, secretPart string }
	var cases []text
	for _, enc := range []struct {
		name string
		e    *base64.Encoding
	}{
		{"std", base64.StdEncoding}, {"std-raw", base64.RawStdEncoding},
		{"url", base64.URLEncoding}, {"url-raw", base64.RawURLEncoding},
	} {
		for prefix := range 3 {
			for suffix := range 3 {
				plain := strings.Repeat("p", prefix) + canary + strings.Repeat("s", suffix)
				e := enc.e.EncodeToString([]byte(plain))
				// The characters that depend on the canary's bytes alone.
				start, end := (8*prefix+5)/6, 8*(prefix+len(canary))/6
				cases = append(cases, text{fmt.Sprintf("base64 %s prefix %d suffix %d", enc.name, prefix, suffix), e, e[start:end]})
			}
		}
	}
	cases = append(cases,
		text{"hex", "id=" + hex.EncodeToString([]byte(canary)) + ";", hex.EncodeToString([]byte(canary))},
		text{"HEX", strings.ToUpper(hex.EncodeToString([]byte(canary))), strings.ToUpper(hex.EncodeToString([]byte(canary)))},
		text{"query", "https://x.test/?key=" + url.QueryEscape(canary), url.QueryEscape(canary)},
		text{"path", "/v1/" + url.PathEscape(canary) + "/x", url.PathEscape(canary)},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := r.String(c.encoded)
			if !strings.Contains(out, "[redacted:K]") {
				t.Fatalf("String(%q) = %q: nothing redacted", c.encoded, out)
			}
			for i := 0; i+8 <= len(c.secretPart); i++ {
				if strings.Contains(out, c.secretPart[i:i+8]) {
					t.Fatalf("String(%q) = %q still holds %q of the encoded secret", c.encoded, out, c.secretPart[i:i+8])
				}
			}
		})
	}
	// The whole padded encoding goes, padding included.
	if got := r.String(base64.StdEncoding.EncodeToString([]byte(canary))); got != "[redacted:K]" {
		t.Errorf("String(base64(canary)) = %q, want [redacted:K]", got)
	}
}

// TestRedactorEncodingsStream: encoded forms are caught across read
// boundaries too (the streaming path keeps the longest form's length).
func TestRedactorEncodingsStream(t *testing.T) {
	r := newRedactor(map[string]secret.Value{"K": canary})
	in := strings.Repeat("y", redactChunk-20) + base64.StdEncoding.EncodeToString([]byte(canary)) + " " + hex.EncodeToString([]byte(canary))
	var out bytes.Buffer
	if _, err := r.copy(&out, &oneByteReader{data: []byte(in)}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "[redacted:K]"); got != 2 {
		t.Errorf("streamed copy redacted %d forms, want 2: %q", got, out.String()[redactChunk-30:])
	}
}
