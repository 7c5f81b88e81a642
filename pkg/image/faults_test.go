package image_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/diskspace"
	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"golang.org/x/sys/unix"
)

// assertConsistent checks the store's invariants: every unpacked image's
// layers are complete directories, no layer directory lacks its record
// (a half-unpacked layer), and nothing is left in tmp.
func assertConsistent(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "layers"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, "layers", e.Name()+".json")); err != nil {
				t.Errorf("layer dir %s has no record (half unpacked): %v", e.Name(), err)
			}
		}
	}
	recs, _ := filepath.Glob(filepath.Join(dir, "rootfs", "*.json"))
	for _, r := range recs {
		b, err := os.ReadFile(r)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Chains []string `json:"layer_chains"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		for _, c := range rec.Chains {
			if _, err := os.Stat(filepath.Join(dir, "layers", c[:16]+".json")); err != nil {
				t.Errorf("image %s names layer %s, which is gone: %v", filepath.Base(r), c[:16], err)
			}
		}
	}
	if tmp, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(tmp) != 0 {
		var names []string
		for _, e := range tmp {
			names = append(names, e.Name())
		}
		t.Errorf("tmp holds %v after the operation", names)
	}
}

// TestCorruptLayerAboveAGoodBase: an image whose second layer is corrupt
// fails naming the image and the layer; the store keeps the good base
// layer complete (another image shares it at once), nothing half-made.
func TestCorruptLayerAboveAGoodBase(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	ctx := context.Background()
	base := imagetest.Layer(t, imagetest.File("etc/base", "base"))
	good := imagetest.Gzip(t, imagetest.Tar(t, imagetest.File("a", strings.Repeat("x", 4096))))
	f.push(t, "library/bad:1", imagetest.Image(t, v1.Config{}, base, imagetest.RawLayer(good[:len(good)/2])))
	f.push(t, "library/ok:1", imagetest.Image(t, v1.Config{}, base, imagetest.Layer(t, imagetest.File("etc/ok", "ok"))))
	res, err := f.store.Resolve(ctx, "bad:1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.store.Rootfs(ctx, res.Ref)
	if !errors.Is(err, image.ErrCorrupt) || !strings.Contains(err.Error(), "docker.io/library/bad@sha256:") || !strings.Contains(err.Error(), "layer 2") {
		t.Fatalf("Rootfs(bad) = %v, want ErrCorrupt naming the image and its layer 2", err)
	}
	assertConsistent(t, f.store.Dir())
	if _, err := f.store.CachedRootfs(ctx, res.Ref); !errors.Is(err, image.ErrNotCached) {
		t.Fatalf("CachedRootfs(bad) after the failure = %v, want ErrNotCached", err)
	}
	okRes, err := f.store.Resolve(ctx, "ok:1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.store.Rootfs(ctx, okRes.Ref)
	if err != nil {
		t.Fatalf("Rootfs(ok) sharing the base: %v", err)
	}
	defer r.Close()
	if _, err := r.Lookup("etc/base"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.logs.String(), "layers_shared=1") {
		t.Errorf("the good image unpacked its base again:\n%s", f.logs)
	}
}

// TestFullDiskDuringUnpack: a store on a filesystem that fills up during
// an unpack fails with the out-of-space error naming its directory and the
// image, keeps nothing half-unpacked, and unpacks the image once there is
// room again.
func TestFullDiskDuringUnpack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts a small tmpfs: run it as root")
	}
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a 1 MiB tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	reg := imagetest.Registry(t, localreg.Options{})
	// 3 MiB of file content, a few kB compressed: the blobs fit, the unpack does not.
	img := imagetest.Image(t, v1.Config{}, imagetest.Layer(t, imagetest.File("etc/a", "a")),
		imagetest.Layer(t, imagetest.File("big", strings.Repeat("z", 3<<20))))
	if err := reg.Push(context.Background(), "library/big:1", img); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mnt, "images")
	st, err := image.Open(dir, image.Options{Mirrors: []image.Mirror{reg.Mirror("docker.io")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := st.Resolve(ctx, "big:1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Rootfs(ctx, res.Ref)
	if _, full := diskspace.As(err); !full || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "docker.io/library/big@sha256:") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Rootfs on a full disk = %v, want the out-of-space error naming the store dir and the image", err)
	}
	assertConsistent(t, dir)
	if err := unix.Mount("tmpfs", mnt, "tmpfs", unix.MS_REMOUNT, "size=16m"); err != nil {
		t.Fatalf("grow the tmpfs: %v", err)
	}
	r, err := st.Rootfs(ctx, res.Ref)
	if err != nil {
		t.Fatalf("Rootfs once there is room: %v", err)
	}
	defer r.Close()
	if p, err := r.Lookup("big"); err != nil {
		t.Fatal(err)
	} else if fi, err := os.Stat(p); err != nil || fi.Size() != 3<<20 {
		t.Fatalf("big: %v, %v", fi, err)
	}
}

// writeLayout writes img as an OCI layout, as a build pushes it.
func writeLayout(t *testing.T, img v1.Image) string {
	t.Helper()
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPruneWhileBuildsAndLaunchesRun: prunes run over and over while
// images FROM one base are imported (what a build ends with) and taken
// for sandboxes (what a launch does, RestoreRootfs). A plain prune takes
// nothing an image names: every launch gets its image. A prune --images
// forgets the images not in use: a launch then either gets its complete
// image, whose files stay readable while it holds it, or fails with
// ErrNotCached naming the image (the next sync brings it back) — never a
// half image. Either way the store is consistent at the end. Safe by
// construction: an image in use keeps its layers, an unpack under way (and
// an import reusing unpacked layers) keeps its own.
func TestPruneWhileBuildsAndLaunchesRun(t *testing.T) {
	for _, images := range []bool{false, true} {
		t.Run(fmt.Sprintf("images=%v", images), func(t *testing.T) { pruneWhileBuildsAndLaunches(t, images) })
	}
}

func pruneWhileBuildsAndLaunches(t *testing.T, images bool) {
	st, err := image.Open(filepath.Join(t.TempDir(), "images"), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := imagetest.Layer(t, imagetest.File("usr/lib/base.so", strings.Repeat("b", 32<<10)))
	const n = 8
	layouts := make([]string, n)
	for i := range n {
		layouts[i] = writeLayout(t, imagetest.Image(t, v1.Config{}, base, imagetest.Layer(t, imagetest.File("app/own", fmt.Sprint(i)))))
	}
	var prunes sync.WaitGroup
	pruned := 0
	pruneErr := make(chan error, 1)
	prunes.Add(1)
	go func() {
		defer prunes.Done()
		for ctx.Err() == nil {
			if _, err := st.Prune(ctx, image.PruneOptions{Images: images}); err != nil && ctx.Err() == nil {
				pruneErr <- err
				return
			}
			pruned++
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	launched, missed := 0, 0
	errs := make(chan error, n*3*3)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 3 {
				res, err := st.Import(ctx, layouts[i], fmt.Sprintf("gauntlet.local/build/k%d:latest", i))
				if err != nil {
					errs <- fmt.Errorf("build %d round %d: import: %w", i, round, err)
					return
				}
				r, _, err := st.RestoreRootfs(ctx, res.Ref)
				if err != nil {
					if images && errors.Is(err, image.ErrNotCached) && strings.Contains(err.Error(), res.Ref) {
						mu.Lock()
						missed++
						mu.Unlock()
						continue
					}
					errs <- fmt.Errorf("launch %d round %d: %w", i, round, err)
					continue
				}
				mu.Lock()
				launched++
				mu.Unlock()
				for _, f := range []string{"usr/lib/base.so", "app/own"} {
					p, err := r.Lookup(f)
					if err == nil {
						_, err = os.ReadFile(p)
					}
					if err != nil {
						errs <- fmt.Errorf("launch %d round %d: %s while held: %w", i, round, f, err)
					}
				}
				r.Close()
			}
		}()
	}
	wg.Wait()
	cancel()
	prunes.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case err := <-pruneErr:
		t.Fatalf("prune: %v", err)
	default:
	}
	if pruned == 0 || launched == 0 {
		t.Fatalf("%d prunes, %d launches: want both to have run", pruned, launched)
	}
	assertConsistent(t, st.Dir())
	t.Logf("%d prunes ran alongside %d builds: %d launches got their image, %d found it pruned", pruned, n*3, launched, missed)
}
