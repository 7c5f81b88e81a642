package localsandbox

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// verifierImageArgs resolves a separate verifier's image (spec
// VerifierImage) to its cached rootfs, held with the task's for the
// sandbox's life, and hands it to the runner (--verifier-image).
func (d *Driver) verifierImageArgs(p *proc, args []string) ([]string, error) {
	if p.spec.VerifierImage == "" {
		return args, nil
	}
	rf, err := d.cfg.Images.CachedRootfs(context.Background(), p.spec.VerifierImage)
	if err != nil {
		return nil, fmt.Errorf("separate verifier image %s: %w", p.spec.VerifierImage, err)
	}
	if rel := rf.Release; rel != nil {
		prev := p.release
		p.release = func() {
			if prev != nil {
				prev()
			}
			rel()
		}
	}
	file := filepath.Join(p.dir, "verifier-image.json")
	img := sandbox.Image{Ref: p.spec.VerifierImage, Rootfs: rf.Dir, Layers: rf.Layers, Env: rf.Env, WorkingDir: rf.WorkingDir, User: rf.User}
	if err := sandbox.WriteImage(file, img); err != nil {
		return nil, err
	}
	return append(args, "--verifier-image", file), nil
}
