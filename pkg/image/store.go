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
//	rootfs/<config-hex>.lock         flock: exclusive while unpacking or evicting, shared while in use;
//	                                 its mtime is the image's last use
//	gc.lock                          flock: shared while unpacking, exclusive while removing layers
//	tmp/                             temp files and dirs, renamed into place when complete
//
// Only linux/amd64 images are taken.
package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sys/unix"

	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
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
type Store struct {
	dir       string
	mirrors   mirrorSet
	docker    string
	keychain  authn.Keychain
	transport http.RoundTripper
	maxRootfs int64
	keepBlobs bool
	extra     ExtraStorage
	pinned    func(ctx context.Context) ([]string, error)
	logger    *slog.Logger

	mu      sync.Mutex
	pullers map[string]*remote.Puller
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
	return &Store{dir: abs, mirrors: ms, docker: opts.DockerConfig, keychain: opts.Keychain, transport: t, maxRootfs: opts.MaxRootfsBytes,
		keepBlobs: opts.KeepLayerBlobs, extra: opts.Extra, pinned: opts.Pinned, logger: logger, pullers: map[string]*remote.Puller{}}, nil
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
func (s *Store) SetExtra(e ExtraStorage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extra = e
}

// SetPinned sets the list of pinned references eviction never drops (the
// runs' store is opened after the image store): see Options.Pinned.
func (s *Store) SetPinned(pinned func(ctx context.Context) ([]string, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pinned = pinned
}

func (s *Store) extraStorage() ExtraStorage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.extra
}

// DockerConfig is the Docker config.json whose logins the store pulls with
// ("" = none): builds of the same platform read it too.
func (s *Store) DockerConfig() string { return s.docker }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// puller returns a registry client for these credentials, reused across
// calls so that a warm resolve costs one manifest round trip (the token
// exchange and the /v2/ ping are cached by ggcr per repository).
func (s *Store) puller(creds []Credential) (*remote.Puller, error) {
	h := sha256.New()
	for _, c := range creds {
		if err := c.validate(); err != nil {
			return nil, err
		}
		fmt.Fprintf(h, "%q %q %q %q\n", c.Registry, c.Username, c.Password, c.Token)
	}
	key := hex.EncodeToString(h.Sum(nil))
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pullers[key]; ok {
		return p, nil
	}
	if len(s.pullers) > 64 { // many distinct workspace credentials: start over
		s.pullers = map[string]*remote.Puller{}
	}
	p, err := remote.NewPuller(
		remote.WithAuthFromKeychain(keychain{creds: creds, platform: s.keychain, configPath: s.docker}),
		remote.WithTransport(s.transport),
		remote.WithUserAgent("gauntlet"),
	)
	if err != nil {
		return nil, err
	}
	s.pullers[key] = p
	return p, nil
}

// ---- blobs ----

func (s *Store) blobPath(h v1.Hash) string {
	return filepath.Join(s.dir, "blobs", h.Algorithm, h.Hex)
}

func (s *Store) hasBlob(d v1.Hash, size int64) bool {
	fi, err := os.Stat(s.blobPath(d))
	return err == nil && fi.Mode().IsRegular() && (size < 0 || fi.Size() == size)
}

// writeBlob copies r into the store as blob want, checking size (when ≥ 0)
// and digest before renaming it into place: a blob path only ever holds the
// bytes its name says.
func (s *Store) writeBlob(want v1.Hash, size int64, r io.Reader, progress func(int64)) error {
	if want.Algorithm != "sha256" {
		return fmt.Errorf("%w: blob %s: only sha256 digests are supported", ErrCorrupt, want)
	}
	f, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "blob-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	h := sha256.New()
	var w io.Writer = io.MultiWriter(f, h)
	if progress != nil {
		w = io.MultiWriter(w, progressWriter(progress))
	}
	n, err := io.Copy(w, r)
	if err != nil {
		return diskspace.Wrap(s.dir, fmt.Errorf("blob %s: after %d bytes: %w", want, n, err))
	}
	if size >= 0 && n != size {
		return fmt.Errorf("%w: blob %s: got %d bytes, the manifest says %d (truncated or padded)", ErrCorrupt, want, n, size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.Hex {
		return fmt.Errorf("%w: blob %s: content has digest sha256:%s (digest mismatch)", ErrCorrupt, want, got)
	}
	if err := f.Chmod(0o444); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), s.blobPath(want))
}

type progressWriter func(int64)

func (p progressWriter) Write(b []byte) (int, error) { p(int64(len(b))); return len(b), nil }

func (s *Store) readBlob(d v1.Hash) ([]byte, error) {
	b, err := os.ReadFile(s.blobPath(d))
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != d.Hex {
		return nil, fmt.Errorf("%w: stored blob %s does not match its digest", ErrCorrupt, d)
	}
	return b, nil
}

// openBlob opens a stored blob through a reader that checks size and digest
// when it reaches the end (and on Close, reading what is left).
func (s *Store) openBlob(d v1.Hash, size int64) (io.ReadCloser, error) {
	f, err := os.Open(s.blobPath(d))
	if err != nil {
		return nil, err
	}
	return &verifyReader{f: f, h: sha256.New(), want: d, size: size}, nil
}

type verifyReader struct {
	f    *os.File
	h    hash.Hash
	n    int64
	want v1.Hash
	size int64
	done bool
	err  error
}

func (v *verifyReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.f.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if err == io.EOF {
		if verr := v.check(); verr != nil {
			v.err = verr
			return n, verr
		}
	}
	return n, err
}

func (v *verifyReader) check() error {
	v.done = true
	if v.size >= 0 && v.n != v.size {
		return fmt.Errorf("%w: blob %s: %d bytes, want %d", ErrCorrupt, v.want, v.n, v.size)
	}
	if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want.Hex {
		return fmt.Errorf("%w: blob %s: content has digest sha256:%s (digest mismatch)", ErrCorrupt, v.want, got)
	}
	return nil
}

// Close reads what is left, so a blob is always checked whole, and reports a
// mismatch.
func (v *verifyReader) Close() error {
	defer v.f.Close()
	if v.err != nil {
		return v.err
	}
	if !v.done {
		if _, err := io.Copy(v.h, v.f); err != nil {
			return err
		}
		fi, err := v.f.Stat()
		if err != nil {
			return err
		}
		v.n = fi.Size()
		return v.check()
	}
	return nil
}

// ---- image records ----

// record is what the store knows about one image manifest.
type record struct {
	Digest       string        `json:"digest"` // manifest digest
	MediaType    string        `json:"media_type"`
	ManifestSize int64         `json:"manifest_size"`
	Config       string        `json:"config"` // config digest
	ConfigSize   int64         `json:"config_size"`
	Layers       []layerRecord `json:"layers"`
	Names        []string      `json:"names"`            // canonical repo:tag (or repo) names it was resolved or imported under
	Index        string        `json:"index,omitempty"`  // the index it was chosen from, if any
	Source       string        `json:"source,omitempty"` // endpoint it was fetched from, or "import"
	Added        time.Time     `json:"added"`
}

type layerRecord struct {
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	MediaType string `json:"media_type"`
}

func (s *Store) recordPath(d v1.Hash) string {
	return filepath.Join(s.dir, "images", d.Hex+".json")
}

func (s *Store) loadRecord(d v1.Hash) (record, bool, error) {
	b, err := os.ReadFile(s.recordPath(d))
	if os.IsNotExist(err) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, false, fmt.Errorf("image record %s: %w", d, err)
	}
	return r, true, nil
}

// saveRecord writes r, merging the names of a record already there. Writers
// are serialised by a store-wide flock (short: one small file).
func (s *Store) saveRecord(r record) error {
	d, err := v1.NewHash(r.Digest)
	if err != nil {
		return err
	}
	unlock, err := flockPath(filepath.Join(s.dir, "store.lock"), unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	old, ok, err := s.loadRecord(d)
	if err != nil {
		return err
	}
	if ok {
		r.Names = mergeNames(old.Names, r.Names)
		r.Added = old.Added
		if r.Index == "" {
			r.Index = old.Index
		}
	}
	if err := s.writeRecord(r); err != nil {
		return err
	}
	// A tag names one image: when it moved, the image it named before loses it.
	ents, err := os.ReadDir(filepath.Join(s.dir, "images"))
	if err != nil {
		return err
	}
	for _, e := range ents {
		hex, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || hex == d.Hex {
			continue
		}
		other, found, err := s.loadRecord(v1.Hash{Algorithm: "sha256", Hex: hex})
		if err != nil || !found {
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(other.Names), func(n string) bool { return slices.Contains(r.Names, n) })
		if len(kept) != len(other.Names) {
			other.Names = kept
			if err := s.writeRecord(other); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Store) writeRecord(r record) error {
	d, err := v1.NewHash(r.Digest)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(s.dir, s.recordPath(d), b)
}

func mergeNames(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range append(append([]string{}, a...), b...) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

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
