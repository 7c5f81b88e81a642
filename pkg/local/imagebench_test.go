package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/localsandbox"
)

// imageBenchRef is the image every task of the image bench names; the
// helper's image cache serves the test rootfs (internal/testrootfs) for it.
const imageBenchRef = "127.0.0.1:5000/gauntlet-test/minbase:crash"

// imageBenchTasks are the image bench's tasks: copies of the runner's
// fixture task (its oracle passes on the test rootfs) naming imageBenchRef,
// with a 512 MB storage limit, so each attempt has its loop-mounted
// filesystem and overlay, as a production image sandbox does.
var imageBenchTasks = []string{"image-a", "image-b", "image-c"}

// imageBenchCatalog writes a catalog of one benchmark, image-bench, whose
// task set "smoke" holds imageBenchTasks, and returns its path.
func imageBenchCatalog(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := "../runner/testdata/task"
	var entries []string
	for _, name := range imageBenchTasks {
		dst := filepath.Join(dir, "image-bench", name)
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		toml, err := os.ReadFile(filepath.Join(src, "task.toml"))
		if err != nil {
			t.Fatal(err)
		}
		env := fmt.Sprintf("[environment]\ndocker_image = %q\nstorage_mb = 512\n", imageBenchRef)
		if err := os.WriteFile(filepath.Join(dst, "task.toml"), []byte(strings.Replace(string(toml), "[environment]\n", env, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, fmt.Sprintf(`{"name": %q, "git_url": "", "git_commit_id": "", "path": "image-bench/%s"}`, name, name))
	}
	registry := `[{"name": "image-bench", "version": "1.0", "description": "The crash suite's tasks, run in image sandboxes.", "tasks": [` +
		strings.Join(entries, ", ") + `]}]`
	if err := os.WriteFile(filepath.Join(dir, "registry.json"), []byte(registry), 0o644); err != nil {
		t.Fatal(err)
	}
	catalog := fmt.Sprintf(`[[benchmarks]]
key = "image-bench"
name = "image-bench"
description = "The crash suite's tasks, run in image sandboxes."
source = "image-bench@1.0"
registry = "registry.json"
harness_requirement = "optional"
default_harness = "oracle"
judge_required = false
pass_threshold = 1.0

[[benchmarks.task_sets]]
name = "smoke"
description = "Every task."
recommended = true
tasks = ["%s"]
`, strings.Join(imageBenchTasks, `", "`))
	path := filepath.Join(dir, "catalog.toml")
	if err := os.WriteFile(path, []byte(catalog), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rootfsImages is an image cache holding one unpacked rootfs under
// imageBenchRef; any other reference is a cache miss.
type rootfsImages struct{ dir string }

func (r rootfsImages) CachedRootfs(_ context.Context, ref string) (localsandbox.Rootfs, error) {
	if ref != imageBenchRef {
		return localsandbox.Rootfs{}, fmt.Errorf("image %s is not in the cache", ref)
	}
	return localsandbox.Rootfs{Dir: r.dir, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, WorkingDir: "/app"}, nil
}

// withImageSandboxes makes opts run image-bench's tasks in image sandboxes
// (the default isolation) over rootfs.
func withImageSandboxes(opts local.Options, catalog, rootfs string) local.Options {
	opts.Catalog, opts.Isolation, opts.Images = catalog, "bwrap", rootfsImages{dir: rootfs}
	return opts
}
