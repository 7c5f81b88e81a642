// Package localreg serves images on loopback with go-containerregistry's
// in-process registry (pkg/registry, blobs on disk), standing in for upstream
// registries where none can be reached: in tests, and for `make run`'s demo,
// where `gauntlet images serve` offers base images built from Debian packages
// under the names of the upstream images they replace (python, debian,
// ubuntu). Clients reach it through the image store's mirror setting.
package localreg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is a running loopback registry.
type Registry struct {
	// Host is host:port, e.g. 127.0.0.1:43127.
	Host string
	// URL is http://Host.
	URL string

	srv   *http.Server
	done  chan error
	close sync.Once
	err   error
}

// Options configure a Registry.
type Options struct {
	// Addr to listen on; "" for 127.0.0.1 on a free port. Only loopback
	// addresses are accepted: the registry has no authentication.
	Addr string
	// BlobDir holds pushed blobs (created if missing).
	BlobDir string
	// Layouts are OCI layout directories whose blobs are served in place,
	// without copying (see PushLayout).
	Layouts []string
	// Handler, when set, wraps the registry handler (tests use it to answer
	// 401, cut bodies short or corrupt bytes).
	Handler func(http.Handler) http.Handler
	// Log receives the registry's request log; nil discards it.
	Log io.Writer
}

// Start listens and serves until Close.
func Start(opts Options) (*Registry, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("registry address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("registry address %q: want a loopback address (the registry has no authentication)", addr)
	}
	if opts.BlobDir == "" {
		return nil, errors.New("registry: BlobDir is empty")
	}
	if err := os.MkdirAll(opts.BlobDir, 0o755); err != nil {
		return nil, err
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	blobs := &blobs{disk: registry.NewDiskBlobHandler(opts.BlobDir), layouts: opts.Layouts}
	var h http.Handler = registry.New(registry.WithBlobHandler(blobs), registry.Logger(log.New(logw, "registry ", log.LstdFlags)))
	if opts.Handler != nil {
		h = opts.Handler(h)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &Registry{Host: ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, done: make(chan error, 1)}
	r.URL = "http://" + r.Host
	go func() { r.done <- r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the registry; later calls return the first one's answer.
func (r *Registry) Close() error {
	r.close.Do(func() {
		r.err = r.srv.Close()
		serr := <-r.done
		r.done <- serr
		if !errors.Is(serr, http.ErrServerClosed) && r.err == nil {
			r.err = serr
		}
	})
	return r.err
}

// Wait blocks until the registry stops (Close, or a serve error).
func (r *Registry) Wait(ctx context.Context) error {
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Ref is the reference of repo:tag at this registry.
func (r *Registry) Ref(repoTag string) string { return r.Host + "/" + repoTag }

// Push uploads img as repoTag (e.g. library/python:3.13-slim-bookworm);
// opts add e.g. remote.WithAuth when a Handler demands credentials.
func (r *Registry) Push(ctx context.Context, repoTag string, img v1.Image, opts ...remote.Option) error {
	ref, err := name.ParseReference(r.Ref(repoTag), name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.Write(ref, img, append([]remote.Option{remote.WithContext(ctx)}, opts...)...); err != nil {
		return fmt.Errorf("push %s: %w", repoTag, err)
	}
	return nil
}

// PushIndex uploads an index (multi-platform image) as repoTag.
func (r *Registry) PushIndex(ctx context.Context, repoTag string, ii v1.ImageIndex) error {
	ref, err := name.ParseReference(r.Ref(repoTag), name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(ref, ii, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("push %s: %w", repoTag, err)
	}
	return nil
}

// Mirror is the setting that sends prefix (e.g. "docker.io") to this
// registry only, never to the upstream.
func (r *Registry) Mirror(prefix string) image.Mirror {
	return image.Mirror{Prefix: prefix, Endpoints: []string{r.URL}, SkipUpstream: true}
}

// blobs serves blobs from OCI layouts in place, else from disk, where pushes go.
type blobs struct {
	disk    registry.BlobHandler
	layouts []string
}

func (b *blobs) layoutBlob(h v1.Hash) (string, bool) {
	for _, l := range b.layouts {
		p := l + "/blobs/" + h.Algorithm + "/" + h.Hex
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, true
		}
	}
	return "", false
}

func (b *blobs) Get(ctx context.Context, repo string, h v1.Hash) (io.ReadCloser, error) {
	if p, ok := b.layoutBlob(h); ok {
		return os.Open(p)
	}
	return b.disk.Get(ctx, repo, h)
}

func (b *blobs) Stat(ctx context.Context, repo string, h v1.Hash) (int64, error) {
	if p, ok := b.layoutBlob(h); ok {
		fi, err := os.Stat(p)
		if err != nil {
			return 0, err
		}
		return fi.Size(), nil
	}
	return b.disk.(registry.BlobStatHandler).Stat(ctx, repo, h)
}

func (b *blobs) Put(ctx context.Context, repo string, h v1.Hash, rc io.ReadCloser) error {
	if _, ok := b.layoutBlob(h); ok {
		_, err := io.Copy(io.Discard, rc)
		return err
	}
	return b.disk.(registry.BlobPutHandler).Put(ctx, repo, h, rc)
}

var (
	_ registry.BlobStatHandler = (*blobs)(nil)
	_ registry.BlobPutHandler  = (*blobs)(nil)
)

// repoTag checks a repository:tag name for this registry.
func repoTag(s string) error {
	if strings.Contains(s, "@") || !strings.Contains(s, ":") {
		return fmt.Errorf("%q: want repository:tag", s)
	}
	return nil
}
