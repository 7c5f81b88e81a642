package harbor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/compose"
)

// ComposeFile is where Harbor reads a task's compose file (it reads no
// other name: compose.yaml or docker-compose.yml mean nothing to it, and
// to gauntlet neither).
const ComposeFile = EnvironmentDir + "/" + compose.FileName

// loadCompose reads the task's environment/docker-compose.yaml, if it has
// one, as Harbor merges it over its own `main`: main's environment joins
// [environment.env] (whose values win, as Harbor's own override file comes
// after the task's); sidecar services, and every compose attribute
// gauntlet does not implement, make the task unsupported, named. A file
// that cannot be read is the task's error.
func (t *Task) loadCompose() error {
	envDir := filepath.Join(t.Dir, EnvironmentDir)
	if _, err := os.Lstat(filepath.Join(envDir, compose.FileName)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	p, err := compose.Load(context.Background(), envDir, ComposeFile)
	if err != nil {
		return err
	}
	t.Compose = p
	t.UnsupportedFiles = append(t.UnsupportedFiles, p.Unsupported...)
	if len(p.Sidecars) > 0 {
		names := make([]string, 0, len(p.Sidecars))
		for _, s := range p.Sidecars {
			names = append(names, s.Name)
		}
		t.UnsupportedFiles = append(t.UnsupportedFiles, fmt.Sprintf("%s: services beside the main container (%s): not run by gauntlet yet", ComposeFile, strings.Join(names, ", ")))
	}
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
	return nil
}
