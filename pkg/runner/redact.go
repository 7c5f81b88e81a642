package runner

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// MinRedactedLen is the shortest secret value the runner redacts: shorter
// values ("1", "true") would blank out ordinary text.
const MinRedactedLen = 8

// redactChunk is how much of a file the redactor reads at once.
const redactChunk = 64 << 10

// redactor replaces every secret value handed to a phase with
// [redacted:NAME] in what leaves the sandbox. It matches each value as is,
// as it appears inside a JSON string (trajectories are JSON), and in the
// encodings an agent might print it in (valueForms).
type redactor struct {
	patterns []redactPattern
	maxLen   int
}

type redactPattern struct {
	value       []byte
	replacement []byte
}

// newRedactor builds a redactor for the values of every map (agent and
// verifier secrets); a value shared by several names is reported under the
// first name in sorted order.
func newRedactor(sets ...map[string]secret.Value) *redactor {
	r := &redactor{}
	seen := map[string]bool{}
	for _, set := range sets {
		for _, name := range slices.Sorted(maps.Keys(set)) {
			value := set[name].Reveal()
			if len(value) < MinRedactedLen {
				continue
			}
			replacement := []byte("[redacted:" + name + "]")
			for _, form := range valueForms(value) {
				if seen[form] {
					continue
				}
				seen[form] = true
				r.patterns = append(r.patterns, redactPattern{value: []byte(form), replacement: replacement})
				r.maxLen = max(r.maxLen, len(form))
			}
		}
	}
	return r
}

// valueForms are the spellings of a value to look for: itself, its JSON
// string escapings (with and without HTML escaping), its URL encodings
// (query and path), hex in both cases, and base64 in the standard and URL
// alphabets — the whole encoding with and without padding, and, for each
// of the three byte alignments the value can have inside a longer encoded
// text, the characters that depend on the value's bytes alone.
func valueForms(value string) []string {
	forms := []string{value}
	add := func(form string) {
		if len(form) >= MinRedactedLen && !slices.Contains(forms, form) {
			forms = append(forms, form)
		}
	}
	for _, escapeHTML := range []bool{true, false} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(escapeHTML)
		if enc.Encode(value) != nil {
			continue
		}
		quoted := bytes.TrimSpace(buf.Bytes())
		add(string(quoted[1 : len(quoted)-1]))
	}
	add(url.QueryEscape(value))
	add(url.PathEscape(value))
	add(hex.EncodeToString([]byte(value)))
	add(strings.ToUpper(hex.EncodeToString([]byte(value))))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		add(enc.EncodeToString([]byte(value)))
		raw := enc.WithPadding(base64.NoPadding)
		add(raw.EncodeToString([]byte(value)))
		for offset := range 3 {
			add(base64Core(raw, value, offset))
		}
	}
	return forms
}

// base64Core returns the base64 characters of value placed offset bytes
// into an encoded stream that depend on value's bits only: character i
// covers bits [6i, 6i+6) and value covers [8·offset, 8·(offset+len)).
func base64Core(enc *base64.Encoding, value string, offset int) string {
	padded := make([]byte, offset+len(value))
	copy(padded[offset:], value)
	full := enc.EncodeToString(padded)
	start := (8*offset + 5) / 6
	end := 8 * (offset + len(value)) / 6
	if end <= start {
		return ""
	}
	return full[start:end]
}

// active reports whether there is anything to redact.
func (r *redactor) active() bool { return r != nil && len(r.patterns) > 0 }

// String redacts s.
func (r *redactor) String(s string) string {
	if !r.active() {
		return s
	}
	var out bytes.Buffer
	_, _ = r.copy(&out, bytes.NewReader([]byte(s)))
	return out.String()
}

// copy streams src to dst with every value replaced, holding at most one
// chunk plus the longest value in memory. It returns the bytes read.
func (r *redactor) copy(dst io.Writer, src io.Reader) (int64, error) {
	if !r.active() {
		return io.Copy(dst, src)
	}
	buf := make([]byte, 0, redactChunk+r.maxLen)
	chunk := make([]byte, redactChunk)
	var read int64
	for {
		n, err := src.Read(chunk)
		read += int64(n)
		buf = append(buf, chunk[:n]...)
		final := errors.Is(err, io.EOF)
		if err != nil && !final {
			return read, err
		}
		if buf, err = r.flush(dst, buf, final); err != nil {
			return read, err
		}
		if final {
			return read, nil
		}
	}
}

// flush writes out the part of buf that can no longer hold the start of a
// value, redacted, and returns the rest (moved to the front of buf). A match
// is decided only where every value would fit in buf, so the leftmost
// (then longest) match always wins, wherever chunk boundaries fall.
func (r *redactor) flush(dst io.Writer, buf []byte, final bool) ([]byte, error) {
	for {
		decided := len(buf) - r.maxLen // last position every value fits after
		if final {
			decided = len(buf)
		}
		at, p := r.leftmost(buf)
		if p != nil && at <= decided {
			if _, err := dst.Write(buf[:at]); err != nil {
				return nil, err
			}
			if _, err := dst.Write(p.replacement); err != nil {
				return nil, err
			}
			buf = buf[at+len(p.value):]
			continue
		}
		clean := min(max(decided+1, 0), len(buf))
		if _, err := dst.Write(buf[:clean]); err != nil {
			return nil, err
		}
		return append(buf[:0:cap(buf)], buf[clean:]...), nil
	}
}

// leftmost finds the earliest value in buf (the longest of those starting there).
func (r *redactor) leftmost(buf []byte) (int, *redactPattern) {
	at, best := -1, (*redactPattern)(nil)
	for i := range r.patterns {
		p := &r.patterns[i]
		j := bytes.Index(buf, p.value)
		if j < 0 {
			continue
		}
		if best == nil || j < at || (j == at && len(p.value) > len(best.value)) {
			at, best = j, p
		}
	}
	return at, best
}

// file redacts a file the runner wrote, in place (through a temporary file
// renamed over it).
func (r *redactor) file(path string) error {
	if !r.active() {
		return nil
	}
	in, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("redact %s: %w", filepath.Base(path), err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return fmt.Errorf("redact %s: %w", filepath.Base(path), err)
	}
	tmp := path + ".redacting"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, info.Mode().Perm())
	if err != nil {
		return fmt.Errorf("redact %s: %w", filepath.Base(path), err)
	}
	_, err = r.copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("redact %s: %w", filepath.Base(path), err)
	}
	return nil
}
