package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"

	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
)

// blobStore is the store's content: the blobs it pulled or imported,
// content-addressed under blobs/sha256/ (the OCI image-layout shape), and
// one record per image manifest under images/. A blob path only ever holds
// the bytes its name says; records are written whole (a rename) and their
// writers serialised by store.lock.
type blobStore struct {
	dir string // the store's directory
}

func (s blobStore) blobPath(h v1.Hash) string {
	return filepath.Join(s.dir, "blobs", h.Algorithm, h.Hex)
}

func (s blobStore) hasBlob(d v1.Hash, size int64) bool {
	fi, err := os.Stat(s.blobPath(d))
	return err == nil && fi.Mode().IsRegular() && (size < 0 || fi.Size() == size)
}

// writeBlob copies r into the store as blob want, checking size (when ≥ 0)
// and digest before renaming it into place: a blob path only ever holds the
// bytes its name says.
func (s blobStore) writeBlob(want v1.Hash, size int64, r io.Reader, progress func(int64)) error {
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

func (s blobStore) readBlob(d v1.Hash) ([]byte, error) {
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
func (s blobStore) openBlob(d v1.Hash, size int64) (io.ReadCloser, error) {
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

func (s blobStore) recordPath(d v1.Hash) string {
	return filepath.Join(s.dir, "images", d.Hex+".json")
}

func (s blobStore) loadRecord(d v1.Hash) (record, bool, error) {
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
func (s blobStore) saveRecord(r record) error {
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

func (s blobStore) writeRecord(r record) error {
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
