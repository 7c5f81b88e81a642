package imagebuild

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
)

// diskUsage is the space the files below dir take (allocated blocks, each
// inode once: overlay's diffs are counted, hard links not twice).
func diskUsage(t testing.TB, dir string) int64 {
	t.Helper()
	seen := map[uint64]bool{}
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok || seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		total += st.Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// baseContext is a build context holding the Debian minbase rootfs tar
// (make base-images), and its size.
func baseContext(t testing.TB, dir string) (string, int64) {
	t.Helper()
	ctxDir := filepath.Join(dir, "base-context")
	if err := os.MkdirAll(ctxDir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(testrootfs.BaseDir(), "debian-bookworm-minbase.tar")
	if err := os.Link(src, filepath.Join(ctxDir, "rootfs.tar")); err != nil {
		t.Fatalf("the Debian base image (make base-images): %v", err)
	}
	info, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	return ctxDir, info.Size()
}

// TestBuildsShareTheBaseInStorage builds the Debian base, then three images
// FROM it with a RUN step each: buildah's storage must hold the base once
// (overlay keeps each layer as its diff), not once per step and image as
// vfs did (≈ 4 × the base here).
func TestBuildsShareTheBaseInStorage(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	ctxDir, baseSize := baseContext(t, dir)
	var n int
	builder, err := New(Config{Dir: filepath.Join(dir, "buildah"), Network: NetworkHost,
		Import: func(_ context.Context, layout, _ string) (string, error) {
			n++
			return "oci:" + layout, os.Rename(layout, filepath.Join(dir, fmt.Sprint("image-", n)))
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	baseKey := strings.Repeat("5d", 32)
	var log strings.Builder
	if _, err := builder.Build(ctx, Request{Key: baseKey, ContextDir: ctxDir, Dockerfile: []byte("FROM scratch\nADD rootfs.tar /\n"), Log: &log}); err != nil {
		t.Fatalf("build the base: %v\n%s", err, log.String())
	}
	for i := range 3 {
		df := fmt.Sprintf("FROM localhost/gauntlet-build:%s\nRUN echo %d > /task.txt\nWORKDIR /app\n", shortKey(baseKey), i)
		if _, err := builder.Build(ctx, Request{Key: strings.Repeat(fmt.Sprintf("%02x", i), 32), ContextDir: ctxDir, Dockerfile: []byte(df), Log: &log}); err != nil {
			t.Fatalf("build %d: %v\n%s", i, err, log.String())
		}
	}
	used := diskUsage(t, filepath.Join(dir, "buildah", StorageOverlay))
	if limit := baseSize * 3 / 2; used > limit {
		t.Errorf("buildah's storage after the base and three images FROM it: %d MB, want at most %d MB (1.5 × the %d MB base)",
			used>>20, limit>>20, baseSize>>20)
	}
}

// TestNewRemovesTheVFSStorage: the vfs storage earlier versions kept in
// Dir/root is of no use to the overlay driver and only takes space.
func TestNewRemovesTheVFSStorage(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "root", "vfs", "dir", "abc")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "file"), []byte("a layer's copy"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Dir: dir, Import: newRegistry(t).importer(t), Network: NetworkHost}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"root", "runroot"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it removed", d, err)
		}
	}
}

// serveDebianBase pushes the Debian minbase rootfs (make base-images) as a
// one-layer image to an in-process registry on loopback and returns its
// digest reference.
func serveDebianBase(b *testing.B) string {
	b.Helper()
	r := newRegistry(b)
	layer, err := tarball.LayerFromFile(filepath.Join(testrootfs.BaseDir(), "debian-bookworm-minbase.tar"))
	if err != nil {
		b.Fatalf("the Debian base image (make base-images): %v", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		b.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		b.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		b.Fatal(err)
	}
	ref, _ := name.ParseReference(r.host + "/debian:bookworm")
	if err := remote.Write(ref, img); err != nil {
		b.Fatal(err)
	}
	d, _ := img.Digest()
	return r.host + "/debian@" + d.String()
}

// BenchmarkBuild is one task's build (a Dockerfile FROM the Debian base on a
// loopback registry, one RUN step, WORKDIR) through Builder.Build — pull,
// bud, push to an OCI layout; the importer only moves the layout away — on
// each storage driver:
//
//   - cold: a fresh builder dir per op (the base pulled, the step run);
//   - next: another task's Dockerfile FROM the base the storage holds;
//   - warm: the same Dockerfile again, every step cached.
//
// storage-MB is buildah's storage after the op (cold: one image; next:
// the base and every task built so far, per task).
func BenchmarkBuild(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Fatal("run as root: the builds' namespaces are made by root here")
	}
	base := serveDebianBase(b)
	ctx := context.Background()
	ctxDir := b.TempDir()
	dockerfile := func(i int) []byte {
		return fmt.Appendf(nil, "FROM %s\nRUN echo %d > /task.txt && mkdir -p /app\nWORKDIR /app\n", base, i)
	}
	newB := func(b *testing.B, driver, dir string) *Builder {
		builder, err := New(Config{Dir: dir, StorageDriver: driver, Network: NetworkHost,
			Import: func(_ context.Context, layout, _ string) (string, error) {
				return "oci:" + layout, os.RemoveAll(layout)
			}})
		if err != nil {
			b.Fatal(err)
		}
		return builder
	}
	build := func(b *testing.B, builder *Builder, i int) {
		var log strings.Builder
		if _, err := builder.Build(ctx, Request{Key: fmt.Sprintf("%064x", i), ContextDir: ctxDir, Dockerfile: dockerfile(i), Log: &log}); err != nil {
			b.Fatalf("build: %v\n%s", err, log.String())
		}
	}
	for _, driver := range []string{StorageVFS, StorageOverlay} {
		b.Run("driver="+driver+"/cold", func(b *testing.B) {
			var used int64
			for b.Loop() {
				dir := b.TempDir()
				build(b, newB(b, driver, dir), 0)
				b.StopTimer()
				used = diskUsage(b, filepath.Join(dir, driver))
				b.StartTimer()
			}
			b.ReportMetric(float64(used)/(1<<20), "storage-MB")
		})
		dir := b.TempDir()
		builder := newB(b, driver, dir)
		build(b, builder, 0)
		b.Run("driver="+driver+"/next", func(b *testing.B) {
			n := 0
			for b.Loop() {
				n++
				build(b, builder, n)
			}
			b.ReportMetric(float64(diskUsage(b, filepath.Join(dir, driver)))/(1<<20)/float64(n+1), "storage-MB/task")
		})
		b.Run("driver="+driver+"/warm", func(b *testing.B) {
			for b.Loop() {
				build(b, builder, 0)
			}
		})
	}
}
