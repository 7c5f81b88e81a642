// Package console is gauntlet's web console: static HTML, CSS and JavaScript
// modules under dist/ (no build step; dist/ is the site exactly as served),
// embedded into the binary so `gauntlet local` serves it offline, and
// uploaded as-is to S3 behind CloudFront in the cloud.
//
// The console calls the API at window.GAUNTLET_API_URL, which dist/config.js
// sets; the embedded config.js leaves it empty, meaning the same origin
// (`gauntlet local` mounts the API at /v1 beside the console). A cloud
// deployment overwrites config.js with the API Gateway URL.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed dist
var embedded embed.FS

// Assets returns the console's files, rooted at the site root (index.html,
// config.js, css/…, js/…).
func Assets() fs.FS {
	site, err := fs.Sub(embedded, "dist")
	if err != nil {
		panic(fmt.Sprintf("console: embedded dist missing: %v", err)) // cannot happen: dist is embedded at build time
	}
	return site
}

// ContentSecurityPolicy is the policy the handler sends with every asset: the
// console loads nothing but its own files and talks only to its own origin.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// asset is one embedded file, read once with its validators.
type asset struct {
	name        string
	body        []byte
	contentType string
	etag        string
}

// Handler serves the console: embedded files with their content types, a
// strong ETag and `Cache-Control: no-cache` (every load revalidates, so a
// new binary's console shows at once and an unchanged one costs a 304),
// and index.html for every client route (a path whose last segment has no
// file extension). Directories are never listed, /v1/… is never answered
// with the console, and only GET and HEAD are allowed.
func Handler() http.Handler {
	h, err := newHandler(Assets())
	if err != nil {
		panic(fmt.Sprintf("console: %v", err)) // cannot happen: the embedded files are fixed at build time
	}
	return h
}

type handler struct {
	files map[string]*asset // by path without the leading slash
	dirs  map[string]bool
	index *asset
}

func newHandler(site fs.FS) (*handler, error) {
	h := &handler{files: map[string]*asset{}, dirs: map[string]bool{}}
	err := fs.WalkDir(site, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			h.dirs[name] = true
			return nil
		}
		body, err := fs.ReadFile(site, name)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		sum := sha256.Sum256(body)
		h.files[name] = &asset{name: name, body: body, contentType: contentType(name), etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load console assets: %w", err)
	}
	h.index = h.files["index.html"]
	if h.index == nil {
		return nil, fmt.Errorf("load console assets: index.html is missing")
	}
	return h, nil
}

// contentTypes pins the types of the console's file kinds, independent of
// the host's mime database.
var contentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".mjs":   "text/javascript; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".svg":   "image/svg+xml",
	".json":  "application/json",
	".png":   "image/png",
	".ico":   "image/x-icon",
	".txt":   "text/plain; charset=utf-8",
	".toml":  "application/toml; charset=utf-8",
	".woff2": "font/woff2",
}

func contentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if ct, ok := contentTypes[ext]; ok {
		return ct
	}
	if ct := mime.TypeByExtension(ext); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: the console serves GET and HEAD", http.StatusMethodNotAllowed)
		return
	}
	a, status := h.lookup(r.URL.Path)
	if a == nil {
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, http.StatusText(status), status)
		return
	}
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", a.etag)
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
}

// lookup resolves a request path to the asset to serve, or a status.
func (h *handler) lookup(urlPath string) (*asset, int) {
	clean := path.Clean("/" + urlPath)
	name := strings.TrimPrefix(clean, "/")
	switch {
	case name == "" || name == "index.html":
		return h.index, 0
	case name == "v1" || strings.HasPrefix(name, "v1/"):
		return nil, http.StatusNotFound // the API's namespace: never the console
	case h.dirs[name]:
		return nil, http.StatusNotFound // no directory listings
	}
	if a, ok := h.files[name]; ok {
		return a, 0
	}
	if path.Ext(name) != "" {
		return nil, http.StatusNotFound // a missing file, not a client route
	}
	return h.index, 0
}

func setSecurityHeaders(hdr http.Header) {
	hdr.Set("Content-Security-Policy", ContentSecurityPolicy)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
}
