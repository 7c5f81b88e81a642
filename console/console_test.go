package console

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// served is what one request got back.
type served struct {
	Status      int
	ContentType string
	Cache       string
	// Body is the first line of the body, enough to tell files apart.
	Body string
}

func get(t *testing.T, h http.Handler, method, target string, header http.Header) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body of %s %s: %v", method, target, err)
	}
	return res, string(body)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}

func TestHandlerServesAssetsAndClientRoutes(t *testing.T) {
	h := Handler()
	index := served{Status: 200, ContentType: "text/html; charset=utf-8", Cache: "no-cache", Body: "<!doctype html>"}
	tests := []struct {
		name, method, path string
		want               served
	}{
		{"root is index.html", "GET", "/", index},
		{"index.html itself", "GET", "/index.html", index},
		{"client route", "GET", "/benchmarks", index},
		{"nested client route", "GET", "/benchmarks/demo-bench", index},
		{"client route with query", "GET", "/runs/r-123?tab=logs", index},
		{"deep client route", "GET", "/runs/new", index},
		{"module script", "GET", "/js/main.js", served{200, "text/javascript; charset=utf-8", "no-cache", "// Console entry point: the shell (top bar with workspace and billing), the"}},
		{"page module", "GET", "/js/pages/run.js", served{200, "text/javascript; charset=utf-8", "no-cache", "// Run detail: status, progress (live while the run is active), metrics per"}},
		{"stylesheet", "GET", "/css/app.css", served{200, "text/css; charset=utf-8", "no-cache", "/* gauntlet console: one stylesheet, light and dark from the OS setting. */"}},
		{"icon", "GET", "/favicon.svg", served{200, "image/svg+xml", "no-cache", `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1f6feb"/><rect x="7" y="17" width="5" height="8" rx="1" fill="#fff"/><rect x="13.5" y="8" width="5" height="17" rx="1" fill="#fff"/><rect x="20" y="13" width="5" height="12" rx="1" fill="#fff"/></svg>`}},
		{"runtime config", "GET", "/config.js", served{200, "text/javascript; charset=utf-8", "no-cache", "// Where the console finds the gauntlet API. Empty means the console's own"}},
		{"HEAD has headers, no body", "HEAD", "/js/api.js", served{200, "text/javascript; charset=utf-8", "no-cache", ""}},
		{"missing file is 404, not index", "GET", "/js/missing.js", served{404, "text/plain; charset=utf-8", "no-store", "Not Found"}},
		{"missing image is 404", "GET", "/logo.png", served{404, "text/plain; charset=utf-8", "no-store", "Not Found"}},
		{"directory is not listed", "GET", "/js/", served{404, "text/plain; charset=utf-8", "no-store", "Not Found"}},
		{"directory without slash is not listed", "GET", "/js/pages", served{404, "text/plain; charset=utf-8", "no-store", "Not Found"}},
		{"API namespace is never the console", "GET", "/v1/benchmarks", served{404, "text/plain; charset=utf-8", "no-store", "Not Found"}},
		{"API root is never the console", "GET", "/v1", served{404, "text/plain; charset=utf-8", "no-store", "Not Found"}},
		{"dot segments stay inside the site", "GET", "/js/../../console.go", served{404, "text/plain; charset=utf-8", "no-store", "Not Found"}},
		{"POST is not allowed", "POST", "/benchmarks", served{405, "text/plain; charset=utf-8", "", "method not allowed: the console serves GET and HEAD"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := get(t, h, tt.method, tt.path, nil)
			got := served{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), Cache: res.Header.Get("Cache-Control"), Body: firstLine(body)}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s", tt.method, tt.path, diff)
			}
			if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("%s %s: X-Content-Type-Options = %q, want nosniff", tt.method, tt.path, got)
			}
			if got := res.Header.Get("Content-Security-Policy"); got != ContentSecurityPolicy {
				t.Errorf("%s %s: Content-Security-Policy = %q, want %q", tt.method, tt.path, got, ContentSecurityPolicy)
			}
		})
	}
}

func TestHandlerRevalidatesWithETag(t *testing.T) {
	h := Handler()
	res, _ := get(t, h, "GET", "/js/main.js", nil)
	etag := res.Header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || len(etag) != 34 {
		t.Fatalf("ETag = %q, want a quoted 32-hex-digit strong validator", etag)
	}
	tests := []struct {
		name        string
		ifNoneMatch string
		wantStatus  int
	}{
		{"unchanged asset answers 304", etag, http.StatusNotModified},
		{"stale validator gets the body", `"0000"`, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := get(t, h, "GET", "/js/main.js", http.Header{"If-None-Match": {tt.ifNoneMatch}})
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d", res.StatusCode, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusNotModified && body != "" {
				t.Errorf("304 carried a body of %d bytes", len(body))
			}
		})
	}
	// A client route revalidates against index.html's validator.
	idx, _ := get(t, h, "GET", "/index.html", nil)
	route, _ := get(t, h, "GET", "/runs/abc", nil)
	if idx.Header.Get("ETag") != route.Header.Get("ETag") {
		t.Errorf("client route ETag %q differs from index.html's %q", route.Header.Get("ETag"), idx.Header.Get("ETag"))
	}
}

// TestAssetsEmbedded checks that every file the pages load is embedded and
// that every module import and every asset index.html names resolves to an
// embedded file, so a missing file fails here rather than in a browser.
func TestAssetsEmbedded(t *testing.T) {
	site := Assets()
	for _, name := range []string{"index.html", "config.js", "favicon.svg", "css/app.css", "js/main.js", "js/api.js"} {
		if _, err := fs.Stat(site, name); err != nil {
			t.Errorf("asset %s is not embedded: %v", name, err)
		}
	}
	refs := map[string][]string{} // referenced path → files referencing it
	err := fs.WalkDir(site, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(site, name)
		if err != nil {
			return err
		}
		for _, ref := range references(name, string(data)) {
			refs[ref] = append(refs[ref], name)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk assets: %v", err)
	}
	if len(refs) < 10 {
		t.Fatalf("found %d references, want the index's assets and the module graph", len(refs))
	}
	for ref, from := range refs {
		if _, err := fs.Stat(site, ref); err != nil {
			t.Errorf("%s is referenced by %v but not embedded", ref, from)
		}
	}
}

func TestNewHandlerNeedsIndex(t *testing.T) {
	_, err := newHandler(fstest.MapFS{"app.js": {Data: []byte("x")}})
	if err == nil || !strings.Contains(err.Error(), "index.html is missing") {
		t.Fatalf("newHandler without index.html: err = %v, want index.html is missing", err)
	}
}

func TestContentType(t *testing.T) {
	tests := map[string]string{
		"a.html": "text/html; charset=utf-8", "a.js": "text/javascript; charset=utf-8", "a.MJS": "text/javascript; charset=utf-8",
		"a.css": "text/css; charset=utf-8", "a.svg": "image/svg+xml", "a.json": "application/json",
		"a.woff2": "font/woff2", "noext": "application/octet-stream",
	}
	for name, want := range tests {
		if got := contentType(name); got != want {
			t.Errorf("contentType(%q) = %q, want %q", name, got, want)
		}
	}
}

var (
	htmlRef   = regexp.MustCompile(`(?:src|href)="(/[^"#?]*)"`)
	importRef = regexp.MustCompile(`(?m)(?:^import|^export)[^'"]*from '(\.{1,2}/[^']+)'`)
)

// references lists the site paths a file loads: root-relative src/href in
// HTML and relative module specifiers in JavaScript.
func references(name, data string) []string {
	var out []string
	switch path.Ext(name) {
	case ".html":
		for _, m := range htmlRef.FindAllStringSubmatch(data, -1) {
			out = append(out, strings.TrimPrefix(m[1], "/"))
		}
	case ".js":
		for _, m := range importRef.FindAllStringSubmatch(data, -1) {
			out = append(out, path.Join(path.Dir(name), m[1]))
		}
	}
	return out
}
