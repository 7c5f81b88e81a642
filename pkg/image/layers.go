package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The layer store, as containerd's overlay snapshotter keeps one: every
// layer is unpacked once into a directory of its own, layers/<id>/, and an
// image's root filesystem is the overlay of its layers' directories. N
// images FROM one base cost the base once plus their own layers.
//
// A layer directory is named by the chain of compressed layer digests that
// ends in it (an OCI chain ID over blob digests), not by its own digest
// alone: what a layer directory holds depends a little on the layers below
// it (a directory it creates takes their owner and mode, a hardlink to
// their file becomes a copy), so the same blob on two different stacks is
// two directories. The name is the chain's first 16 hex digits, short so
// that an image of many layers fits overlayfs's one-page mount options;
// layers/<id>.json holds the full chain and is checked on use.
//
// Locks (flock, shared by every process on the store):
//
//	gc.lock              shared while unpacking layers and writing an image's
//	                     rootfs record, while importing (blobs to record) and
//	                     while a resolve stores a manifest; exclusive while
//	                     removing layers, and for a whole Prune (which
//	                     removes image records and blobs too)
//	layers/<id>.lock     exclusive while that layer is being unpacked
//	rootfs/<cfg>.lock    shared while an image is in use, exclusive while
//	                     unpacking it or dropping its rootfs record; a prune
//	                     forgets an image (record, blobs) only holding it
//
// Order: rootfs/<cfg>.lock, then gc.lock, then layers/<id>.lock. Prune,
// which holds gc.lock first, only tries rootfs locks (LOCK_NB): an image
// whose lock is taken is kept whole.
//
// A layer is referenced by every rootfs/<cfg>.json naming it; the garbage
// collector removes, under gc.lock, the layers no record names. An image in
// use holds its record (eviction needs its lock exclusively), so its layers
// stay; an unpack holds gc.lock shared from its first layer to its record,
// so nothing it unpacked goes before the record names it.

// layerStore is the store's unpacked layers, layers/<id>/ with their
// records and locks, and gc.lock: it unpacks an image's layers from its
// blobs (each once) and collects the layers no image names.
type layerStore struct {
	dir       string // the store's directory
	blobs     blobStore
	keepBlobs bool // see Options.KeepLayerBlobs
	logger    *slog.Logger
}

// layerIDLen is how many hex digits of the chain name a layer directory.
const layerIDLen = 16

// layerMeta is layers/<id>.json, written once the directory is complete.
type layerMeta struct {
	Chain    string    `json:"chain"`  // sha256 hex of the chain of blob digests
	Digest   string    `json:"digest"` // this layer's blob digest
	Size     int64     `json:"size"`   // bytes of file content
	Unpacked time.Time `json:"unpacked"`
}

// chainIDs returns, for each layer of rec, the hex chain name of the stack
// ending in it.
func chainIDs(rec record) []string {
	out := make([]string, len(rec.Layers))
	prev := ""
	for i, l := range rec.Layers {
		h := sha256.Sum256([]byte(prev + " " + l.Digest))
		prev = hex.EncodeToString(h[:])
		out[i] = prev
	}
	return out
}

func (s *layerStore) layerDir(chain string) string {
	return filepath.Join(s.dir, "layers", chain[:layerIDLen])
}

// layerComplete returns the layer's record when its directory is complete
// and belongs to this chain.
func (s *layerStore) layerComplete(chain string) (layerMeta, bool, error) {
	dir := s.layerDir(chain)
	b, err := os.ReadFile(dir + ".json")
	if err != nil {
		return layerMeta{}, false, nil
	}
	var m layerMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return layerMeta{}, false, nil // half a record: unpack again
	}
	if m.Chain != chain {
		return layerMeta{}, false, fmt.Errorf("layer directory %s belongs to chain %s, not %s (two chains share %d hex digits; prune the store)",
			dir, shortDigest("sha256:"+m.Chain), shortDigest("sha256:"+chain), layerIDLen)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return layerMeta{}, false, nil
	}
	return m, true, nil
}

// unpackLayers makes sure every layer of rec is unpacked, each once, and
// writes the image's rootfs record naming them; the caller holds the
// image's rootfs lock exclusively and gc.lock shared.
func (s *layerStore) unpackLayers(ctx context.Context, rec record, progress func(Progress)) (rootfsRecord, error) {
	start := time.Now()
	chains := chainIDs(rec)
	var total int64
	for _, l := range rec.Layers {
		total += l.Size
	}
	counter := newProgressCounter(progress, "unpack", total)
	rr := rootfsRecord{Config: rec.Config, Layers: len(rec.Layers)}
	var parents []string // lower layer dirs, topmost first
	var fresh int
	for i, l := range rec.Layers {
		if err := ctx.Err(); err != nil {
			return rootfsRecord{}, err
		}
		m, unpacked, err := s.unpackLayer(ctx, rec, i, chains[i], parents, counter)
		if err != nil {
			// A full disk names the store's directory (diskspace.Error).
			return rootfsRecord{}, diskspace.Wrap(s.dir, fmt.Errorf("layer %d (%s): %w", i+1, shortDigest(l.Digest), err))
		}
		if unpacked {
			fresh++
		} else {
			counter.add(l.Size)
		}
		rr.Size += m.Size
		rr.LayerIDs = append(rr.LayerIDs, chains[i])
		parents = append([]string{s.layerDir(chains[i])}, parents...)
	}
	counter.done()
	rr.Unpacked = time.Now().UTC()
	b, err := json.Marshal(rr)
	if err != nil {
		return rootfsRecord{}, err
	}
	cfg := mustHash(rec.Config)
	if err := writeFileAtomic(s.dir, filepath.Join(s.dir, "rootfs", cfg.Hex+".json"), b); err != nil {
		return rootfsRecord{}, err
	}
	if !s.keepBlobs {
		// Each unpacked layer is the one copy (see Options.KeepLayerBlobs).
		for _, l := range rec.Layers {
			if err := os.Remove(s.blobs.blobPath(mustHash(l.Digest))); err != nil && !os.IsNotExist(err) {
				s.logger.WarnContext(ctx, "remove an unpacked layer's blob", "layer", l.Digest, "err", err)
			}
		}
	}
	s.logger.InfoContext(ctx, "image unpacked", "image", rec.Digest, "config", rec.Config, "bytes", rr.Size,
		"layers", len(rec.Layers), "layers_unpacked", fresh, "layers_shared", len(rec.Layers)-fresh, "took", time.Since(start).Round(time.Millisecond))
	return rr, nil
}

// unpackLayer unpacks layer i of rec, unless another image (or process)
// did: true when this call unpacked it.
func (s *layerStore) unpackLayer(ctx context.Context, rec record, i int, chain string, parents []string, counter *progressCounter) (layerMeta, bool, error) {
	dir := s.layerDir(chain)
	unlock, err := flockPath(dir+".lock", unix.LOCK_EX)
	if err != nil {
		return layerMeta{}, false, err
	}
	defer unlock()
	if m, ok, err := s.layerComplete(chain); err != nil || ok {
		return m, false, err
	}
	l := rec.Layers[i]
	tmp, err := os.MkdirTemp(filepath.Join(s.dir, "tmp"), "layer-*")
	if err != nil {
		return layerMeta{}, false, err
	}
	defer os.RemoveAll(tmp)
	// MkdirTemp makes 0700; an overlay lower read from a user namespace needs
	// the root readable. A layer's own "./" entry may set it again, and a
	// layer above the first takes its lower's root mode.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return layerMeta{}, false, err
	}
	if len(parents) > 0 {
		if fi, err := os.Lstat(parents[len(parents)-1]); err == nil {
			_ = os.Chmod(tmp, fi.Mode().Perm())
		}
	}
	a, err := newLayerApplier(tmp, parents)
	if err != nil {
		return layerMeta{}, false, err
	}
	defer a.Close()
	if !a.chown && i == 0 {
		s.logger.WarnContext(ctx, "not running as root: the unpacked layers keep this user's ownership, not the image's", "image", rec.Digest, "euid", a.euid)
	}
	if err := s.applyLayer(a, l, counter); err != nil {
		return layerMeta{}, false, err
	}
	if n := a.skipped; n.devices+n.xattrs > 0 {
		s.logger.WarnContext(ctx, "not running as root: device nodes and xattrs outside user.* were left out of the unpacked layer",
			"image", rec.Digest, "layer", l.Digest, "device_nodes", n.devices, "xattrs", n.xattrs)
	}
	// Replace a leftover directory without a record (a crash between rename
	// and record write, or an interrupted removal).
	if _, err := os.Lstat(dir); err == nil {
		if err := removeTree(s.dir, dir); err != nil {
			return layerMeta{}, false, err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return layerMeta{}, false, err
	}
	m := layerMeta{Chain: chain, Digest: l.Digest, Size: a.size, Unpacked: time.Now().UTC()}
	b, err := json.Marshal(m)
	if err != nil {
		return layerMeta{}, false, err
	}
	if err := writeFileAtomic(s.dir, dir+".json", b); err != nil {
		return layerMeta{}, false, err
	}
	return m, true, nil
}

// storedLayer is one layer directory on disk.
type storedLayer struct {
	id   string // the directory name
	meta layerMeta
	ok   bool // its record is complete
}

func (s *layerStore) listLayers() ([]storedLayer, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "layers"))
	if err != nil {
		return nil, err
	}
	var out []storedLayer
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		l := storedLayer{id: e.Name()}
		if b, err := os.ReadFile(filepath.Join(s.dir, "layers", e.Name()+".json")); err == nil && json.Unmarshal(b, &l.meta) == nil {
			l.ok = true
		}
		out = append(out, l)
	}
	return out, nil
}

// referencedLayers returns the layer chains the images' rootfs records
// name, with the images naming each.
func (s *layerStore) referencedLayers() (map[string][]string, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "rootfs"))
	if err != nil {
		return nil, err
	}
	refs := map[string][]string{}
	for _, e := range ents {
		hexCfg, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.dir, "rootfs", e.Name()))
		if err != nil {
			continue
		}
		var rr rootfsRecord
		if json.Unmarshal(b, &rr) != nil {
			continue
		}
		for _, c := range rr.LayerIDs {
			refs[c] = append(refs[c], hexCfg)
		}
	}
	return refs, nil
}

// lockGC takes gc.lock exclusively: no unpack, import or pull is then
// under way (each holds it shared while it writes what its records will
// name). With wait false it gives up at once (ok false) when one is.
func (s *layerStore) lockGC(wait bool) (unlock func(), ok bool, err error) {
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "gc.lock"), os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, false, err
	}
	if err := flock(f, how); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func() { f.Close() }, true, nil
}

// gcLayers removes the layer directories no image's rootfs record names
// (and what an older store version left in rootfs/: whole unpacked trees).
// With wait false it gives up at once when an unpack is under way (an
// eviction must not stall a pull).
func (s *layerStore) gcLayers(ctx context.Context, wait bool) (n int, bytes int64, err error) {
	unlock, ok, err := s.lockGC(wait)
	if err != nil || !ok {
		return 0, 0, err
	}
	defer unlock()
	return s.collectLayers(ctx)
}

// collectLayers is gcLayers for a caller holding gc.lock exclusively.
func (s *layerStore) collectLayers(ctx context.Context) (n int, bytes int64, err error) {
	refs, err := s.referencedLayers()
	if err != nil {
		return 0, 0, err
	}
	keep := map[string]bool{}
	for c := range refs {
		keep[c[:layerIDLen]] = true
	}
	layers, err := s.listLayers()
	if err != nil {
		return 0, 0, err
	}
	for _, l := range layers {
		if err := ctx.Err(); err != nil {
			return n, bytes, err
		}
		if keep[l.id] {
			continue
		}
		base := filepath.Join(s.dir, "layers", l.id)
		// Record first: without it the directory counts as absent.
		if err := os.Remove(base + ".json"); err != nil && !os.IsNotExist(err) {
			return n, bytes, err
		}
		if err := removeTree(s.dir, base); err != nil {
			return n, bytes, err
		}
		_ = os.Remove(base + ".lock")
		n++
		bytes += l.meta.Size
	}
	// Whole unpacked trees of the store before layers were shared.
	ents, err := os.ReadDir(filepath.Join(s.dir, "rootfs"))
	if err != nil {
		return n, bytes, err
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := removeTree(s.dir, filepath.Join(s.dir, "rootfs", e.Name())); err != nil {
				return n, bytes, err
			}
		}
	}
	return n, bytes, nil
}

// layerDirs are the record's layer directories, topmost first.
func (s *layerStore) layerDirs(rr rootfsRecord) []string {
	out := make([]string, len(rr.LayerIDs))
	for i, c := range rr.LayerIDs {
		out[len(out)-1-i] = s.layerDir(c)
	}
	return out
}

// applyLayer unpacks one layer's blob through a.
func (s *layerStore) applyLayer(a *applier, l layerRecord, counter *progressCounter) error {
	blob, err := s.blobs.openBlob(mustHash(l.Digest), l.Size)
	if err != nil {
		return err
	}
	var src = &countingReader{r: blob, add: counter.add}
	zr, err := decompress(src)
	if err != nil {
		blob.Close()
		return fmt.Errorf("%w: decompress: %v", ErrCorrupt, err)
	}
	aerr := a.apply(zr)
	if aerr != nil && !errors.Is(aerr, ErrCorrupt) && !errors.Is(aerr, ErrUnsafeLayer) && isReadErr(aerr) {
		aerr = fmt.Errorf("%w: %v", ErrCorrupt, aerr)
	}
	zr.Close()
	if cerr := blob.Close(); aerr == nil && cerr != nil {
		return cerr
	}
	return aerr
}

// rootfsRecord returns an image's rootfs record when it and every layer it
// names are complete.
func (s *layerStore) rootfsRecord(cfg v1.Hash) (rootfsRecord, bool) {
	b, err := os.ReadFile(filepath.Join(s.dir, "rootfs", cfg.Hex+".json"))
	if err != nil {
		return rootfsRecord{}, false
	}
	var rr rootfsRecord
	if json.Unmarshal(b, &rr) != nil || len(rr.LayerIDs) != rr.Layers {
		return rootfsRecord{}, false // half a record, or one of a store before layers were shared
	}
	for _, c := range rr.LayerIDs {
		if _, ok, _ := s.layerComplete(c); !ok {
			return rootfsRecord{}, false
		}
	}
	return rr, true
}

// Lookup returns the host path of rel (a path in the image, like
// "etc/passwd") in the topmost layer holding it, as the overlay shows it:
// a whiteout or an opaque directory of an upper layer hides the lower
// ones. Symlinks are not followed. It errors with os.ErrNotExist when the
// image has no such entry.
func (r *Rootfs) Lookup(rel string) (string, error) {
	rel = strings.Trim(filepath.Clean("/"+rel), "/")
	parts := strings.Split(rel, "/")
	for _, l := range r.Layers {
		p := filepath.Join(l, rel)
		fi, err := os.Lstat(p)
		if err == nil {
			if isWhiteout(fi) {
				break
			}
			return p, nil
		}
		// An opaque or whited-out ancestor in this layer hides the layers below.
		hidden := false
		for i := len(parts) - 1; i > 0 && !hidden; i-- {
			anc := filepath.Join(l, filepath.Join(parts[:i]...))
			if fi, err := os.Lstat(anc); err == nil {
				hidden = isWhiteout(fi) || (fi.IsDir() && isOpaque(anc)) || !fi.IsDir()
			}
		}
		if hidden {
			break
		}
	}
	return "", fmt.Errorf("%s in image %s: %w", rel, r.Ref, os.ErrNotExist)
}

func isOpaque(dir string) bool {
	for _, x := range opaqueXattrs {
		buf := make([]byte, 1)
		if n, err := unix.Lgetxattr(dir, x, buf); err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}
	return false
}
