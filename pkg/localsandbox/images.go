package localsandbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// Images is what the driver needs of the image store: the unpacked rootfs
// of a pinned image reference, from its cache. Images are pulled or built at
// sync (or ahead of the first launch), never here: a launch runs inside the
// run's concurrency slot, so a cache miss is an error (the slot is retried
// as an infrastructure failure), not a pull.
type Images interface {
	CachedRootfs(ctx context.Context, pinnedRef string) (Rootfs, error)
}

// Rootfs is an unpacked image held for one sandbox.
type Rootfs struct {
	// Dir is an unpacked root in one directory: the lower of the sandbox's
	// overlay; "" when Layers gives the root.
	Dir string
	// Layers are the image's layer directories, topmost first (the image
	// store's shared layers): the lowers of the sandbox's overlay.
	Layers []string
	// Env, WorkingDir and User are the image config's.
	Env        []string
	WorkingDir string
	User       string
	// Entrypoint and Cmd are the image config's (a sidecar service's
	// command unless its compose entry sets one).
	Entrypoint []string
	Cmd        []string
	// Release lets the store evict the rootfs again once the sandbox is
	// gone (nil = nothing to release).
	Release func()
}

// imageArgs resolves the spec's image to a cached rootfs, writes the
// runner's image file and returns the runner's image and limit flags.
func (d *Driver) imageArgs(p *proc) ([]string, error) {
	var args []string
	if d.cfg.InstalledAgentDir != "" {
		args = append(args, "--installed-agent-dir", d.cfg.InstalledAgentDir)
	}
	if d.cfg.PidsLimit != 0 {
		args = append(args, "--pids-limit", strconv.Itoa(d.cfg.PidsLimit))
	}
	if d.cfg.StaticBinDir != "" {
		args = append(args, "--static-bin-dir", d.cfg.StaticBinDir)
	}
	if d.cfg.Isolation != sandbox.IsolationBwrap {
		return args, nil
	}
	if p.spec.Image == "" {
		return nil, errors.New("the spec names no image (dispatch pins each task's image at sync); there is no fallback to the host's root filesystem")
	}
	rf, err := d.cfg.Images.CachedRootfs(context.Background(), p.spec.Image)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", p.spec.Image, err)
	}
	p.release = rf.Release
	file := filepath.Join(p.dir, "image.json")
	img := sandbox.Image{Ref: p.spec.Image, Rootfs: rf.Dir, Layers: rf.Layers, Env: rf.Env, WorkingDir: rf.WorkingDir, User: rf.User, Entrypoint: rf.Entrypoint}
	if err := sandbox.WriteImage(file, img); err != nil {
		p.releaseImage()
		return nil, err
	}
	args = append(args, "--image", file)
	if args, err = d.verifierImageArgs(p, args); err != nil {
		p.releaseImage()
		return nil, err
	}
	if len(p.spec.Services) > 0 {
		servicesFile, err := d.serviceImages(p)
		if err != nil {
			p.releaseImage()
			return nil, err
		}
		args = append(args, "--services", servicesFile)
	}
	if d.cfg.StorageMB != 0 {
		args = append(args, "--storage-mb", strconv.Itoa(d.cfg.StorageMB))
	}
	if d.cfg.NetworkCeiling != "" {
		args = append(args, "--network-ceiling", d.cfg.NetworkCeiling)
	}
	if d.cfg.KeepDiff {
		args = append(args, "--keep-diff")
	}
	return args, nil
}

// serviceImages resolves the spec's sidecar service images to cached
// rootfs dirs (held with the task's, released together) and writes the
// runner's services file.
func (d *Driver) serviceImages(p *proc) (string, error) {
	imgs := map[string]sandbox.ServiceImage{}
	for name, ref := range p.spec.Services {
		if ref == "" {
			return "", fmt.Errorf("service %s: the spec names no image for it (its image is pinned at sync)", name)
		}
		rf, err := d.cfg.Images.CachedRootfs(context.Background(), ref)
		if err != nil {
			return "", fmt.Errorf("service %s: image %s: %w", name, ref, err)
		}
		p.mu.Lock()
		prev := p.release
		p.release = func() {
			if rf.Release != nil {
				rf.Release()
			}
			if prev != nil {
				prev()
			}
		}
		p.mu.Unlock()
		imgs[name] = sandbox.ServiceImage{Image: sandbox.Image{Ref: ref, Rootfs: rf.Dir, Layers: rf.Layers, Env: rf.Env, WorkingDir: rf.WorkingDir, User: rf.User, Entrypoint: rf.Entrypoint},
			Cmd: rf.Cmd}
	}
	file := filepath.Join(p.dir, "services.json")
	if err := sandbox.WriteServiceImages(file, imgs); err != nil {
		return "", err
	}
	return file, nil
}

// releaseImage lets go of the sandbox's rootfs (once).
func (p *proc) releaseImage() {
	p.mu.Lock()
	release := p.release
	p.release = nil
	p.mu.Unlock()
	if release != nil {
		release()
	}
}
