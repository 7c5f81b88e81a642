package examples

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/dockerfile"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
)

// TestDemoEnvs checks demo-envs, the example of task environments: one task
// that names a docker_image and ships no Dockerfile (pulled), one that ships
// only a Dockerfile (built), both listed in registry.json, and the run
// config that the demo submits on them.
func TestDemoEnvs(t *testing.T) {
	f, err := os.Open("registry.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reg, err := harbor.ParseRegistry(f)
	if err != nil {
		t.Fatal(err)
	}
	d, err := reg.Resolve("demo-envs", "1.0")
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]benchmark.ImageSource{}
	for _, ref := range d.Tasks {
		dir := filepath.Join(filepath.FromSlash(ref.Path))
		task, err := harbor.LoadTask(dir)
		if err != nil {
			t.Fatalf("task %s: %v", ref.Name, err)
		}
		if !task.HasSolution {
			t.Errorf("task %s has no solution/solve.sh", ref.Name)
		}
		df, dfErr := os.ReadFile(filepath.Join(dir, "environment", "Dockerfile"))
		src, _, err := benchmark.ChooseImage(task.Config.Environment.DockerImage, dfErr == nil, false, "")
		if err != nil {
			t.Fatalf("task %s: %v", ref.Name, err)
		}
		sources[ref.Name] = src
		if dfErr == nil {
			if bases, err := dockerfile.Bases(df); err != nil || len(bases) != 1 {
				t.Errorf("task %s: Dockerfile bases %v, %v; want one", ref.Name, bases, err)
			}
		}
	}
	// separate-grader: a separate verifier whose image tests/ builds (it
	// provides /tests/test.sh), and a declared artifact.
	sep, err := harbor.LoadTask("demo-envs/separate-grader")
	if err != nil {
		t.Fatal(err)
	}
	if !sep.Config.Verifier.Separate() || len(sep.Config.Artifacts) != 1 || len(sep.Unsupported()) != 0 {
		t.Errorf("separate-grader: separate %v, artifacts %v, unsupported %v", sep.Config.Verifier.Separate(), sep.Config.Artifacts, sep.Unsupported())
	}
	if df, err := os.ReadFile("demo-envs/separate-grader/tests/Dockerfile"); err != nil || !strings.Contains(string(df), "COPY test.sh /tests/test.sh") {
		t.Errorf("separate-grader tests/Dockerfile must COPY test.sh to /tests/test.sh: %v", err)
	}
	want := map[string]benchmark.ImageSource{"image-facts": benchmark.ImagePull, "build-inventory": benchmark.ImageBuild, "separate-grader": benchmark.ImagePull, "ready-server": benchmark.ImagePull, "sidecar-orders": benchmark.ImagePull}
	if diff := cmp.Diff(want, sources); diff != "" {
		t.Errorf("image sources (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile("runs/envs/oracle-nop.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := runconfig.Parse(data)
	if err != nil || cfg.Experiment.Benchmark != benchmark.KeyFor("demo-envs", "1.0") {
		t.Errorf("runs/envs/oracle-nop.toml: %+v, %v; want it to name demo-envs-1-0", cfg.Experiment, err)
	}
}
