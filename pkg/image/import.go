package image

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"
)

// Import adds a locally built image to the store under ref (a tag reference
// such as gauntlet.local/build/<key>:latest) and returns it pinned, so that
// Rootfs(res.Ref) needs no registry. src is one of:
//
//   - an OCI image layout directory (`buildah push IMG oci:DIR`),
//   - an OCI archive, a tar of such a directory (`buildah push IMG oci-archive:FILE`),
//   - a Docker archive (`buildah push IMG docker-archive:FILE`, `docker save`).
//
// The layout or archive must hold one image (or one index with a
// linux/amd64 image). Blobs are checked against their digests on the way in.
func (s *Store) Import(ctx context.Context, src, ref string) (Resolved, error) {
	res, err := s.importImage(ctx, src, ref)
	return res, imageErr(ref, err)
}

func (s *Store) importImage(ctx context.Context, src, ref string) (Resolved, error) {
	r, err := parseRef(ref)
	if err != nil {
		return Resolved{}, err
	}
	tag, ok := r.(name.Tag)
	if !ok {
		return Resolved{}, fmt.Errorf("%w: import name %q: want a tag reference (repository:tag), not a digest", ErrInvalidReference, ref)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return Resolved{}, fmt.Errorf("import source: %w", err)
	}
	var img v1.Image
	if fi.IsDir() {
		img, err = imageFromLayout(src)
	} else {
		var cleanup func()
		img, cleanup, err = imageFromArchive(s.dir, src)
		defer cleanup()
	}
	if err != nil {
		return Resolved{}, fmt.Errorf("import %s: %w", src, err)
	}
	// Layers another image has unpacked are not copied in again (the
	// unpacked layer is their one copy): hold them against garbage
	// collection until this image's own rootfs record names them too.
	unlockGC, err := flockPath(filepath.Join(s.dir, "gc.lock"), unix.LOCK_SH)
	if err != nil {
		return Resolved{}, err
	}
	defer unlockGC()
	rec, shared, err := s.storeImage(ctx, img)
	if err != nil {
		return Resolved{}, fmt.Errorf("import %s: %w", src, err)
	}
	rec.Names = []string{canonicalRepo(tag.Context()) + ":" + tag.TagStr()}
	rec.Source = "import"
	if err := s.blobs.saveRecord(rec); err != nil {
		return Resolved{}, err
	}
	res := resolvedFrom(rec, tag.Context(), tag.TagStr(), "import")
	if shared > 0 {
		r, err := s.rootfs(ctx, res.Ref, nil, nil, true)
		if err != nil {
			return Resolved{}, fmt.Errorf("import %s: unpack: %w", src, err)
		}
		_ = r.Close()
	}
	return res, nil
}

func imageFromLayout(dir string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: not an OCI layout: %v", ErrCorrupt, err)
	}
	ii, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("%w: OCI layout index: %v", ErrCorrupt, err)
	}
	return pickImage(ii)
}

// pickImage finds the one image in an index (descending into a nested
// index, taking its linux/amd64 child).
func pickImage(ii v1.ImageIndex) (v1.Image, error) {
	im, err := ii.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) != 1 {
		var all []string
		for _, m := range im.Manifests {
			all = append(all, m.Digest.String())
		}
		return nil, fmt.Errorf("%w: the layout holds %d manifests (%s): want exactly one", ErrInvalidReference, len(im.Manifests), strings.Join(all, ", "))
	}
	d := im.Manifests[0]
	if d.MediaType.IsIndex() {
		child, err := ii.ImageIndex(d.Digest)
		if err != nil {
			return nil, err
		}
		cm, err := child.RawManifest()
		if err != nil {
			return nil, err
		}
		c, err := chooseChild(cm)
		if err != nil {
			return nil, err
		}
		return child.Image(c.Digest)
	}
	return ii.Image(d.Digest)
}

// imageFromArchive reads an OCI archive (extracted into the store's tmp) or
// a Docker archive.
// The extracted layout is read lazily by storeImage: call cleanup after.
func imageFromArchive(storeDir, file string) (v1.Image, func(), error) {
	nop := func() {}
	kind, err := archiveKind(file)
	if err != nil {
		return nil, nop, err
	}
	if kind == "docker" {
		img, err := tarball.ImageFromPath(file, nil)
		if err != nil {
			return nil, nop, fmt.Errorf("%w: docker archive: %v", ErrCorrupt, err)
		}
		return img, nop, nil
	}
	dir, err := os.MkdirTemp(filepath.Join(storeDir, "tmp"), "import-*")
	if err != nil {
		return nil, nop, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := extractLayout(file, dir); err != nil {
		cleanup()
		return nil, nop, err
	}
	img, err := imageFromLayout(dir)
	if err != nil {
		cleanup()
		return nil, nop, err
	}
	return img, cleanup, nil
}

func archiveKind(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", fmt.Errorf("%w: %s is neither an OCI archive (index.json) nor a Docker archive (manifest.json)", ErrCorrupt, file)
		}
		if err != nil {
			return "", fmt.Errorf("%w: %s: %v", ErrCorrupt, file, err)
		}
		switch strings.TrimPrefix(filepath.Clean(h.Name), "./") {
		case "index.json", "oci-layout":
			return "oci", nil
		case "manifest.json":
			return "docker", nil
		}
	}
}

// extractLayout writes the regular files of an OCI archive under dir,
// refusing any name that is not a plain relative path.
func extractLayout(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: OCI archive: %v", ErrCorrupt, err)
		}
		n := cleanName(h.Name)
		if n == "\x00" {
			return fmt.Errorf("%w: OCI archive entry %q escapes", ErrUnsafeLayer, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if n != "" {
				if err := root.MkdirAll(n, 0o755); err != nil {
					return err
				}
			}
		case tar.TypeReg:
			if d := filepath.Dir(n); d != "." {
				if err := root.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			w, err := root.OpenFile(n, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			if _, err := io.Copy(w, tr); err != nil {
				w.Close()
				return fmt.Errorf("%w: OCI archive entry %q: %v", ErrCorrupt, h.Name, err)
			}
			if err := w.Close(); err != nil {
				return err
			}
		}
	}
}

// storeImage copies an image's blobs into the store and returns its record
// and how many layers it did not copy because they are unpacked already.
func (s *Store) storeImage(ctx context.Context, img v1.Image) (rec record, shared int, err error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return record{}, 0, fmt.Errorf("%w: config: %v", ErrCorrupt, err)
	}
	if cf.OS != platform.OS || cf.Architecture != platform.Architecture {
		return record{}, 0, fmt.Errorf("%w: the image is %s/%s", ErrPlatform, cf.OS, cf.Architecture)
	}
	m, err := img.Manifest()
	if err != nil {
		return record{}, 0, fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return record{}, 0, err
	}
	d, err := img.Digest()
	if err != nil {
		return record{}, 0, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return record{}, 0, err
	}
	cfgRaw, err := img.RawConfigFile()
	if err != nil {
		return record{}, 0, err
	}
	if err := s.blobs.writeBlob(m.Config.Digest, m.Config.Size, strings.NewReader(string(cfgRaw)), nil); err != nil {
		return record{}, 0, err
	}
	chains := chainIDs(newRecord(v1.Hash{Algorithm: "sha256", Hex: "0"}, "", 0, m, ""))
	for i, ld := range m.Layers {
		if err := ctx.Err(); err != nil {
			return record{}, 0, err
		}
		if s.blobs.hasBlob(ld.Digest, ld.Size) {
			continue
		}
		if _, ok, _ := s.layers.layerComplete(chains[i]); ok {
			shared++
			continue // unpacked already, for another image: the one copy
		}
		l, err := img.LayerByDigest(ld.Digest)
		if err != nil {
			return record{}, 0, err
		}
		rc, err := l.Compressed()
		if err != nil {
			return record{}, 0, err
		}
		err = s.blobs.writeBlob(ld.Digest, ld.Size, rc, nil)
		rc.Close()
		if err != nil {
			return record{}, 0, err
		}
	}
	if err := s.blobs.writeBlob(d, int64(len(raw)), strings.NewReader(string(raw)), nil); err != nil {
		return record{}, 0, err
	}
	rec = newRecord(d, mt, int64(len(raw)), m, "")
	rec.Added = time.Now().UTC()
	return rec, shared, nil
}
