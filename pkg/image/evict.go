package image

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// capacity keeps the image storage under its cap (Options.MaxRootfsBytes):
// it measures what the store and the storage beside it hold, and evicts
// the least recently used unpacked images (rootfs/<cfg>.json, under their
// locks) that are neither in use nor pinned.
type capacity struct {
	dir    string // the store's directory
	max    int64  // 0: no cap
	logger *slog.Logger
	blobs  blobStore
	layers *layerStore

	mu     sync.Mutex // guards extra and pinned, which may be set after Open
	extra  ExtraStorage
	pinned func(ctx context.Context) ([]string, error)
}

func (s *capacity) setExtra(e ExtraStorage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extra = e
}

func (s *capacity) setPinned(pinned func(ctx context.Context) ([]string, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pinned = pinned
}

func (s *capacity) extraStorage() ExtraStorage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.extra
}

// cachedRootfs is one unpacked image on disk: its rootfs record.
type cachedRootfs struct {
	hex      string
	size     int64
	lastUsed time.Time
	chains   []string
}

func (s *capacity) listCachedRootfs() ([]cachedRootfs, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "rootfs"))
	if err != nil {
		return nil, err
	}
	var out []cachedRootfs
	for _, e := range ents {
		hex, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		rr, ok := s.layers.rootfsRecord(mustHash("sha256:" + hex))
		if !ok {
			continue
		}
		c := cachedRootfs{hex: hex, size: rr.Size, lastUsed: rr.Unpacked, chains: rr.LayerIDs}
		if fi, err := os.Stat(filepath.Join(s.dir, "rootfs", hex+".lock")); err == nil {
			c.lastUsed = fi.ModTime()
		}
		out = append(out, c)
	}
	return out, nil
}

// Usage is what the image storage holds on disk.
type Usage struct {
	Layers      int   // unpacked layer directories
	LayerBytes  int64 // their file content
	Blobs       int   // stored blobs (compressed layers, configs, manifests)
	BlobBytes   int64 // their size
	ExtraBytes  int64 // what Options.Extra reports (the builder's storage)
	Images      int   // image records
	Unpacked    int   // images whose rootfs is unpacked
	ImageBytes  int64 // Σ over unpacked images of their rootfs size: what unshared copies would take
	SharedBytes int64 // bytes of layers more than one unpacked image uses (counted once)
}

// Total is the storage the cap (MaxRootfsBytes) bounds.
func (u Usage) Total() int64 { return u.LayerBytes + u.BlobBytes + u.ExtraBytes }

// DiskUsage measures the store: layers, blobs, the extra storage, and what
// sharing layers saves.
func (s *Store) DiskUsage(ctx context.Context) (Usage, error) { return s.capacity.diskUsage(ctx) }

func (s *capacity) diskUsage(ctx context.Context) (Usage, error) {
	u, err := s.storeUsage()
	if err != nil {
		return u, err
	}
	if extra := s.extraStorage(); extra != nil {
		n, err := extra.Usage(ctx)
		if err != nil {
			s.logger.WarnContext(ctx, "image storage: measure the builder's storage", "err", err)
		}
		u.ExtraBytes = n
	}
	return u, ctx.Err()
}

// storeUsage is DiskUsage without the extra storage (cheap: directory
// listings and small records).
func (s *capacity) storeUsage() (Usage, error) {
	var u Usage
	layers, err := s.layers.listLayers()
	if err != nil {
		return u, err
	}
	sizes := map[string]int64{}
	for _, l := range layers {
		if l.ok {
			u.Layers++
			u.LayerBytes += l.meta.Size
			sizes[l.id] = l.meta.Size
		}
	}
	refs, err := s.layers.referencedLayers()
	if err != nil {
		return u, err
	}
	for c, imgs := range refs {
		sz := sizes[c[:layerIDLen]]
		u.ImageBytes += sz * int64(len(imgs))
		if len(imgs) > 1 {
			u.SharedBytes += sz
		}
	}
	blobs, err := os.ReadDir(filepath.Join(s.dir, "blobs", "sha256"))
	if err != nil {
		return u, err
	}
	for _, b := range blobs {
		if fi, err := b.Info(); err == nil {
			u.Blobs++
			u.BlobBytes += fi.Size()
		}
	}
	if ents, err := os.ReadDir(filepath.Join(s.dir, "images")); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".json") {
				u.Images++
			}
		}
	}
	if cached, err := s.listCachedRootfs(); err == nil {
		u.Unpacked = len(cached)
	}
	return u, nil
}

// evict brings the image storage under MaxRootfsBytes: it drops the least
// recently used unpacked images not in use and not pinned (their layers go
// when no other image uses them), then, if still over, asks the extra
// storage (the builder's) to reclaim what it can. keep is never dropped (it
// was just unpacked for a caller). Failures are logged: eviction never
// fails the caller.
func (s *capacity) evict(ctx context.Context, keep string) {
	u, err := s.diskUsage(ctx)
	if err != nil {
		s.logger.Warn("image eviction: measure the store", "err", err)
		return
	}
	if u.Total() <= s.max {
		return
	}
	all, err := s.listCachedRootfs()
	if err != nil {
		s.logger.Warn("image eviction: list images", "err", err)
		return
	}
	pinned := s.pinnedConfigs(ctx)
	sort.Slice(all, func(i, j int) bool { return all[i].lastUsed.Before(all[j].lastUsed) })
	for _, c := range all {
		if c.hex == keep || pinned[c.hex] {
			continue
		}
		removed, err := s.removeRootfs(c.hex)
		if err != nil {
			s.logger.Warn("image eviction", "config", "sha256:"+c.hex, "err", err)
			continue
		}
		if !removed {
			continue
		}
		n, freed, err := s.layers.gcLayers(ctx, false)
		if err != nil {
			s.logger.Warn("image eviction: remove layers", "err", err)
		}
		s.logger.Info("image evicted", "config", "sha256:"+c.hex, "layers_removed", n, "bytes", freed, "last_used", c.lastUsed.UTC().Format(time.RFC3339))
		// The builder's storage is measured once (a walk of its files);
		// the store's own part is cheap to measure again.
		extra := u.ExtraBytes
		if u, err = s.storeUsage(); err != nil {
			return
		}
		if u.ExtraBytes = extra; u.Total() <= s.max {
			return
		}
	}
	if extra := s.extraStorage(); extra != nil {
		if err := extra.Reclaim(ctx); err != nil {
			s.logger.Warn("image eviction: reclaim the builder's storage", "err", err)
		}
		if u, err = s.diskUsage(ctx); err == nil && u.Total() > s.max {
			s.logger.Warn("image storage over its cap: what is left is in use, pinned by unfinished runs, or blobs (prune with `gauntlet images prune --images`)",
				"bytes", u.Total(), "cap", s.max)
		}
	}
}

// pinnedConfigs are the config digests (hex) of the images Options.Pinned
// names: never evicted.
func (s *capacity) pinnedConfigs(ctx context.Context) map[string]bool {
	out := map[string]bool{}
	s.mu.Lock()
	pinned := s.pinned
	s.mu.Unlock()
	if pinned == nil {
		return out
	}
	refs, err := pinned(ctx)
	if err != nil {
		// Unknown pins: evict nothing rather than what a run needs.
		s.logger.Warn("image eviction: list the images unfinished runs pin; evicting none", "err", err)
		all, _ := s.listCachedRootfs()
		for _, c := range all {
			out[c.hex] = true
		}
		return out
	}
	for _, ref := range refs {
		r, err := parseRef(ref)
		if err != nil {
			continue
		}
		d, ok := r.(interface{ DigestStr() string })
		if !ok {
			continue
		}
		h, err := v1.NewHash(d.DigestStr())
		if err != nil {
			continue
		}
		if rec, found, err := s.blobs.loadRecord(h); err == nil && found {
			out[strings.TrimPrefix(rec.Config, "sha256:")] = true
		}
	}
	return out
}

// removeRootfs drops one unpacked image's record if no one holds it; false
// when it is in use. Its layers go at the next garbage collection, unless
// another image uses them.
func (s *capacity) removeRootfs(hex string) (bool, error) {
	base := filepath.Join(s.dir, "rootfs", hex)
	lock, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return false, err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil
		}
		return false, err
	}
	if err := os.Remove(base + ".json"); err != nil && !os.IsNotExist(err) {
		return false, err
	}
	return true, nil
}
