// Package imagetest helps tests of the image store and of packages that use
// it: a loopback registry (go-containerregistry's in-process one), the
// Debian base images pushed to it under their upstream names with the mirror
// setting that sends docker.io there, and small synthetic images built in
// memory layer by layer.
package imagetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"
)

// BasicAuth is a localreg.Options Handler that answers 401, with a Basic
// challenge and the registry API's error body, unless the request carries
// user:pass, as a private registry does.
func BasicAuth(user, pass string) func(http.Handler) http.Handler {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != want {
				w.Header().Set("WWW-Authenticate", `Basic realm="private"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
}

// Registry starts a loopback registry for the test, closed at cleanup.
// opts.BlobDir defaults to a temp dir.
func Registry(t testing.TB, opts localreg.Options) *localreg.Registry {
	t.Helper()
	if opts.BlobDir == "" {
		opts.BlobDir = t.TempDir()
	}
	r, err := localreg.Start(opts)
	if err != nil {
		t.Fatalf("start registry: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// BaseImages starts a loopback registry serving the Debian base images
// (localreg.Bases: python:3.13-slim-bookworm, debian:bookworm-slim,
// ubuntu:24.04 …) and returns it with the mirror setting that sends
// docker.io there and nowhere else. The test fails, saying to run `make
// base-images`, when the tarballs are missing. The first call on a machine
// builds an OCI layout from them (tens of seconds); later calls reuse it.
func BaseImages(t testing.TB) (*localreg.Registry, []image.Mirror) {
	t.Helper()
	dir, err := localreg.BaseLayout(localreg.BaseDir())
	if errors.Is(err, localreg.ErrNoBaseImages) {
		t.Fatalf("%v", err)
	}
	if err != nil {
		t.Fatalf("base images: %v", err)
	}
	r := Registry(t, localreg.Options{Layouts: []string{dir}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := r.PushLayout(ctx, dir); err != nil {
		t.Fatalf("push base images: %v", err)
	}
	return r, []image.Mirror{r.Mirror("docker.io")}
}

// Entry is one tar entry of a synthetic layer. Type defaults to a regular
// file (tar.TypeReg); Mode to 0644 for files and 0755 for directories.
type Entry struct {
	Name     string
	Type     byte
	Body     string
	Mode     int64
	UID, GID int
	Linkname string
	Xattrs   map[string]string
	ModTime  time.Time
}

// Dir, File, Symlink, Hardlink and Whiteout are shorthands for entries.
func Dir(name string) Entry        { return Entry{Name: name, Type: tar.TypeDir} }
func File(name, body string) Entry { return Entry{Name: name, Body: body} }
func Symlink(name, target string) Entry {
	return Entry{Name: name, Type: tar.TypeSymlink, Linkname: target}
}
func Hardlink(name, target string) Entry {
	return Entry{Name: name, Type: tar.TypeLink, Linkname: target}
}
func Whiteout(dir, name string) Entry { return File(join(dir, ".wh."+name), "") }
func OpaqueWhiteout(dir string) Entry { return File(join(dir, ".wh..wh..opq"), "") }
func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// Tar writes entries as an uncompressed tar stream.
func Tar(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Typeflag: e.Type, Mode: e.Mode, Uid: e.UID, Gid: e.GID, Linkname: e.Linkname,
			ModTime: e.ModTime, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.ModTime.IsZero() {
			h.ModTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.Body))
		}
		for k, v := range e.Xattrs {
			if h.PAXRecords == nil {
				h.PAXRecords = map[string]string{}
			}
			h.PAXRecords["SCHILY.xattr."+k] = v
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("tar header %q: %v", e.Name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.Body)); err != nil {
				t.Fatalf("tar body %q: %v", e.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Gzip compresses b.
func Gzip(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Layer is a gzipped layer of entries.
func Layer(t testing.TB, entries ...Entry) v1.Layer {
	t.Helper()
	return static.NewLayer(Gzip(t, Tar(t, entries...)), types.DockerLayer)
}

// RawLayer is a layer whose blob is exactly b (a corrupt or truncated layer
// when b is not a good gzipped tar).
func RawLayer(b []byte) v1.Layer { return static.NewLayer(b, types.DockerLayer) }

// Image is a linux/amd64 image (unless cfg sets another platform through
// Platform) of the layers, in order, with cfg as its config.
func Image(t testing.TB, cfg v1.Config, layers ...v1.Layer) v1.Image {
	t.Helper()
	return PlatformImage(t, v1.Platform{OS: "linux", Architecture: "amd64"}, cfg, layers...)
}

// PlatformImage is Image for another platform.
func PlatformImage(t testing.TB, p v1.Platform, cfg v1.Config, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config = cfg
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Index is a multi-platform index of images, each with its config's platform.
func Index(t testing.TB, imgs ...v1.Image) v1.ImageIndex {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: cf.Platform()}})
	}
	return mutate.AppendManifests(empty.Index, adds...)
}

// Digest is an image's manifest digest.
func Digest(t testing.TB, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// Mount returns the image's root filesystem as a sandbox sees it, for the
// test to read: the one layer's directory of a single-layer image, else its
// layers (image.Rootfs.Layers, topmost first) mounted as a read-only
// overlay in a temp dir, unmounted at the test's end. A stack needs root
// (the tests of the store run as root).
func Mount(t testing.TB, layers []string) string {
	t.Helper()
	switch len(layers) {
	case 0:
		t.Fatal("imagetest.Mount: no layers")
	case 1:
		return layers[0]
	}
	dir := t.TempDir()
	// The layers by descriptor: test dirs may hold the , and : that the
	// lowerdir option cannot carry.
	var lower []string
	for _, l := range layers {
		f, err := os.Open(l)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		lower = append(lower, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())))
	}
	if err := unix.Mount("overlay", dir, "overlay", unix.MS_RDONLY, "lowerdir="+strings.Join(lower, ":")); err != nil {
		t.Fatalf("mount overlay of %s: %v", strings.Join(layers, ":"), err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
