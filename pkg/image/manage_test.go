package image_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// blobTamper rewrites GET responses for blobs of at least minSize bytes.
func blobTamper(minSize int, fn func(w http.ResponseWriter, body []byte)) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/sha256:") {
				h.ServeHTTP(w, r)
				return
			}
			rec := &recorder{header: http.Header{}}
			h.ServeHTTP(rec, r)
			if rec.code != 0 && rec.code != http.StatusOK || len(rec.body) < minSize {
				for k, v := range rec.header {
					w.Header()[k] = v
				}
				w.WriteHeader(max(rec.code, 200))
				w.Write(rec.body)
				return
			}
			fn(w, rec.body)
		})
	}
}

type recorder struct {
	header http.Header
	code   int
	body   []byte
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(c int)           { r.code = c }
func (r *recorder) Write(b []byte) (int, error) { r.body = append(r.body, b...); return len(b), nil }

// bigImage has one layer of at least 64 KiB (so tampering hits the layer,
// not the config).
func bigImage(t *testing.T) v1.Image {
	return imagetest.Image(t, v1.Config{}, imagetest.RawLayer(imagetest.Tar(t, imagetest.File("big", strings.Repeat("0123456789abcdef", 8192)))))
}

func TestDigestMismatchAndTruncatedBlob(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(w http.ResponseWriter, body []byte)
		want string
	}{
		{"digest mismatch", func(w http.ResponseWriter, body []byte) {
			b := append([]byte{}, body...)
			b[len(b)/2] ^= 0xff
			w.Write(b)
		}, "digest"},
		{"truncated body", func(w http.ResponseWriter, body []byte) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body[:len(body)/2])
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, localreg.Options{Handler: blobTamper(64<<10, tc.fn)}, image.Options{})
			f.push(t, "library/big:1", bigImage(t))
			res, err := f.store.Resolve(context.Background(), "big:1")
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.store.Rootfs(context.Background(), res.Ref)
			if !errors.Is(err, image.ErrCorrupt) || !strings.Contains(err.Error(), "big@sha256:") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Rootfs = %v, want ErrCorrupt naming the image and %q", err, tc.want)
			}
			if list, _ := os.ReadDir(filepath.Join(f.store.Dir(), "blobs", "sha256")); len(list) != 2 {
				t.Fatalf("%d blobs stored, want 2 (manifest and config; never the bad layer)", len(list))
			}
		})
	}
}

func TestPullProgress(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	f.push(t, "library/big:1", bigImage(t))
	var mu sync.Mutex
	last := map[string]image.Progress{}
	res, err := f.store.Pull(context.Background(), "big:1", func(p image.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := last[p.Phase]; ok && (prev.Done || p.Complete < prev.Complete) {
			t.Errorf("progress went back or went on after done: %+v then %+v", prev, p)
		}
		last[p.Phase] = p
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"download", "unpack"} {
		p := last[phase]
		if !p.Done || p.Complete != p.Total || p.Total <= 64<<10 {
			t.Errorf("last %s progress %+v, want done with Complete == Total > 64 KiB", phase, p)
		}
	}
	list, err := f.store.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Digest != res.Digest || !list[0].Unpacked || !list[0].Stored || list[0].InUse ||
		strings.Join(list[0].Names, ",") != "docker.io/library/big:1" {
		t.Fatalf("List = %+v, want the pulled image, unpacked, not in use", list)
	}
}

// sizedImage is an image whose rootfs holds n bytes.
func sizedImage(t *testing.T, tag string, n int) v1.Image {
	return imagetest.Image(t, v1.Config{}, imagetest.Layer(t, imagetest.File("data-"+tag, strings.Repeat("x", n))))
}

func TestEvictionKeepsRootfsInUse(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{MaxRootfsBytes: 250 << 10})
	ctx := context.Background()
	refs := map[string]string{}
	for _, tag := range []string{"a", "b", "c"} {
		f.push(t, "library/img:"+tag, sizedImage(t, tag, 100<<10))
		res, err := f.store.Resolve(ctx, "img:"+tag)
		if err != nil {
			t.Fatal(err)
		}
		refs[tag] = res.Ref
	}
	held, err := f.store.Rootfs(ctx, refs["a"]) // oldest, but in use
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	b, err := f.store.Rootfs(ctx, refs["b"])
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	c, err := f.store.Rootfs(ctx, refs["c"]) // 300 KiB > 250 KiB: one must go, and a is held
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := held.Lookup("data-a"); err != nil {
		t.Fatalf("the rootfs in use was evicted: %v", err)
	}
	if _, err := os.Stat(b.Layers[0]); !os.IsNotExist(err) {
		t.Fatalf("rootfs b (least recently used, not in use) still there: %v", err)
	}
	if !strings.Contains(f.logs.String(), "image evicted") {
		t.Fatalf("no eviction logged:\n%s", f.logs)
	}
	// b comes back on its next use, from the stored blobs.
	b2, err := f.store.Rootfs(ctx, refs["b"])
	if err != nil {
		t.Fatal(err)
	}
	b2.Close()
}

func TestPrune(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	ctx := context.Background()
	var held *image.Rootfs
	for _, tag := range []string{"a", "b"} {
		f.push(t, "library/img:"+tag, sizedImage(t, tag, 1000))
		res, err := f.store.Resolve(ctx, "img:"+tag)
		if err != nil {
			t.Fatal(err)
		}
		r, err := f.store.Rootfs(ctx, res.Ref)
		if err != nil {
			t.Fatal(err)
		}
		if tag == "a" {
			held = r
		} else {
			r.Close()
		}
	}
	list, _ := f.store.List(ctx)
	inUse := 0
	for _, i := range list {
		if i.InUse {
			inUse++
		}
	}
	if inUse != 1 {
		t.Fatalf("List says %d in use, want 1: %+v", inUse, list)
	}
	// Named images keep their layers (their one copy) under a plain prune.
	rep, err := f.store.Prune(ctx, image.PruneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rootfs != 0 || rep.Layers != 0 || rep.Images != 0 {
		t.Fatalf("Prune = %+v, want nothing removed: both images are named", rep)
	}
	// --images: every image not in use goes, the one in use stays.
	rep, err = f.store.Prune(ctx, image.PruneOptions{Images: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rootfs != 1 || rep.Layers != 1 || rep.InUse != 1 || rep.Images != 1 {
		t.Fatalf("Prune(Images) = %+v, want b's rootfs, layer and image removed, a kept in use", rep)
	}
	if _, err := held.Lookup("data-a"); err != nil {
		t.Fatalf("prune removed a rootfs in use: %v", err)
	}
	held.Close()
	rep, err = f.store.Prune(ctx, image.PruneOptions{Images: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rootfs != 1 || rep.Images != 1 || rep.InUse != 0 {
		t.Fatalf("Prune(Images) = %+v, want a's rootfs and image removed", rep)
	}
	if list, _ := f.store.List(ctx); len(list) != 0 {
		t.Fatalf("List after Prune(Images) = %+v, want empty", list)
	}
	if u, _ := f.store.DiskUsage(ctx); u.Layers != 0 || u.Blobs != 0 {
		t.Fatalf("DiskUsage after pruning every image = %+v, want no layer and no blob", u)
	}
}

func TestImport(t *testing.T) {
	img := simpleImage(t)
	dir := t.TempDir()
	lp, err := layout.Write(filepath.Join(dir, "oci"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	ociArchive := filepath.Join(dir, "oci.tar")
	tarDir(t, filepath.Join(dir, "oci"), ociArchive)
	dockerArchive := filepath.Join(dir, "docker.tar")
	tag, _ := name.NewTag("localhost/x:1")
	if err := tarball.WriteToFile(dockerArchive, tag, img); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, src string }{
		{"oci layout", filepath.Join(dir, "oci")},
		{"oci archive", ociArchive},
		{"docker archive", dockerArchive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No registry answers for gauntlet.local: the rootfs must come from the store.
			dead := imagetest.Registry(t, localreg.Options{})
			dead.Close()
			st, err := image.Open(t.TempDir(), image.Options{Mirrors: []image.Mirror{dead.Mirror("gauntlet.local")}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := st.Import(context.Background(), tc.src, "gauntlet.local/build/abc:latest")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Ref, "gauntlet.local/build/abc@sha256:") || res.Source != "import" {
				t.Fatalf("Import = %+v", res)
			}
			r, err := st.Rootfs(context.Background(), res.Ref)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if b, err := os.ReadFile(filepath.Join(imagetest.Mount(t, r.Layers), "app/main.py")); err != nil || string(b) != "print(1)\n" {
				t.Fatalf("app/main.py = %q, %v", b, err)
			}
			if r.Config.WorkingDir != "/app" {
				t.Fatalf("Config = %+v", r.Config)
			}
		})
	}
	st, err := image.Open(t.TempDir(), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Import(context.Background(), filepath.Join(dir, "oci"), "gauntlet.local/x@sha256:"+strings.Repeat("0", 64)); !errors.Is(err, image.ErrInvalidReference) {
		t.Fatalf("Import under a digest name = %v, want ErrInvalidReference", err)
	}
	notArchive := filepath.Join(dir, "not.tar")
	tarDir(t, t.TempDir(), notArchive)
	if _, err := st.Import(context.Background(), notArchive, "gauntlet.local/x:1"); !errors.Is(err, image.ErrCorrupt) {
		t.Fatalf("Import of an empty tar = %v, want ErrCorrupt", err)
	}
}

// tarDir writes dir's files into a tar at out.
func tarDir(t *testing.T, dir, out string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		h.Name = rel
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			src, err := os.Open(p)
			if err != nil {
				return err
			}
			defer src.Close()
			_, err = io.Copy(tw, src)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreRootfsUnpacksAnEvictedRootfsFromTheStoredBlobs: with
// KeepLayerBlobs, a launch's RestoreRootfs finds a rootfs another image's
// unpack evicted and unpacks it again from the blobs the store kept, with
// the registry gone; an image whose blobs are not stored stays
// ErrNotCached (for the next sync).
func TestRestoreRootfsUnpacksAnEvictedRootfsFromTheStoredBlobs(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{MaxRootfsBytes: 150 << 10, KeepLayerBlobs: true})
	ctx := context.Background()
	refs := map[string]string{}
	for _, tag := range []string{"a", "b"} {
		f.push(t, "library/img:"+tag, sizedImage(t, tag, 100<<10))
		res, err := f.store.Pull(ctx, "img:"+tag, nil) // b's unpack evicts a
		if err != nil {
			t.Fatal(err)
		}
		refs[tag] = res.Ref
	}
	f.reg.Close() // a launch never asks the registry
	if _, err := f.store.CachedRootfs(ctx, refs["a"]); !errors.Is(err, image.ErrNotCached) {
		t.Fatalf("CachedRootfs(a) after b evicted it = %v, want ErrNotCached", err)
	}
	r, restored, err := f.store.RestoreRootfs(ctx, refs["a"])
	if err != nil || !restored {
		t.Fatalf("RestoreRootfs(a) = restored %v, %v; want it unpacked again from the stored blobs", restored, err)
	}
	defer r.Close()
	if data, err := os.ReadFile(filepath.Join(imagetest.Mount(t, r.Layers), "data-a")); err != nil || len(data) != 100<<10 {
		t.Fatalf("restored rootfs: %d bytes, %v", len(data), err)
	}
	again, restored, err := f.store.RestoreRootfs(ctx, refs["a"])
	if err != nil || restored {
		t.Fatalf("RestoreRootfs(a) again = restored %v, %v; want the cached rootfs", restored, err)
	}
	again.Close()
	if _, _, err := f.store.RestoreRootfs(ctx, "docker.io/library/other@sha256:"+strings.Repeat("a", 64)); !errors.Is(err, image.ErrNotCached) {
		t.Fatalf("RestoreRootfs of an image not stored = %v, want ErrNotCached", err)
	}
}

// TestUnpackedLayersAreTheOneCopy: by default a layer's blob goes once the
// layer is unpacked (the store holds each layer once); the image stays
// usable and listed as stored; evicted, it is ErrNotCached for the next
// sync rather than restorable, and a pull brings it back.
func TestUnpackedLayersAreTheOneCopy(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{MaxRootfsBytes: 150 << 10})
	ctx := context.Background()
	refs := map[string]string{}
	for _, tag := range []string{"a", "b"} {
		f.push(t, "library/img:"+tag, sizedImage(t, tag, 100<<10))
		res, err := f.store.Pull(ctx, "img:"+tag, nil) // b's unpack evicts a
		if err != nil {
			t.Fatal(err)
		}
		refs[tag] = res.Ref
	}
	u, err := f.store.DiskUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u.Layers != 1 || u.Blobs != 4 { // b's layer; a's and b's config and manifest
		t.Fatalf("DiskUsage = %+v, want b's one layer unpacked and no layer blob", u)
	}
	list, _ := f.store.List(ctx)
	for _, i := range list {
		if want := slices.Contains(i.Names, "docker.io/library/img:b"); i.Stored != want {
			t.Errorf("List: %v stored = %v, want %v", i.Names, i.Stored, want)
		}
	}
	if _, _, err := f.store.RestoreRootfs(ctx, refs["a"]); !errors.Is(err, image.ErrNotCached) {
		t.Fatalf("RestoreRootfs(a), evicted with its blob gone = %v, want ErrNotCached", err)
	}
	if _, err := f.store.Pull(ctx, "img:a", nil); err != nil {
		t.Fatalf("pull a again: %v", err)
	}
}

// TestEvictionNeverDropsPinnedImages: over the cap, eviction drops the
// least recently used image that no unfinished run pins, even when a
// pinned one is older; when the pins cannot be read it drops nothing.
func TestEvictionNeverDropsPinnedImages(t *testing.T) {
	var pinned []string
	var pinErr error
	f := newFixture(t, localreg.Options{}, image.Options{MaxRootfsBytes: 250 << 10,
		Pinned: func(context.Context) ([]string, error) { return pinned, pinErr }})
	ctx := context.Background()
	refs := map[string]string{}
	for _, tag := range []string{"a", "b", "c", "d"} {
		f.push(t, "library/img:"+tag, sizedImage(t, tag, 100<<10))
		res, err := f.store.Resolve(ctx, "img:"+tag)
		if err != nil {
			t.Fatal(err)
		}
		refs[tag] = res.Ref
	}
	pinned = []string{refs["a"]}
	for _, tag := range []string{"a", "b", "c"} { // c's unpack goes over: a is older but pinned, b goes
		if _, err := f.store.Pull(ctx, "img:"+tag, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.store.CachedRootfs(ctx, refs["a"]); err != nil {
		t.Fatalf("the pinned image was evicted: %v", err)
	}
	if _, err := f.store.CachedRootfs(ctx, refs["b"]); !errors.Is(err, image.ErrNotCached) {
		t.Fatalf("CachedRootfs(b) = %v, want it evicted (least recently used, not pinned)", err)
	}
	pinErr = errors.New("database locked")
	if _, err := f.store.Pull(ctx, "img:d", nil); err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"a", "c", "d"} {
		if _, err := f.store.CachedRootfs(ctx, refs[tag]); err != nil {
			t.Errorf("with the pins unreadable, %s was evicted: %v", tag, err)
		}
	}
	if !strings.Contains(f.logs.String(), "evicting none") {
		t.Errorf("the unreadable pins were not logged:\n%s", f.logs)
	}
}
