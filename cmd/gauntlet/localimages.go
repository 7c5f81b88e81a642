package main

import (
	"flag"
	"log/slog"
	"os"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/localimages"
)

// imageFlags are `gauntlet local`'s task-environment settings: the image
// store's (as `gauntlet images` takes them) and the operator's policy.
type imageFlags struct {
	store           storeFlags
	defaultImage    *string
	noPublicNetwork *bool
	forceBuild      *bool
	parallelBuilds  *int
	// opened is the store apply opened (nil when no image runs).
	opened *image.Store
}

// pinRuns makes the store's eviction (max_rootfs_gb) keep the images of
// the runs that are not finished.
func (f *imageFlags) pinRuns(runs localimages.RunPins, manifests localimages.Manifests) {
	if f.opened != nil {
		f.opened.SetPinned(localimages.PinnedImages(runs, manifests))
	}
}

func addImageFlags(fs *flag.FlagSet) *imageFlags {
	f := &imageFlags{}
	fs.StringVar(&f.store.settings, "image-settings", os.Getenv("GAUNTLET_IMAGE_SETTINGS"), "image settings TOML (mirrors, docker_config, max_rootfs_gb); default $GAUNTLET_IMAGE_SETTINGS")
	fs.StringVar(&f.store.dockerConfig, "docker-config", "", "Docker config.json with pull credentials (default: the settings' docker_config, else $DOCKER_CONFIG/config.json or ~/.docker/config.json)")
	fs.Func("image-mirror", "PREFIX=URL[,URL…]: send image pulls under PREFIX (docker.io, ghcr.io/org) to mirror URLs first; repeatable", func(v string) error {
		f.store.mirrors = append(f.store.mirrors, v)
		return nil
	})
	f.defaultImage = fs.String("default-image", "", "image for tasks that name no docker_image and ship no Dockerfile (else they are unavailable)")
	f.noPublicNetwork = fs.Bool("no-public-network", false, "network policy: tasks needing network_mode public are unavailable")
	f.forceBuild = fs.Bool("force-build", false, "build a task's environment/Dockerfile even when it names a docker_image")
	f.parallelBuilds = fs.Int("parallel-builds", 0, "task images a sync prepares at once, and builds at once across all syncs (0: one per core)")
	return f
}

// mirrorSetting is the mirror setting the store gets (settings file, then
// flags), which builds use too.
func (s *storeFlags) mirrorSetting() ([]image.Mirror, error) {
	var ms []image.Mirror
	if s.settings != "" {
		st, err := image.LoadSettings(s.settings)
		if err != nil {
			return nil, err
		}
		ms = st.Mirrors
	}
	for _, m := range s.mirrors {
		prefix, urls, ok := strings.Cut(m, "=")
		if !ok || prefix == "" || urls == "" {
			return nil, usageError("--image-mirror %q: want PREFIX=URL[,URL…]", m)
		}
		ms = append(ms, image.Mirror{Prefix: prefix, Endpoints: strings.Split(urls, ",")})
	}
	return ms, nil
}

// apply opens the image store under dataDir and wires the sandboxes'
// images and the syncs' environments into lo (bwrap isolation only: the
// other modes run no image).
func (f *imageFlags) apply(lo *local.Options, dataDir string, logger *slog.Logger) error {
	if lo.Isolation != "bwrap" {
		return nil
	}
	f.store.data = dataDir
	mirrors, err := f.store.mirrorSetting()
	if err != nil {
		return err
	}
	store, err := f.store.open(os.Stderr)
	if err != nil {
		return err
	}
	f.opened = store
	lo.Images = localimages.SandboxImages(store, logger)
	lo.Environments, err = localimages.Environments(localimages.Config{Store: store, Mirrors: mirrors,
		BuildDir: localimages.DefaultBuildDir(dataDir), Policy: localimages.Policy{
			DefaultImage: *f.defaultImage, ForceBuild: *f.forceBuild, NoPublicNetwork: *f.noPublicNetwork, ParallelBuilds: *f.parallelBuilds}})
	if err == nil {
		logger.Info("task environments", "images", store.Dir(), "mirrors", len(mirrors), "default_image", *f.defaultImage,
			"no_public_network", *f.noPublicNetwork, "force_build", *f.forceBuild, "parallel_builds", *f.parallelBuilds)
	}
	return err
}
