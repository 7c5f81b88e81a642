package harbor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/gauntlet-bench/gauntlet/pkg/compose"
)

// ComposeFile is where Harbor reads a task's compose file (it reads no
// other name: compose.yaml or docker-compose.yml mean nothing to it, and
// to gauntlet neither).
const ComposeFile = EnvironmentDir + "/" + compose.FileName

// loadCompose reads the task's environment/docker-compose.yaml, if it has
// one, as Harbor merges it over its own `main`: main's environment joins
// [environment.env] (whose values win, as Harbor's own override file comes
// after the task's); every compose attribute gauntlet does not implement
// makes the task unsupported, named. Whether the platform runs sidecar
// services at all is the sync's to say (Sidecars). A file that cannot be
// read is the task's error.
func (t *Task) loadCompose() error {
	envDir := filepath.Join(t.Dir, EnvironmentDir)
	if _, err := os.Lstat(filepath.Join(envDir, compose.FileName)); errors.Is(err, fs.ErrNotExist) {
		return t.checkCollectServices()
	}
	p, err := compose.Load(context.Background(), envDir, ComposeFile)
	if err != nil {
		return err
	}
	t.Compose = p
	t.UnsupportedFiles = append(t.UnsupportedFiles, p.Unsupported...)
	if len(p.Main.Environment) > 0 {
		env := map[string]string{}
		for k, v := range p.Main.Environment {
			env[k] = v
		}
		for k, v := range t.Config.Environment.Env {
			env[k] = v
		}
		t.Config.Environment.Env = env
	}
	return t.checkCollectServices()
}

// checkCollectServices refuses a [[verifier.collect]] hook or an artifact
// naming a service the task does not have (Harbor would find out only when
// the hook fails to run or the artifact is not found, and go on without
// it).
func (t *Task) checkCollectServices() error {
	for i, h := range t.Config.Verifier.Collect {
		if h.Service == compose.MainService || slices.Contains(t.Sidecars(), h.Service) {
			continue
		}
		return &FieldError{File: filepath.Join(t.Dir, TaskConfigFile), Field: fmt.Sprintf("verifier.collect[%d].service", i),
			Reason: fmt.Sprintf("%q is not a service of the task (main, or a service of %s: %v)", h.Service, ComposeFile, t.Sidecars())}
	}
	for i, step := range t.Config.Steps {
		for j, h := range step.VerifierCollect {
			if h.Service == compose.MainService || slices.Contains(t.Sidecars(), h.Service) {
				continue
			}
			return &FieldError{File: filepath.Join(t.Dir, TaskConfigFile), Field: fmt.Sprintf("steps[%d].verifier.collect[%d].service", i, j),
				Reason: fmt.Sprintf("%q is not a service of the task (main, or a service of %s: %v)", h.Service, ComposeFile, t.Sidecars())}
		}
	}
	for i, a := range t.Config.Artifacts {
		if !a.Sidecar() || slices.Contains(t.Sidecars(), a.Service) {
			continue
		}
		return &FieldError{File: filepath.Join(t.Dir, TaskConfigFile), Field: fmt.Sprintf("artifacts[%d].service", i),
			Reason: fmt.Sprintf("%q is not a service of the task (main, or a service of %s: %v)", a.Service, ComposeFile, t.Sidecars())}
	}
	return nil
}

// Sidecars names the task's sidecar services, in start order; none when it
// has no compose file or only overrides main.
func (t Task) Sidecars() []string {
	if t.Compose == nil {
		return nil
	}
	names := make([]string, 0, len(t.Compose.Sidecars))
	for _, s := range t.Compose.Sidecars {
		names = append(names, s.Name)
	}
	return names
}
