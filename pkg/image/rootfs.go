package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// Config is the part of an image config a sandbox applies.
type Config struct {
	Env        []string          // KEY=value, in order
	WorkingDir string            // "" means /
	User       string            // "", "name", "uid", "uid:gid", "name:group"
	Entrypoint []string          // informational: attempts run their own commands
	Cmd        []string          // informational
	Labels     map[string]string // image labels
}

// Rootfs is an unpacked image, held in use until Close: the stack of its
// layer directories, which a sandbox mounts as the lower directories of an
// overlay (never write into them: attempts get their own upper elsewhere,
// and other images share them). While a Rootfs is open its layers are never
// removed, by this process or another sharing the store.
type Rootfs struct {
	// Layers are the image's layer directories, topmost first: overlayfs's
	// lowerdir=Layers[0]:Layers[1]:… Whiteouts in them are overlayfs
	// whiteouts (0/0 character devices) and opaque directories carry the
	// overlay.opaque xattr (trusted.* and user.*), as the kernel's overlayfs
	// and fuse-overlayfs read them.
	Layers []string
	Ref    string // the pinned reference it was unpacked for
	Digest string // image manifest digest
	Image  string // config digest (the cache key)
	Config Config
	Size   int64 // bytes of file content, summed over its layers

	lock *os.File
}

// Close releases the rootfs (its shared lock); eviction may remove it after.
func (r *Rootfs) Close() error {
	if r == nil || r.lock == nil {
		return nil
	}
	err := r.lock.Close()
	r.lock = nil
	return err
}

// rootfsRecord is rootfs/<hex>.json: written last, once every layer is
// unpacked, so its presence means the image can be mounted. It references
// its layers (by chain, bottom first) against garbage collection.
type rootfsRecord struct {
	Config   string    `json:"config"`
	Size     int64     `json:"size"`
	Unpacked time.Time `json:"unpacked"`
	Layers   int       `json:"layers"`
	LayerIDs []string  `json:"layer_chains"`
}

// Rootfs returns the unpacked root filesystem of a pinned image reference
// (repository@sha256:…, as Resolve returns), pulling and unpacking it on
// first use. Concurrent first users, in this process or others, wait for one
// unpack. The caller must Close the result when the sandbox using it is gone.
func (s *Store) Rootfs(ctx context.Context, pinnedRef string, creds ...Credential) (*Rootfs, error) {
	r, err := s.rootfs(ctx, pinnedRef, creds, nil, false)
	return r, imageErr(pinnedRef, err)
}

// rootfs is Rootfs; offline (a launch, or an import of a build) never
// touches the network: what is missing is ErrNotCached.
//
// Prune forgets an image (its record, its blobs) only holding gc.lock and
// the image's rootfs lock exclusively, so the record is read again once the
// rootfs lock is held (and, before fetching or unpacking, gc.lock shared):
// what is read then stays until the lock is released.
func (s *Store) rootfs(ctx context.Context, pinnedRef string, creds []Credential, progress func(Progress), offline bool) (*Rootfs, error) {
	ref, err := parseRef(pinnedRef)
	if err != nil {
		return nil, err
	}
	d, ok := ref.(name.Digest)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not pinned: want repository@sha256:<hex> (from Resolve)", ErrInvalidReference, pinnedRef)
	}
	var res Resolved
	if offline {
		h, err := v1.NewHash(d.DigestStr())
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidReference, err)
		}
		rec, found, err := s.blobs.loadRecord(h)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("%w: the image is not in the store (pull it, or sync the benchmark)", ErrNotCached)
		}
		res = resolvedFrom(rec, ref.Context(), "", "local")
	} else if res, err = s.resolve(ctx, pinnedRef, creds); err != nil {
		return nil, err
	}
	rec, ok, err := s.blobs.loadRecord(mustHash(res.Digest))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: the image's record was removed (pruned) while it was being prepared", ErrNotCached)
	}
	cfgHash := mustHash(rec.Config)
	s.hook("rootfs: record read")
	dir := filepath.Join(s.dir, "rootfs", cfgHash.Hex)
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	out := &Rootfs{Ref: res.Ref, Digest: rec.Digest, Image: rec.Config, lock: lock}
	fail := func(err error) (*Rootfs, error) { lock.Close(); return nil, err }
	// held checks, with the rootfs lock held, that a prune did not forget
	// the image before it was taken.
	held := func() error {
		if again, found, err := s.blobs.loadRecord(mustHash(res.Digest)); err != nil {
			return err
		} else if !found || again.Config != rec.Config {
			return fmt.Errorf("%w: the image was pruned while it was being prepared (the next sync brings it back)", ErrNotCached)
		}
		return nil
	}
	finish := func(rr rootfsRecord) (*Rootfs, error) {
		cfg, err := s.imageConfig(cfgHash)
		if err != nil {
			return fail(err)
		}
		out.Config, out.Size, out.Layers = cfg, rr.Size, s.layers.layerDirs(rr)
		s.touch(lock)
		return out, nil
	}
	// Fast path: a complete rootfs, held shared.
	if err := flock(lock, unix.LOCK_SH); err != nil {
		return fail(err)
	}
	if rr, ok := s.layers.rootfsRecord(cfgHash); ok {
		if err := held(); err != nil {
			return fail(err)
		}
		return finish(rr)
	}
	// Slow path: exclusive, check again, unpack once.
	if err := flock(lock, unix.LOCK_EX); err != nil {
		return fail(err)
	}
	s.hook("rootfs: locked")
	_, ok = s.layers.rootfsRecord(cfgHash)
	unpacked := !ok
	if unpacked {
		// Layers already unpacked (for another image) need no blob: hold
		// them against garbage collection from the check to the record.
		unlockGC, err := flockPath(filepath.Join(s.dir, "gc.lock"), unix.LOCK_SH)
		if err != nil {
			return fail(err)
		}
		err = held()
		if err == nil && offline {
			if missing := s.missingLayers(rec); len(missing) > 0 {
				err = fmt.Errorf("%w: layer %s is neither stored nor unpacked (pruned or evicted; the next sync brings it back)", ErrNotCached, shortDigest(missing[0].Digest))
			}
		}
		if err == nil {
			err = s.fetchLayers(ctx, res, rec, creds, progress)
		}
		if err == nil {
			_, err = s.layers.unpackLayers(ctx, rec, progress)
		}
		unlockGC()
		if err != nil {
			return fail(err)
		}
	}
	// Downgrade to shared: other users may now proceed, eviction may not.
	// flock converts by unlocking first: an eviction or a prune may take the
	// image in between, so the record is checked again under the shared lock.
	if err := flock(lock, unix.LOCK_SH); err != nil {
		return fail(err)
	}
	if err := held(); err != nil {
		return fail(err)
	}
	rr, ok := s.layers.rootfsRecord(cfgHash)
	if !ok {
		return fail(fmt.Errorf("%w: its rootfs was evicted or pruned as it was unpacked", ErrNotCached))
	}
	r, err := finish(rr)
	if err == nil && unpacked && s.capacity.max > 0 {
		s.capacity.evict(ctx, cfgHash.Hex)
	}
	return r, err
}

// CachedRootfs is Rootfs without the network and without unpacking: the
// rootfs of a pinned reference if it is in the cache, else an error wrapping
// ErrNotCached. A sandbox launch uses it, since images are pulled and
// unpacked at sync, outside the run's concurrency slots. Close the result
// when the sandbox is gone.
func (s *Store) CachedRootfs(ctx context.Context, pinnedRef string) (*Rootfs, error) {
	r, err := s.cachedRootfs(ctx, pinnedRef)
	return r, imageErr(pinnedRef, err)
}

// RestoreRootfs is CachedRootfs that also unpacks an evicted rootfs again
// when the image's record, config and every layer are still in the store:
// from those local blobs only, never the network (a launch must not pull).
// Eviction (max_rootfs_gb) drops unpacked trees, not blobs, so a benchmark
// whose rootfs another sync evicted still launches; an image whose blobs
// were pruned too is ErrNotCached, for the next sync to fetch.
func (s *Store) RestoreRootfs(ctx context.Context, pinnedRef string) (r *Rootfs, restored bool, err error) {
	r, err = s.cachedRootfs(ctx, pinnedRef)
	if err == nil || !errors.Is(err, ErrNotCached) {
		return r, false, imageErr(pinnedRef, err)
	}
	if !s.storedLocally(pinnedRef) {
		return nil, false, imageErr(pinnedRef, err)
	}
	r, err = s.rootfs(ctx, pinnedRef, nil, nil, true)
	return r, err == nil, imageErr(pinnedRef, err)
}

// storedLocally reports whether the pinned image's record and config are
// in the store and each layer either as a blob or unpacked.
func (s *Store) storedLocally(pinnedRef string) bool {
	ref, err := parseRef(pinnedRef)
	if err != nil {
		return false
	}
	d, ok := ref.(name.Digest)
	if !ok {
		return false
	}
	h, err := v1.NewHash(d.DigestStr())
	if err != nil {
		return false
	}
	rec, ok, err := s.blobs.loadRecord(h)
	if err != nil || !ok || !s.blobs.hasBlob(mustHash(rec.Config), rec.ConfigSize) {
		return false
	}
	return len(s.missingLayers(rec)) == 0
}

// missingLayers are the layers of rec that are neither stored as a blob
// nor unpacked (on the chain rec stacks them on).
func (s *Store) missingLayers(rec record) []layerRecord {
	var out []layerRecord
	for i, c := range chainIDs(rec) {
		l := rec.Layers[i]
		if s.blobs.hasBlob(mustHash(l.Digest), l.Size) {
			continue
		}
		if _, ok, _ := s.layers.layerComplete(c); ok {
			continue
		}
		out = append(out, l)
	}
	return out
}

func (s *Store) cachedRootfs(ctx context.Context, pinnedRef string) (*Rootfs, error) {
	ref, err := parseRef(pinnedRef)
	if err != nil {
		return nil, err
	}
	d, ok := ref.(name.Digest)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not pinned: want repository@sha256:<hex> (from Resolve)", ErrInvalidReference, pinnedRef)
	}
	h, err := v1.NewHash(d.DigestStr())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidReference, err)
	}
	rec, ok, err := s.blobs.loadRecord(h)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: the image is not in the store (pull it, or sync the benchmark)", ErrNotCached)
	}
	cfgHash := mustHash(rec.Config)
	dir := filepath.Join(s.dir, "rootfs", cfgHash.Hex)
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flock(lock, unix.LOCK_SH); err != nil {
		lock.Close()
		return nil, err
	}
	rr, ok := s.layers.rootfsRecord(cfgHash)
	if !ok {
		lock.Close()
		return nil, fmt.Errorf("%w: its rootfs is not unpacked (evicted or never pulled)", ErrNotCached)
	}
	// A prune forgets an image only with its lock held exclusively: read
	// under the shared lock, the record (and its config) stays until Close.
	if again, found, err := s.blobs.loadRecord(h); err != nil || !found || again.Config != rec.Config {
		lock.Close()
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: the image was pruned (pull it, or sync the benchmark)", ErrNotCached)
	}
	cfg, err := s.imageConfig(cfgHash)
	if err != nil {
		lock.Close()
		return nil, err
	}
	s.touch(lock)
	return &Rootfs{Layers: s.layers.layerDirs(rr), Ref: canonicalRepo(ref.Context()) + "@" + rec.Digest, Digest: rec.Digest, Image: rec.Config,
		Config: cfg, Size: rr.Size, lock: lock}, nil
}

func (s *Store) touch(lock *os.File) {
	now := time.Now()
	_ = os.Chtimes(lock.Name(), now, now)
}

func (s *Store) imageConfig(cfg v1.Hash) (Config, error) {
	b, err := s.blobs.readBlob(cfg)
	if err != nil {
		return Config{}, err
	}
	cf, err := v1.ParseConfigFile(strings.NewReader(string(b)))
	if err != nil {
		return Config{}, fmt.Errorf("%w: config %s: %v", ErrCorrupt, cfg, err)
	}
	c := cf.Config
	return Config{Env: c.Env, WorkingDir: c.WorkingDir, User: c.User, Entrypoint: c.Entrypoint, Cmd: c.Cmd, Labels: c.Labels}, nil
}

// fetchLayers downloads the layers not yet stored, three at a time, from the
// first endpoint that has each.
func (s *Store) fetchLayers(ctx context.Context, res Resolved, rec record, creds []Credential, progress func(Progress)) error {
	missing := s.missingLayers(rec)
	var total int64
	for _, l := range missing {
		total += l.Size
	}
	if len(missing) == 0 {
		return nil
	}
	repo, err := name.NewRepository(res.Name, name.WeakValidation)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidReference, err)
	}
	p, err := s.pullers.get(creds)
	if err != nil {
		return err
	}
	eps, err := s.mirrors.endpoints(repo)
	if err != nil {
		return err
	}
	counter := newProgressCounter(progress, "download", total)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(3)
	for _, l := range missing {
		g.Go(func() error { return s.fetchLayer(gctx, p, eps, l, counter) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	counter.done()
	s.logger.InfoContext(ctx, "image pulled", "image", res.Ref, "layers", len(missing), "bytes", total, "source", rec.Source)
	return nil
}

func (s *Store) fetchLayer(ctx context.Context, p *remote.Puller, eps []endpoint, l layerRecord, counter *progressCounter) error {
	d := mustHash(l.Digest)
	var errs []error
	for _, ep := range eps {
		rl, err := p.Layer(ctx, ep.repo.Digest(l.Digest))
		if err == nil {
			var n int64
			err = s.fetchBlob(rl, d, l.Size, func(k int64) { n += k; counter.add(k) })
			if err != nil {
				counter.add(-n)
			}
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		err = classify(err)
		errs = append(errs, fmt.Errorf("layer %s from %s: %w", shortDigest(l.Digest), ep.label, err))
		if errors.Is(err, ErrCorrupt) {
			continue // another endpoint may hold good bytes; if none does, corrupt is the answer
		}
	}
	return joinEndpointErrors(errs)
}

func isReadErr(err error) bool {
	s := err.Error()
	return strings.Contains(s, "gzip") || strings.Contains(s, "zstd") || strings.Contains(s, "unexpected EOF") || strings.Contains(s, "flate")
}

// removeTree removes a directory through a rename into tmp first, so that a
// half-removed tree never sits at a cache path.
func removeTree(storeDir, dir string) error {
	trash, err := os.MkdirTemp(filepath.Join(storeDir, "tmp"), "trash-*")
	if err != nil {
		return err
	}
	if err := os.Rename(dir, filepath.Join(trash, "x")); err != nil {
		os.Remove(trash)
		return err
	}
	return os.RemoveAll(trash)
}
