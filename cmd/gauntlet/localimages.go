package main

import (
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/localimages"
)

// mirrorFlags collects --image-mirror PREFIX=URL[,URL…] settings.
type mirrorFlags []image.Mirror

func (m *mirrorFlags) String() string { return fmt.Sprint(*m) }

func (m *mirrorFlags) Set(v string) error {
	prefix, urls, ok := strings.Cut(v, "=")
	if !ok || prefix == "" || urls == "" {
		return fmt.Errorf("want PREFIX=URL[,URL…], e.g. docker.io=http://127.0.0.1:5000")
	}
	// Mirrors given on the command line are the only source of their
	// prefix: these machines, and air-gapped sites, reach no upstream.
	*m = append(*m, image.Mirror{Prefix: prefix, Endpoints: strings.Split(urls, ","), SkipUpstream: true})
	return image.ValidateMirrors(*m)
}

// imageFlags are `gauntlet local`'s task-environment settings.
type imageFlags struct {
	mirrors         mirrorFlags
	dockerConfig    *string
	defaultImage    *string
	noPublicNetwork *bool
	forceBuild      *bool
}

func addImageFlags(fs *flag.FlagSet) *imageFlags {
	f := &imageFlags{}
	fs.Var(&f.mirrors, "image-mirror", "PREFIX=URL[,URL…]: pull images under PREFIX (docker.io, ghcr.io/org, …) from these endpoints only (repeatable)")
	f.dockerConfig = fs.String("docker-config", "", "a Docker config.json giving registry pull credentials")
	f.defaultImage = fs.String("default-image", "", "image for tasks that name no docker_image and ship no Dockerfile (else they are unavailable)")
	f.noPublicNetwork = fs.Bool("no-public-network", false, "network policy: tasks needing network_mode public are unavailable")
	f.forceBuild = fs.Bool("force-build", false, "build a task's environment/Dockerfile even when it names a docker_image")
	return f
}

// apply opens the image store under dataDir and wires the sandboxes'
// images and the syncs' environments into lo (bwrap isolation only: the
// other modes run no image).
func (f *imageFlags) apply(lo *local.Options, dataDir string, logger *slog.Logger) error {
	if lo.Isolation != "bwrap" {
		return nil
	}
	dir := filepath.Join(dataDir, "images")
	store, err := image.Open(dir, image.Options{Mirrors: f.mirrors, DockerConfig: *f.dockerConfig, Logger: logger})
	if err != nil {
		return err
	}
	if lo.Images, err = localimages.SandboxImages(dir, logger); err != nil {
		return err
	}
	lo.Environments, err = localimages.Environments(localimages.Config{Store: store, Mirrors: f.mirrors,
		BuildDir: localimages.DefaultBuildDir(dataDir), Policy: localimages.Policy{
			DefaultImage: *f.defaultImage, ForceBuild: *f.forceBuild, NoPublicNetwork: *f.noPublicNetwork}})
	return err
}
