package image_test

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// unpackLayers pushes an image of the layers and returns its rootfs dir.
func unpackLayers(t *testing.T, layers ...v1.Layer) (string, error) {
	t.Helper()
	f := newFixture(t, localreg.Options{}, image.Options{})
	img := imagetest.Image(t, v1.Config{}, layers...)
	f.push(t, "library/t:1", img)
	res, err := f.store.Resolve(context.Background(), "t:1")
	if err != nil {
		return "", err
	}
	r, err := f.store.Rootfs(context.Background(), res.Ref)
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { r.Close() })
	return imagetest.Mount(t, r.Layers), nil
}

// tree lists every path under dir with a short description, sorted.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		d := rel
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			d += " -> " + l
		case fi.IsDir():
			d += "/"
		default:
			b, _ := os.ReadFile(p)
			d += " = " + string(b)
		}
		out = append(out, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestUnpackLayers(t *testing.T) {
	L := func(es ...imagetest.Entry) v1.Layer { return imagetest.Layer(t, es...) }
	D, F, S := imagetest.Dir, imagetest.File, imagetest.Symlink
	tests := []struct {
		name   string
		layers []v1.Layer
		want   []string
	}{
		{
			name:   "upper file replaces lower",
			layers: []v1.Layer{L(D("a"), F("a/x", "1")), L(F("a/x", "2"))},
			want:   []string{"a/", "a/x = 2"},
		},
		{
			name:   "plain whiteout removes a file and a directory tree",
			layers: []v1.Layer{L(D("a"), F("a/x", "1"), F("a/y", "1"), D("a/d"), F("a/d/z", "1")), L(imagetest.Whiteout("a", "x"), imagetest.Whiteout("a", "d"))},
			want:   []string{"a/", "a/y = 1"},
		},
		{
			name: "opaque whiteout hides lower content, keeps the layer's own",
			layers: []v1.Layer{
				L(D("a"), F("a/old", "1"), D("a/sub"), F("a/sub/old", "1"), F("keep", "k")),
				L(D("a"), imagetest.OpaqueWhiteout("a"), F("a/new", "2")),
			},
			want: []string{"a/", "a/new = 2", "keep = k"},
		},
		{
			name: "opaque marker after the layer's own entries",
			layers: []v1.Layer{
				L(D("a"), F("a/old", "1"), D("a/sub"), F("a/sub/old", "1")),
				L(D("a"), D("a/sub"), F("a/sub/new", "2"), imagetest.OpaqueWhiteout("a")),
			},
			want: []string{"a/", "a/sub/", "a/sub/new = 2"},
		},
		{
			name:   "directory replaced by a file and a file by a directory",
			layers: []v1.Layer{L(D("a"), F("a/x", "1"), F("b", "f")), L(F("a", "now a file"), D("b"), F("b/c", "c"))},
			want:   []string{"a = now a file", "b/", "b/c = c"},
		},
		{
			name: "writes through an absolute directory symlink stay inside",
			layers: []v1.Layer{
				L(D("usr"), D("usr/lib"), S("lib", "/usr/lib"), D("var"), S("var/run", "/run"), D("run")),
				L(F("lib/libc.so", "c"), F("var/run/pid", "1")),
			},
			want: []string{"lib -> /usr/lib", "run/", "run/pid = 1", "usr/", "usr/lib/", "usr/lib/libc.so = c", "var/", "var/run -> /run"},
		},
		{
			// As containerd and Docker do: the entry's own path is not followed.
			name:   "a directory entry replaces a lower symlink",
			layers: []v1.Layer{L(D("usr"), S("lib", "usr")), L(D("lib"), F("lib/x", "x"))},
			want:   []string{"lib/", "lib/x = x", "usr/"},
		},
		{
			name:   "a symlink climbing out resolves at the root",
			layers: []v1.Layer{L(S("up", "../../../../tmp")), L(F("up/escaped", "x"))},
			want:   []string{"tmp/", "tmp/escaped = x", "up -> ../../../../tmp"},
		},
		{
			name:   "hardlink",
			layers: []v1.Layer{L(D("bin"), F("bin/a", "same")), L(imagetest.Hardlink("bin/b", "bin/a"))},
			want:   []string{"bin/", "bin/a = same", "bin/b = same"},
		},
		{
			name:   "missing parents are created",
			layers: []v1.Layer{L(F("deep/er/file", "x"))},
			want:   []string{"deep/", "deep/er/", "deep/er/file = x"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := unpackLayers(t, tc.layers...)
			if err != nil {
				t.Fatal(err)
			}
			got := tree(t, dir)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("rootfs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestUnpackMetadata(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test checks ownership and device nodes: run it as root (sudo go test ./pkg/image/)")
	}
	mtime := time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC)
	dir, err := unpackLayers(t, imagetest.Layer(t,
		imagetest.Entry{Name: "./", Type: tar.TypeDir, Mode: 0o755},
		imagetest.Entry{Name: "home", Type: tar.TypeDir, Mode: 0o755},
		imagetest.Entry{Name: "home/u", Type: tar.TypeDir, Mode: 0o700, UID: 1000, GID: 1000, ModTime: mtime},
		imagetest.Entry{Name: "home/u/f", Body: "x", Mode: 0o640, UID: 1000, GID: 1001, ModTime: mtime},
		imagetest.Entry{Name: "usr/bin/sudo", Body: "s", Mode: 0o4755},
		imagetest.Entry{Name: "tmp", Type: tar.TypeDir, Mode: 0o1777},
		imagetest.Entry{Name: "bin/ping", Body: "p", Mode: 0o755, Xattrs: map[string]string{"user.test": "v", "security.capability": "\x01\x00\x00\x02\x00\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}},
		imagetest.Entry{Name: "dev/null", Type: tar.TypeChar, Mode: 0o666},
		imagetest.Entry{Name: "run/fifo", Type: tar.TypeFifo, Mode: 0o600},
		imagetest.Entry{Name: "link", Type: tar.TypeSymlink, Linkname: "home/u/f", UID: 1000, GID: 1000, ModTime: mtime},
	))
	if err != nil {
		t.Fatal(err)
	}
	check := func(p string, mode os.FileMode, uid, gid uint32) os.FileInfo {
		t.Helper()
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != mode || st.Uid != uid || st.Gid != gid {
			t.Errorf("%s: mode %v uid %d gid %d, want %v %d %d", p, fi.Mode(), st.Uid, st.Gid, mode, uid, gid)
		}
		return fi
	}
	check("home/u", os.ModeDir|0o700, 1000, 1000)
	if fi := check("home/u/f", 0o640, 1000, 1001); !fi.ModTime().Equal(mtime) {
		t.Errorf("home/u/f mtime %v, want %v", fi.ModTime(), mtime)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "home/u")); !fi.ModTime().Equal(mtime) {
		t.Errorf("home/u mtime %v, want %v (directory times are set after their children)", fi.ModTime(), mtime)
	}
	check("usr/bin/sudo", os.ModeSetuid|0o755, 0, 0)
	check("tmp", os.ModeDir|os.ModeSticky|0o777, 0, 0)
	check("dev/null", os.ModeDevice|os.ModeCharDevice|0o666, 0, 0)
	check("run/fifo", os.ModeNamedPipe|0o600, 0, 0)
	if fi := check("link", os.ModeSymlink|0o777, 1000, 1000); !fi.ModTime().Equal(mtime) {
		t.Errorf("symlink mtime %v, want %v", fi.ModTime(), mtime)
	}
	buf := make([]byte, 64)
	n, err := unix.Lgetxattr(filepath.Join(dir, "bin/ping"), "user.test", buf)
	if err != nil || string(buf[:n]) != "v" {
		t.Errorf("xattr user.test = %q, %v; want v", buf[:n], err)
	}
	if _, err := unix.Lgetxattr(filepath.Join(dir, "bin/ping"), "security.capability", buf); err != nil {
		t.Errorf("xattr security.capability: %v (chown after setxattr would clear it)", err)
	}
	check(".", os.ModeDir|0o755, 0, 0)
}

// TestUnpackDropsOverlayXattrsALayerCarries: a layer that carries
// overlayfs's own xattrs (an opaque marker, a redirect) does not get them
// onto its layer directory: only the store's own whiteout conversion
// writes them, so a layer cannot hide or redirect what is below it.
func TestUnpackDropsOverlayXattrsALayerCarries(t *testing.T) {
	dir, err := unpackLayers(t,
		imagetest.Layer(t, imagetest.File("d/keep", "k")),
		imagetest.Layer(t, imagetest.Entry{Name: "d/", Type: tar.TypeDir, Mode: 0o755,
			Xattrs: map[string]string{"trusted.overlay.opaque": "y", "user.overlay.opaque": "y", "trusted.overlay.redirect": "/etc"}},
			imagetest.File("d/new", "n")))
	if err != nil {
		t.Fatal(err)
	}
	got := tree(t, dir)
	want := []string{"d/", "d/keep = k", "d/new = n"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rootfs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestUnpackRefusesEscapes(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct {
		name  string
		entry imagetest.Entry
	}{
		{"dotdot", imagetest.File("../../escaped", "x")},
		{"absolute", imagetest.File("/etc/escaped", "x")},
		{"inner dotdot", imagetest.File("a/../../escaped", "x")},
		{"hardlink out", imagetest.Hardlink("h", "../../../etc/passwd")},
		{"hardlink absolute", imagetest.Hardlink("h", filepath.Join(outside, "f"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := unpackLayers(t, imagetest.Layer(t, tc.entry))
			if !errors.Is(err, image.ErrUnsafeLayer) || !strings.Contains(err.Error(), "t@sha256:") {
				t.Fatalf("unpack %q = %v, want ErrUnsafeLayer naming the image", tc.entry.Name, err)
			}
		})
	}
}

func TestCorruptLayers(t *testing.T) {
	good := imagetest.Gzip(t, imagetest.Tar(t, imagetest.File("a", strings.Repeat("x", 4096))))
	for _, tc := range []struct {
		name string
		blob []byte
	}{
		{"not gzip at all", []byte("\x1f\x8bthis is not deflate data")},
		{"truncated gzip", good[:len(good)/2]},
		{"truncated tar", imagetest.Gzip(t, imagetest.Tar(t, imagetest.File("a", strings.Repeat("x", 4096)))[:1000])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := unpackLayers(t, imagetest.RawLayer(tc.blob))
			if !errors.Is(err, image.ErrCorrupt) || !strings.Contains(err.Error(), "t@sha256:") {
				t.Fatalf("unpack = %v, want ErrCorrupt naming the image", err)
			}
		})
	}
}

// nonRootChildEnv marks the test binary re-run as nobody by
// TestUnpackAsNonRootLeavesOutWhatOnlyRootMakes.
const nonRootChildEnv = "GAUNTLET_UNPACK_AS_NOBODY"

// TestUnpackAsNonRootLeavesOutWhatOnlyRootMakes: a store that is not root
// (gauntlet local started by a user) unpacks an image with device nodes
// and a file capability, which only root can make: it leaves those out
// (a sandbox's /dev is its own) and keeps the rest, in its own ownership.
func TestUnpackAsNonRootLeavesOutWhatOnlyRootMakes(t *testing.T) {
	if os.Getenv(nonRootChildEnv) == "" {
		if os.Geteuid() != 0 {
			t.Fatal("this test re-runs itself as nobody: run it as root")
		}
		dir, err := os.MkdirTemp("", "unpack-nobody-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		// The go tool's build dir is root's alone: run a copy.
		exe := filepath.Join(dir, "image.test")
		if out, err := exec.Command("cp", os.Args[0], exe).CombinedOutput(); err != nil {
			t.Fatalf("copy the test binary: %v: %s", err, out)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "-test.run=^TestUnpackAsNonRootLeavesOutWhatOnlyRootMakes$", "-test.v")
		cmd.Env = []string{nonRootChildEnv + "=1", "TMPDIR=" + dir, "HOME=" + dir, "PATH=" + os.Getenv("PATH")}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("the unpack as nobody failed (%v):\n%s", err, out)
		}
		return
	}
	dir, err := unpackLayers(t, imagetest.Layer(t,
		imagetest.Entry{Name: "./", Type: tar.TypeDir, Mode: 0o755},
		imagetest.Entry{Name: "home/u", Type: tar.TypeDir, Mode: 0o700, UID: 1000, GID: 1000},
		imagetest.Entry{Name: "home/u/f", Body: "x", Mode: 0o640, UID: 1000, GID: 1001},
		imagetest.Entry{Name: "bin/ping", Body: "p", Mode: 0o755, Xattrs: map[string]string{"user.test": "v", "security.capability": "\x01\x00\x00\x02\x00\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}},
		imagetest.Entry{Name: "dev/null", Type: tar.TypeChar, Mode: 0o666},
		imagetest.Entry{Name: "dev/sda", Type: tar.TypeBlock, Mode: 0o660},
		imagetest.Entry{Name: "run/fifo", Type: tar.TypeFifo, Mode: 0o600},
	))
	if err != nil {
		t.Fatalf("unpack as nobody: %v", err)
	}
	for _, p := range []string{"dev/null", "dev/sda"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it left out (only root makes device nodes)", p, err)
		}
	}
	for p, mode := range map[string]os.FileMode{"run/fifo": os.ModeNamedPipe | 0o600, "home/u/f": 0o640, "home/u": os.ModeDir | 0o700} {
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if st := fi.Sys().(*syscall.Stat_t); fi.Mode() != mode || st.Uid != 65534 {
			t.Errorf("%s: mode %v uid %d, want %v and the store's own uid 65534", p, fi.Mode(), st.Uid, mode)
		}
	}
	buf := make([]byte, 64)
	if n, err := unix.Lgetxattr(filepath.Join(dir, "bin/ping"), "user.test", buf); err != nil || string(buf[:n]) != "v" {
		t.Errorf("xattr user.test = %q, %v; want v", buf[:max(n, 0)], err)
	}
	if _, err := unix.Lgetxattr(filepath.Join(dir, "bin/ping"), "security.capability", buf); !errors.Is(err, unix.ENODATA) {
		t.Errorf("xattr security.capability: %v, want it left out (ENODATA)", err)
	}
	// A layer above: its whiteout is an overlayfs whiteout (any user may
	// make a 0/0 character device), its opaque marker the user.* xattr.
	f := newFixture(t, localreg.Options{}, image.Options{})
	f.push(t, "library/w:1", imagetest.Image(t, v1.Config{},
		imagetest.Layer(t, imagetest.File("etc/a", "a"), imagetest.File("opt/d/old", "o")),
		imagetest.Layer(t, imagetest.File("etc/.wh.a", ""), imagetest.File("opt/d/.wh..wh..opq", ""), imagetest.File("opt/d/new", "n"))))
	res, err := f.store.Resolve(context.Background(), "w:1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.store.Rootfs(context.Background(), res.Ref)
	if err != nil {
		t.Fatalf("unpack a whiteout and an opaque directory as nobody: %v", err)
	}
	defer r.Close()
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(r.Layers[0], "etc/a"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("etc/a in the top layer: mode %o rdev %d (%v), want a 0/0 character device", st.Mode, st.Rdev, err)
	}
	if n, err := unix.Lgetxattr(filepath.Join(r.Layers[0], "opt/d"), "user.overlay.opaque", buf); err != nil || string(buf[:n]) != "y" {
		t.Errorf("opt/d user.overlay.opaque = %q, %v; want y", buf[:max(n, 0)], err)
	}
	if _, err := r.Lookup("etc/a"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Lookup(etc/a) = %v, want it whited out", err)
	}
	if _, err := r.Lookup("opt/d/old"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Lookup(opt/d/old) = %v, want it hidden by the opaque directory", err)
	}
}
