package benchsync

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// VerifierTestScript is what a separate verifier's image must provide
// itself: Harbor uploads no tests into a separate verifier environment.
const VerifierTestScript = "/tests/test.sh"

// verifier prepares the image of a task's separate verifier ([verifier]
// environment_mode = "separate") after its main image, by Harbor's rule:
// the verifier environment's docker_image is pulled, else the task's
// tests/ is the build context of its Dockerfile. The image is pinned and
// warmed like the task's; one that cannot be had, or that does not provide
// /tests/test.sh, makes the task unavailable with the reason.
func (p *imagePrep) verifier(ctx context.Context, name, dir string, cfg harbor.TaskConfig, env benchmark.Environment) (benchmark.Environment, error) {
	if p.cfg.NoSeparateVerifier != "" {
		env.Unavailable = fmt.Sprintf("task %s: [verifier] environment_mode = %q (separate verifier environments): %s", name, harbor.VerifierSeparate, p.cfg.NoSeparateVerifier)
		return env, nil
	}
	ve := cfg.VerifierEnvironment()
	testsDir := filepath.Join(dir, "tests")
	hasDockerfile := isFile(filepath.Join(testsDir, "Dockerfile"))
	source, ref, err := benchmark.ChooseImage(ve.DockerImage, hasDockerfile, p.cfg.ForceBuild, "")
	if errors.Is(err, benchmark.ErrNoImage) {
		env.Unavailable = fmt.Sprintf("task %s: separate verifier: tests/Dockerfile is missing and [verifier.environment] names no docker_image: the verifier's image must be built from tests/ (and provide %s)", name, VerifierTestScript)
		return env, nil
	}
	if err != nil {
		env.Unavailable = fmt.Sprintf("task %s: separate verifier: %v", name, err)
		return env, nil
	}
	v := benchmark.Environment{Source: source, Image: ref}
	if source == benchmark.ImageBuild {
		v, err = p.build(ctx, name, testsDir, "tests/Dockerfile (separate verifier)", ve.BuildTimeoutSec, v)
	} else {
		v, err = p.pull(ctx, name, ref, v)
		if v.Unavailable != "" {
			v.Unavailable = strings.Replace(v.Unavailable, "task "+name+": ", "task "+name+": separate verifier: ", 1)
		}
	}
	if err != nil {
		// A build still running parks the sync under the verifier's key.
		return benchmark.Environment{BuildKey: v.BuildKey}, err
	}
	if v.Unavailable == "" {
		if err := p.warm(ctx, name, &v); err != nil {
			return env, err
		}
	}
	if v.Unavailable == "" && p.cfg.HasFile != nil {
		ok, err := p.cfg.HasFile(ctx, v.Pinned, VerifierTestScript)
		switch {
		case ctx.Err() != nil:
			return env, ctx.Err()
		case err != nil:
			v.Unavailable = fmt.Sprintf("task %s: separate verifier image %s: %v", name, v.Pinned, err)
		case !ok:
			what := "tests/Dockerfile"
			if source != benchmark.ImageBuild {
				what = "[verifier.environment].docker_image " + ref
			}
			v.Unavailable = fmt.Sprintf("task %s: %s: the separate verifier's image does not provide %s (Harbor uploads no tests into a separate verifier: COPY test.sh to %s in the image)", name, what, VerifierTestScript, VerifierTestScript)
		}
	}
	env.Verifier = &v
	env.Unavailable = v.Unavailable
	return env, nil
}

// separateWithoutImages makes the tasks with a separate verifier
// unavailable in a sync that prepares no images: their verifier has no
// image to run in.
func separateWithoutImages(tasks []benchmark.Task, dirs []string) {
	for i := range tasks {
		if dirs[i] == "" || tasks[i].Environment != nil {
			continue
		}
		loaded, err := harbor.LoadTask(dirs[i])
		if err != nil || !loaded.Config.Verifier.Separate() {
			continue
		}
		tasks[i].Environment = &benchmark.Environment{Unavailable: fmt.Sprintf("task %s: [verifier] environment_mode = %q (separate verifier environments): the verifier runs in an image of its own, and this platform prepares no images at sync", tasks[i].Name, harbor.VerifierSeparate)}
	}
}
