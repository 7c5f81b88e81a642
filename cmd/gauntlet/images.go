package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
	"github.com/gauntlet-bench/gauntlet/pkg/imagebuild"
	"github.com/gauntlet-bench/gauntlet/pkg/localimages"
)

var imagesGroup = group{name: "images", subs: []subcommand{
	{name: "list", usage: "images list [--json]", summary: "list the images in the local store", run: imagesList},
	{name: "pull", usage: "images pull REF...", summary: "resolve, download and unpack images (progress bar)", run: imagesPull},
	{name: "prune", usage: "images prune [--images]", summary: "drop unpacked images not in use, the layers no image uses, unreferenced blobs", run: imagesPrune},
	{name: "du", usage: "images du [--json]", summary: "disk used by the image storage: layers, blobs, builder, and what sharing layers saves", run: imagesDu},
	{name: "serve", usage: "images serve [--addr A] [--write-settings F]", summary: "serve the Debian base images on loopback as a docker.io mirror", run: imagesServe},
}}

// storeFlags are the flags every images subcommand takes.
type storeFlags struct {
	data, settings, dockerConfig string
	mirrors                      []string
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.data, "data", defaultDataDir(), "data directory; the store is its images/ subdirectory")
	fs.StringVar(&s.settings, "settings", os.Getenv("GAUNTLET_IMAGE_SETTINGS"), "image settings TOML (mirrors, docker_config, max_rootfs_gb); default $GAUNTLET_IMAGE_SETTINGS")
	fs.StringVar(&s.dockerConfig, "docker-config", "", "Docker config.json with pull credentials (default: the settings' docker_config, else $DOCKER_CONFIG/config.json or ~/.docker/config.json)")
	fs.Func("mirror", "PREFIX=URL[,URL…]: send PREFIX (docker.io, ghcr.io/org) to mirror URLs first; repeatable", func(v string) error {
		s.mirrors = append(s.mirrors, v)
		return nil
	})
}

func (s *storeFlags) open(stderr io.Writer) (*image.Store, error) {
	var st image.Settings
	if s.settings != "" {
		var err error
		if st, err = image.LoadSettings(s.settings); err != nil {
			return nil, err
		}
	}
	for _, m := range s.mirrors {
		prefix, urls, ok := strings.Cut(m, "=")
		if !ok || prefix == "" || urls == "" {
			return nil, usageError("--mirror %q: want PREFIX=URL[,URL…]", m)
		}
		st.Mirrors = append(st.Mirrors, image.Mirror{Prefix: prefix, Endpoints: strings.Split(urls, ",")})
	}
	opts := st.Options()
	opts.DockerConfig = first(s.dockerConfig, st.DockerConfig, image.DefaultDockerConfig())
	opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return image.Open(filepath.Join(s.data, "images"), opts)
}

// openNoArgs parses the flags of a subcommand that takes no positional
// argument and opens the store they name.
func (s *storeFlags) openNoArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (*image.Store, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 0 {
		return nil, usageError("takes no arguments")
	}
	return s.open(stderr)
}

func imagesList(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("images list", "images list [--json] [store flags]", e.stderr)
	var sf storeFlags
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	st, err := sf.openNoArgs(fs, args, e.stderr)
	if err != nil {
		return err
	}
	list, err := st.List(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, list)
	}
	t := newTable(e.stdout, "NAME", "DIGEST", "SIZE", "LAYERS", "ROOTFS", "OWN", "SHARED", "LAST USED")
	for _, i := range list {
		rootfs, own, shared := "-", "-", "-"
		if i.Unpacked {
			rootfs = humanize.Bytes(uint64(i.Rootfs))
			own, shared = humanize.Bytes(uint64(i.Own)), humanize.Bytes(uint64(i.Shared))
			if i.InUse {
				rootfs += " (in use)"
			}
		}
		last := "-"
		if !i.LastUsed.IsZero() {
			last = humanize.Time(i.LastUsed)
		}
		name := strings.Join(i.Names, ", ")
		if name == "" {
			name = "<none>"
		}
		size := humanize.Bytes(uint64(i.Size))
		if !i.Stored {
			size += " (partial)"
		}
		t.row(name, shortDigest(i.Digest), size, fmt.Sprint(i.Layers), rootfs, own, shared, last)
	}
	return t.flush()
}

func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

func imagesPull(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("images pull", "images pull REF... [store flags]", e.stderr)
	var sf storeFlags
	sf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError("want at least one image reference (python:3.13-slim-bookworm, ghcr.io/org/img@sha256:…)")
	}
	st, err := sf.open(e.stderr)
	if err != nil {
		return err
	}
	var failed []error
	for _, ref := range pos {
		start := time.Now()
		var bar *progressbar.ProgressBar
		phase := ""
		showBar := isTerminal(e.stderr)
		res, err := st.Pull(ctx, ref, func(p image.Progress) {
			if !showBar {
				return
			}
			if p.Phase != phase {
				if bar != nil {
					_ = bar.Finish()
				}
				phase = p.Phase
				bar = progressbar.NewOptions64(p.Total, progressbar.OptionSetWriter(e.stderr),
					progressbar.OptionSetDescription(fmt.Sprintf("%-8s %s", p.Phase, ref)), progressbar.OptionShowBytes(true),
					progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
			}
			_ = bar.Set64(p.Complete)
			if p.Done {
				_ = bar.Finish()
			}
		})
		if bar != nil {
			_ = bar.Finish()
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "gauntlet images pull: %v\n", err)
			failed = append(failed, err)
			continue
		}
		fmt.Fprintf(e.stdout, "%s\t%s\t%s\t%s\n", ref, res.Ref, humanize.Bytes(uint64(res.Size)), time.Since(start).Round(time.Millisecond))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d images failed", len(failed), len(pos))
	}
	return nil
}

func imagesPrune(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("images prune", "images prune [--images] [store flags]", e.stderr)
	var sf storeFlags
	sf.register(fs)
	all := fs.Bool("images", false, "also forget the images themselves (their blobs go; the next use pulls again)")
	st, err := sf.openNoArgs(fs, args, e.stderr)
	if err != nil {
		return err
	}
	rep, err := st.Prune(ctx, image.PruneOptions{Images: *all})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "removed %d rootfs, %d layers (%s), %d images, %d blobs (%s); %d rootfs in use kept\n",
		rep.Rootfs, rep.Layers, humanize.Bytes(uint64(rep.RootfsBytes)), rep.Images, rep.Blobs, humanize.Bytes(uint64(rep.BlobBytes)), rep.InUse)
	return nil
}

func imagesDu(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("images du", "images du [--json] [store flags]", e.stderr)
	var sf storeFlags
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	st, err := sf.openNoArgs(fs, args, e.stderr)
	if err != nil {
		return err
	}
	// The builder's storage, measured here without buildah: `gauntlet
	// local` keeps it beside the store, under the same data dir.
	st.SetExtra(builderStorage(localimages.DefaultBuildDir(sf.data)))
	u, err := st.DiskUsage(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, u)
	}
	b := func(n int64) string { return humanize.Bytes(uint64(n)) }
	t := newTable(e.stdout, "WHAT", "COUNT", "SIZE")
	t.row("layers (unpacked, each once)", fmt.Sprint(u.Layers), b(u.LayerBytes))
	t.row("blobs (compressed layers, configs, manifests)", fmt.Sprint(u.Blobs), b(u.BlobBytes))
	t.row("builder storage (buildah's layer cache)", "-", b(u.ExtraBytes))
	t.row("total (what max_rootfs_gb caps)", "-", b(u.Total()))
	t.row("unpacked images, unshared (Σ of their rootfs)", fmt.Sprint(u.Unpacked), b(u.ImageBytes))
	t.row("layers shared by more than one image", "-", b(u.SharedBytes))
	t.row("saved by sharing layers", "-", b(u.ImageBytes-u.LayerBytes))
	return t.flush()
}

// builderStorage measures a builder's storage dir for `images du`; it
// reclaims nothing (du only reads).
type builderStorage string

func (d builderStorage) Usage(ctx context.Context) (int64, error) {
	return imagebuild.StorageUsage(ctx, string(d))
}

func (builderStorage) Reclaim(context.Context) error { return nil }

// imagesServe runs a loopback registry with the Debian base images under
// their upstream names: the stand-in for Docker Hub in `make run`'s demo. It
// is its own process, not part of `gauntlet local`, so the platform reaches
// it exactly as it would reach a real mirror (through the mirror setting)
// and holds no stand-in code.
func imagesServe(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("images serve", "images serve [--addr 127.0.0.1:PORT] [--base-dir DIR] [--layout DIR]... [--write-settings FILE]", e.stderr)
	addr := fs.String("addr", "127.0.0.1:5480", "loopback address to listen on")
	baseDir := fs.String("base-dir", localreg.BaseDir(), "where `make base-images` left the Debian rootfs tarballs")
	var layouts []string
	fs.Func("layout", "also serve the images of this OCI layout (named by their org.opencontainers.image.ref.name annotation); repeatable", func(v string) error {
		layouts = append(layouts, v)
		return nil
	})
	settings := fs.String("write-settings", "", "write an image settings TOML that mirrors docker.io here, for gauntlet local / images --settings")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageError("takes no arguments")
	}
	base, err := localreg.BaseLayout(*baseDir)
	if errors.Is(err, localreg.ErrNoBaseImages) {
		return err
	}
	if err != nil {
		return fmt.Errorf("base images: %w", err)
	}
	tmp, err := os.MkdirTemp("", "gauntlet-registry-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	all := append([]string{base}, layouts...)
	reg, err := localreg.Start(localreg.Options{Addr: *addr, BlobDir: tmp, Layouts: all})
	if err != nil {
		return err
	}
	defer reg.Close()
	var names []string
	for _, l := range all {
		n, err := reg.PushLayout(ctx, l)
		if err != nil {
			return err
		}
		names = append(names, n...)
	}
	if *settings != "" {
		if err := image.WriteSettings(*settings, image.Settings{Mirrors: []image.Mirror{reg.Mirror("docker.io")}}); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "serving %d images at %s as a docker.io mirror (stand-ins built from Debian packages):\n", len(names), reg.URL)
	for _, n := range names {
		fmt.Fprintf(e.stdout, "  docker.io/%s\n", n)
	}
	fmt.Fprintf(e.stdout, "mirror setting: [[mirrors]] prefix = \"docker.io\" endpoints = [%q] skip_upstream = true\n", reg.URL)
	if err := reg.Wait(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
