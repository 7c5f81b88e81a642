package localreg

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Base is a base image built from a Debian rootfs tarball (made by
// scripts/base-images.sh with mmdebstrap), served under the names of the
// upstream images it stands in for. It is not those images: the python base
// has Debian bookworm's python3 (3.11, also as `python`) with pip, venv,
// python3-pytest and git, not Python 3.13 in /usr/local; the ubuntu base is
// Debian trixie's minbase with the real image's `ubuntu` user. README.md
// ("Stand-in base images") lists what still differs.
type Base struct {
	Tarball string   // file name in the base dir
	Names   []string // repository:tag under docker.io
	Env     []string
	Cmd     []string
}

const debianPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Bases is the table of base images, as data.
var Bases = []Base{
	{
		// python-is-python3 and python3-pip: the real python:* images
		// answer `python` and `pip`.
		Tarball: "debian-bookworm-python-r2.tar",
		Names:   []string{"library/python:3.13-slim-bookworm", "library/python:3.13-slim", "library/python:3-slim"},
		Env:     []string{debianPath, "LANG=C.UTF-8"},
		Cmd:     []string{"python3"},
	},
	{
		Tarball: "debian-bookworm-minbase.tar",
		Names:   []string{"library/debian:bookworm-slim", "library/debian:bookworm", "library/debian:12-slim"},
		Env:     []string{debianPath},
		Cmd:     []string{"bash"},
	},
	{
		// A newer Debian than bookworm (glibc 2.41 vs the real image's
		// 2.39) with what ubuntu:24.04 has beyond a minbase: gpgv and the
		// `ubuntu` user and group, uid/gid 1000.
		Tarball: "debian-trixie-ubuntu2404-r1.tar",
		Names:   []string{"library/ubuntu:24.04", "library/ubuntu:noble"},
		Env:     []string{debianPath},
		Cmd:     []string{"/bin/bash"},
	},
}

// BaseDir is where scripts/base-images.sh leaves the tarballs:
// ${GAUNTLET_CACHE:-$HOME/.cache/gauntlet}/base.
func BaseDir() string {
	if c := os.Getenv("GAUNTLET_CACHE"); c != "" {
		return filepath.Join(c, "base")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "gauntlet", "base")
}

// ErrNoBaseImages: a tarball is missing; `make base-images` builds them.
var ErrNoBaseImages = errors.New("base image tarballs missing: run `make base-images` (scripts/base-images.sh builds them with mmdebstrap, ≈ 1 min once)")

// annotation that names an image in an OCI layout (OCI image spec).
const refName = "org.opencontainers.image.ref.name"

type stamp map[string][2]int64 // tarball → size, mtime

// BaseLayout returns an OCI layout holding every base image, built from the
// tarballs in baseDir the first time (gzip of ≈ 300 MB: tens of seconds) and
// reused while the tarballs are unchanged. Concurrent callers, also other
// processes, build it once (flock).
func BaseLayout(baseDir string) (string, error) {
	want := stamp{}
	for _, b := range Bases {
		fi, err := os.Stat(filepath.Join(baseDir, b.Tarball))
		if err != nil || !fi.Mode().IsRegular() {
			return "", fmt.Errorf("%w: %s not found", ErrNoBaseImages, filepath.Join(baseDir, b.Tarball))
		}
		want[b.Tarball] = [2]int64{fi.Size(), fi.ModTime().UnixNano()}
	}
	// The layout's name carries the table's digest: the base dir is shared
	// by every checkout of the machine, and a checkout with another table
	// must not rebuild (remove and replace) the layout another one serves.
	name := "oci-" + tableDigest()
	dir := filepath.Join(baseDir, name)
	lock, err := os.OpenFile(filepath.Join(baseDir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", err
	}
	var have stamp
	if b, err := os.ReadFile(filepath.Join(dir, "stamp.json")); err == nil && json.Unmarshal(b, &have) == nil && reflect.DeepEqual(have, want) {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(baseDir, "oci-tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return "", err
	}
	for _, b := range Bases {
		img, err := RootfsImage(filepath.Join(baseDir, b.Tarball), v1.Config{Env: b.Env, Cmd: b.Cmd})
		if err != nil {
			return "", fmt.Errorf("base image %s: %w", b.Tarball, err)
		}
		for _, n := range b.Names {
			if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{refName: n})); err != nil {
				return "", fmt.Errorf("base image %s: %w", b.Tarball, err)
			}
		}
	}
	sb, _ := json.Marshal(want)
	if err := os.WriteFile(filepath.Join(tmp, "stamp.json"), sb, 0o644); err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// tableDigest is 12 hex digits of the sha256 of the Bases table.
func tableDigest() string {
	b, _ := json.Marshal(Bases) // plain strings: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// RootfsImage is a one-layer linux/amd64 image of a rootfs tarball, with cfg
// as its config (Env, Cmd, WorkingDir, User…). The layer is gzipped at best
// speed and kept in memory once compressed (digest and upload read it twice).
func RootfsImage(tarPath string, cfg v1.Config) (v1.Image, error) {
	l, err := tarball.LayerFromFile(tarPath, tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config = cfg
	return mutate.ConfigFile(img, cf)
}

// PushLayout makes every image of an OCI layout that carries a ref.name
// annotation (repository:tag) available at the registry. Blobs already
// served from the layout (Options.Layouts) are not copied.
func (r *Registry) PushLayout(ctx context.Context, dir string) ([]string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	ii, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := ii.IndexManifest()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range im.Manifests {
		n := d.Annotations[refName]
		if n == "" {
			continue
		}
		if err := repoTag(n); err != nil {
			return nil, fmt.Errorf("layout %s: annotation %s %w", dir, refName, err)
		}
		img, err := ii.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		if err := r.Push(ctx, n, img); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, nil
}
