package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// Info describes one stored image.
type Info struct {
	Names    []string  // repo:tag names it was resolved or imported under
	Digest   string    // image manifest digest
	Config   string    // config digest
	Size     int64     // compressed size of config and layers
	Stored   bool      // every layer is in the store, as a blob or unpacked
	Added    time.Time // first stored
	Source   string    // endpoint it last came from, or "import"
	Unpacked bool      // its layers are unpacked
	Rootfs   int64     // bytes of the unpacked rootfs, over all its layers
	Layers   int       // how many layers it stacks
	Own      int64     // bytes of its unpacked layers no other unpacked image uses
	Shared   int64     // bytes of its unpacked layers other unpacked images use too
	LastUsed time.Time // last Rootfs call for it
	InUse    bool      // a Rootfs is open on it (here or in another process)
}

// List returns the stored images, most recently used first.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "images"))
	if err != nil {
		return nil, err
	}
	refs, err := s.layers.referencedLayers()
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range ents {
		hex, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec, found, err := s.blobs.loadRecord(v1.Hash{Algorithm: "sha256", Hex: hex})
		if err != nil || !found {
			continue // being written or removed
		}
		info := Info{Names: rec.Names, Digest: rec.Digest, Config: rec.Config, Size: rec.ConfigSize, Added: rec.Added, Source: rec.Source,
			Stored: len(s.missingLayers(rec)) == 0}
		for _, l := range rec.Layers {
			info.Size += l.Size
		}
		cfg := mustHash(rec.Config)
		info.Layers = len(rec.Layers)
		if rr, ok := s.layers.rootfsRecord(cfg); ok {
			info.Unpacked, info.Rootfs = true, rr.Size
			for _, c := range rr.LayerIDs {
				m, _, _ := s.layers.layerComplete(c)
				if len(refs[c]) > 1 {
					info.Shared += m.Size
				} else {
					info.Own += m.Size
				}
			}
			lock := filepath.Join(s.dir, "rootfs", cfg.Hex+".lock")
			if fi, err := os.Stat(lock); err == nil {
				info.LastUsed = fi.ModTime()
			}
			info.InUse = inUse(lock)
		}
		out = append(out, info)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].LastUsed.Equal(out[j].LastUsed) {
			return out[i].LastUsed.After(out[j].LastUsed)
		}
		return out[i].Added.After(out[j].Added)
	})
	return out, nil
}

// inUse reports whether someone holds the lock (shared or exclusive).
func inUse(lockPath string) bool {
	f, err := os.Open(lockPath)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	return false
}

// Pull resolves ref, downloads what is missing and unpacks its rootfs, so
// that the first attempt on it starts at once. progress (may be nil) hears
// the download and unpack phases.
func (s *Store) Pull(ctx context.Context, ref string, progress func(Progress), creds ...Credential) (Resolved, error) {
	res, err := s.resolve(ctx, ref, creds)
	if err != nil {
		return Resolved{}, imageErr(ref, err)
	}
	r, err := s.rootfs(ctx, res.Ref, creds, progress, false)
	if err != nil {
		return Resolved{}, imageErr(ref, err)
	}
	if err := r.Close(); err != nil {
		return Resolved{}, imageErr(ref, err)
	}
	return res, nil
}

// PruneOptions choose what Prune removes.
type PruneOptions struct {
	// Images also forgets every image not in use — its record, its
	// unpacked layers no other image uses, its blobs: the next use syncs
	// (pulls or builds) again. Without it, only what no image names goes:
	// unpacked images whose record is gone, the layers no unpacked image
	// uses, unreferenced blobs, temp leftovers.
	Images bool
}

// PruneReport says what Prune removed and what it left because it was in use.
type PruneReport struct {
	Rootfs      int   // unpacked images dropped
	Layers      int   // layer directories removed
	RootfsBytes int64 // their size
	Images      int   // image records removed
	Blobs       int   // blobs removed
	BlobBytes   int64 // their size
	InUse       int   // unpacked images kept because a sandbox holds them
}

// orphanAge is how old a temp entry or an unreferenced blob must be before
// Prune takes it: younger ones may belong to a pull in progress elsewhere.
const orphanAge = time.Hour

// Prune removes what no image names — unpacked images whose record is
// gone, the layers no unpacked image uses, temp leftovers, blobs no image
// record refers to — and, with opts.Images, every image not in use. It is
// safe while pulls, builds and sandboxes run, by construction: it decides
// and removes under gc.lock held exclusively, so no unpack, import or pull
// is half-way (each holds gc.lock shared while it writes what its records
// will name), and it drops an image only with the image's rootfs lock held
// exclusively, which a sandbox holds shared while it uses the image and an
// unpack (a launch restoring an evicted rootfs) exclusively while it
// reads the image's blobs: those images, their records and blobs stay.
func (s *Store) Prune(ctx context.Context, opts PruneOptions) (PruneReport, error) {
	var rep PruneReport
	unlockGC, _, err := s.layers.lockGC(true)
	if err != nil {
		return rep, err
	}
	defer unlockGC()
	cached, err := s.capacity.listCachedRootfs()
	if err != nil {
		return rep, err
	}
	// Without Images, an image the store still names keeps its layers:
	// they are its one copy (its blobs went when they were unpacked).
	named := map[string]bool{}
	if !opts.Images {
		ents, err := os.ReadDir(filepath.Join(s.dir, "images"))
		if err != nil {
			return rep, err
		}
		for _, e := range ents {
			if hex, ok := strings.CutSuffix(e.Name(), ".json"); ok {
				if rec, found, err := s.blobs.loadRecord(v1.Hash{Algorithm: "sha256", Hex: hex}); err == nil && found {
					named[strings.TrimPrefix(rec.Config, "sha256:")] = true
				}
			}
		}
	}
	// drop removes an image's rootfs record unless someone holds the
	// image (in use, or being unpacked): false then, and the image is kept
	// whole — record, blobs and layers.
	dropped, held := map[string]bool{}, map[string]bool{}
	drop := func(hex string) (bool, error) {
		if held[hex] || dropped[hex] {
			return dropped[hex], nil
		}
		removed, err := s.capacity.removeRootfs(hex)
		if err != nil {
			return false, fmt.Errorf("prune rootfs sha256:%s: %w", hex, err)
		}
		dropped[hex], held[hex] = removed, !removed
		return removed, nil
	}
	for _, c := range cached {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if named[c.hex] {
			continue
		}
		removed, err := drop(c.hex)
		if err != nil {
			return rep, err
		}
		if !removed {
			rep.InUse++
			continue
		}
		rep.Rootfs++
	}
	nl, lbytes, err := s.layers.collectLayers(ctx)
	rep.Layers, rep.RootfsBytes = nl, lbytes
	if err != nil {
		return rep, err
	}
	forgotten := map[string]bool{} // blobs of the records removed here
	if opts.Images {
		ents, err := os.ReadDir(filepath.Join(s.dir, "images"))
		if err != nil {
			return rep, err
		}
		for _, e := range ents {
			hex, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok {
				continue
			}
			rec, found, err := s.blobs.loadRecord(v1.Hash{Algorithm: "sha256", Hex: hex})
			if err != nil || !found {
				continue
			}
			// An image never unpacked has no rootfs record, and still its
			// lock: a launch unpacking it holds it exclusively.
			if removed, err := drop(strings.TrimPrefix(rec.Config, "sha256:")); err != nil {
				return rep, err
			} else if !removed {
				continue
			}
			if err := os.Remove(filepath.Join(s.dir, "images", e.Name())); err != nil && !os.IsNotExist(err) {
				return rep, err
			}
			rep.Images++
			forgotten[rec.Digest], forgotten[rec.Config], forgotten[rec.Index] = true, true, true
			for _, l := range rec.Layers {
				forgotten[l.Digest] = true
			}
		}
	}
	n, bytes, err := s.gcBlobs(ctx, forgotten)
	rep.Blobs, rep.BlobBytes = n, bytes
	if err != nil {
		return rep, err
	}
	return rep, s.cleanTmp()
}

// gcBlobs removes blobs that no record refers to (manifest, its index,
// config, layers): those of forgotten records at once, others once older
// than orphanAge (younger ones may belong to a pull whose record is not
// written yet).
func (s *Store) gcBlobs(ctx context.Context, forgotten map[string]bool) (int, int64, error) {
	keep := map[string]bool{}
	ents, err := os.ReadDir(filepath.Join(s.dir, "images"))
	if err != nil {
		return 0, 0, err
	}
	for _, e := range ents {
		hex, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		rec, found, err := s.blobs.loadRecord(v1.Hash{Algorithm: "sha256", Hex: hex})
		if err != nil || !found {
			continue
		}
		keep[rec.Digest], keep[rec.Config], keep[rec.Index] = true, true, true
		for _, l := range rec.Layers {
			keep[l.Digest] = true
		}
	}
	blobs, err := os.ReadDir(filepath.Join(s.dir, "blobs", "sha256"))
	if err != nil {
		return 0, 0, err
	}
	var n int
	var total int64
	for _, b := range blobs {
		if err := ctx.Err(); err != nil {
			return n, total, err
		}
		if keep["sha256:"+b.Name()] {
			continue
		}
		fi, err := b.Info()
		if err != nil || (time.Since(fi.ModTime()) < orphanAge && !forgotten["sha256:"+b.Name()]) {
			continue
		}
		if err := os.Remove(filepath.Join(s.dir, "blobs", "sha256", b.Name())); err != nil && !os.IsNotExist(err) {
			return n, total, err
		}
		n++
		total += fi.Size()
	}
	return n, total, nil
}

// cleanTmp removes temp entries older than orphanAge (left by a crash).
func (s *Store) cleanTmp() error {
	dir := filepath.Join(s.dir, "tmp")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < orphanAge {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Stored finds, without the network, the image stored under a tag
// reference (an import's name, or a resolved repo:tag) whose config and
// layers are all in the store: ok false when there is none.
func (s *Store) Stored(ctx context.Context, ref string) (Resolved, bool, error) {
	r, err := parseRef(ref)
	if err != nil {
		return Resolved{}, false, imageErr(ref, err)
	}
	tag, ok := r.(name.Tag)
	if !ok {
		return Resolved{}, false, imageErr(ref, fmt.Errorf("%w: %q: want a tag reference (repository:tag)", ErrInvalidReference, ref))
	}
	want := canonicalRepo(tag.Context()) + ":" + tag.TagStr()
	ents, err := os.ReadDir(filepath.Join(s.dir, "images"))
	if err != nil {
		return Resolved{}, false, imageErr(ref, err)
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return Resolved{}, false, err
		}
		hex, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		rec, found, err := s.blobs.loadRecord(v1.Hash{Algorithm: "sha256", Hex: hex})
		if err != nil || !found || !slices.Contains(rec.Names, want) {
			continue
		}
		if !s.storedLocally(canonicalRepo(tag.Context()) + "@" + rec.Digest) {
			return Resolved{}, false, nil
		}
		return resolvedFrom(rec, tag.Context(), tag.TagStr(), "local"), true, nil
	}
	return Resolved{}, false, nil
}
