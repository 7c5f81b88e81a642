// Package image is the local image store: it resolves image references to
// pinned digests through registry mirrors and pull credentials, keeps the
// blobs it pulls content-addressed on disk, and unpacks each layer once into
// a directory shared by every image stacked on it, so that an image's root
// filesystem is the overlay of its layer directories, which a sandbox driver
// uses as the lower layers of a per-attempt overlay. It mounts
// nothing itself and runs no container: no Docker daemon is needed.
//
// On disk, under the directory given to Open:
//
//	oci-layout, blobs/sha256/<hex>   content-addressed blobs (the OCI image-layout shape)
//	images/<hex>.json                one record per image manifest: names, config, layers
//	layers/<id>/                     one unpacked layer, shared by every image stacked on it (layers.go)
//	layers/<id>.json, <id>.lock      its chain and size; flock while unpacking it
//	rootfs/<config-hex>.json         an unpacked image: its layers (bottom first) and size
//	rootfs/<config-hex>.lock         flock: exclusive while unpacking, evicting or pruning the image,
//	                                 shared while in use; its mtime is the image's last use
//	gc.lock                          flock: shared while unpacking, importing or fetching an image's
//	                                 manifest; exclusive while removing layers, and for a whole prune
//	tmp/                             temp files and dirs, renamed into place when complete
//
// Only linux/amd64 images are taken.
package image

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sys/unix"
)

// Options configure a Store.
type Options struct {
	// Mirrors maps registries and repository prefixes to mirror endpoints.
	Mirrors []Mirror
	// DockerConfig is the path of a Docker config.json whose auths (and
	// credential helpers) give pull credentials; "" for none. Credentials
	// passed to a call win over it.
	DockerConfig string
	// Keychain gives the platform's own registry credentials (the cloud's
	// ECR tokens); a host it answers anonymously falls through to the
	// Docker config. Credentials passed to a call win over it.
	Keychain authn.Keychain
	// Transport carries registry requests; nil for ggcr's default.
	Transport http.RoundTripper
	// MaxRootfsBytes caps the whole image storage — unpacked layers, blobs
	// and Extra (the builder's storage): after an unpack, the least recently
	// used images neither in use nor Pinned are dropped (with the layers no
	// other image uses), then Extra reclaims what it can, until it fits.
	// 0 means no cap.
	MaxRootfsBytes int64
	// KeepLayerBlobs keeps a layer's compressed blob after the layer is
	// unpacked. By default it is removed, as Docker does: the unpacked
	// layer is the one copy, and an image evicted since needs its sync
	// again (a pull or a build) rather than an unpack from local blobs.
	KeepLayerBlobs bool
	// Extra is storage beside the store that the cap covers (the builder's);
	// nil for none.
	Extra ExtraStorage
	// Pinned lists the pinned references (repository@sha256:…) that runs
	// not yet finished still need: eviction never drops them. nil = none.
	Pinned func(ctx context.Context) ([]string, error)
	// Logger receives one line per pull and eviction; nil for slog.Default().
	Logger *slog.Logger
}

// Store is a local image store in one directory. Its methods are safe for
// concurrent use, also by several processes sharing the directory.
//
// It resolves, pulls, imports and manages images and stacks their root
// filesystems over four parts, each owning its part of the directory and
// its locks: blobs (blobs/, images/ and store.lock: blobs.go), layers
// (layers/, the rootfs records naming them and gc.lock: layers.go), the
// capacity (the cap: usage and eviction of rootfs/ entries, evict.go) and
// the registry clients (pullers.go).
type Store struct {
	dir     string
	mirrors mirrorSet
	docker  string
	logger  *slog.Logger

	blobs    blobStore
	layers   *layerStore
	pullers  *pullerCache
	capacity *capacity

	// testHook, set by tests only (export_test.go), is called at named
	// points of an operation, so a test can order steps of concurrent
	// operations without timing.
	testHook func(point string)
}

func (s *Store) hook(point string) {
	if s.testHook != nil {
		s.testHook(point)
	}
}

// Open opens (creating it if needed) the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	ms, err := parseMirrors(opts.Mirrors)
	if err != nil {
		return nil, err
	}
	if opts.MaxRootfsBytes < 0 {
		return nil, fmt.Errorf("image store: MaxRootfsBytes %d: want 0 (no cap) or more", opts.MaxRootfsBytes)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("image store %s: %w", dir, err)
	}
	for _, d := range []string{"blobs/sha256", "images", "rootfs", "layers", "tmp"} {
		if err := os.MkdirAll(filepath.Join(abs, d), 0o755); err != nil {
			return nil, fmt.Errorf("image store: %w", err)
		}
	}
	layoutFile := filepath.Join(abs, "oci-layout")
	if _, err := os.Stat(layoutFile); os.IsNotExist(err) {
		if err := writeFileAtomic(abs, layoutFile, []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
			return nil, fmt.Errorf("image store: %w", err)
		}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	t := opts.Transport
	if t == nil {
		t = remote.DefaultTransport
	}
	dropWholeRootfs(abs, logger)
	blobs := blobStore{dir: abs}
	layers := &layerStore{dir: abs, blobs: blobs, keepBlobs: opts.KeepLayerBlobs, logger: logger}
	return &Store{dir: abs, mirrors: ms, docker: opts.DockerConfig, logger: logger,
		blobs:   blobs,
		layers:  layers,
		pullers: &pullerCache{keychain: opts.Keychain, docker: opts.DockerConfig, transport: t, m: map[string]*remote.Puller{}},
		capacity: &capacity{dir: abs, max: opts.MaxRootfsBytes, logger: logger, blobs: blobs, layers: layers,
			extra: opts.Extra, pinned: opts.Pinned},
	}, nil
}

// ExtraStorage is storage that the image storage's cap covers beside the
// store itself: the builder's layer cache.
type ExtraStorage interface {
	// Usage is the bytes it holds.
	Usage(ctx context.Context) (int64, error)
	// Reclaim frees what no build in progress needs.
	Reclaim(ctx context.Context) error
}

// dropWholeRootfs removes what a store before layers were shared left: one
// whole unpacked tree per image under rootfs/ (its record, without layer
// chains, reads as absent, so the image is unpacked again as layers). The
// trees are moved into tmp/ at once and deleted in the background.
func dropWholeRootfs(dir string, logger *slog.Logger) {
	ents, err := os.ReadDir(filepath.Join(dir, "rootfs"))
	if err != nil {
		return
	}
	var trash []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		t, err := os.MkdirTemp(filepath.Join(dir, "tmp"), "trash-*")
		if err != nil {
			return
		}
		if err := os.Rename(filepath.Join(dir, "rootfs", e.Name()), filepath.Join(t, "x")); err != nil {
			os.Remove(t)
			continue
		}
		trash = append(trash, t)
	}
	if len(trash) == 0 {
		return
	}
	logger.Info("image store: removing the whole unpacked trees of the store before layers were shared; images are unpacked again as shared layers on their next use", "trees", len(trash))
	go func() {
		for _, t := range trash {
			if err := os.RemoveAll(t); err != nil {
				logger.Warn("image store: remove an old unpacked tree", "dir", t, "err", err)
			}
		}
	}()
}

// SetExtra sets the storage beside the store that the cap covers (the
// builder's, made after the store): see Options.Extra.
func (s *Store) SetExtra(e ExtraStorage) { s.capacity.setExtra(e) }

// SetPinned sets the list of pinned references eviction never drops (the
// runs' store is opened after the image store): see Options.Pinned.
func (s *Store) SetPinned(pinned func(ctx context.Context) ([]string, error)) {
	s.capacity.setPinned(pinned)
}

// DockerConfig is the Docker config.json whose logins the store pulls with
// ("" = none): builds of the same platform read it too.
func (s *Store) DockerConfig() string { return s.docker }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// ---- files and locks ----

// writeFileAtomic writes b to path through a temp file in the store's tmp dir
// and a rename, so readers never see half a file.
func writeFileAtomic(storeDir, path string, b []byte) error {
	tmpDir := filepath.Join(storeDir, "tmp")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(tmpDir, "file-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// flockPath takes a flock on path (created if missing) and returns its release.
func flockPath(path string, how int) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flock(f, how); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return fmt.Errorf("flock %s: %w", f.Name(), err)
			}
			return nil
		}
	}
}

// shortDigest is for messages: sha256:0123456789ab.
func shortDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}
