package examples

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// TestDemoCatalog: make run's catalog (demo-catalog.toml) keeps the first
// start short — its managed demo-bench is demo-bench-mini@1.0, a few of
// demo-bench's own task directories, one per category (so the run still
// has a category breakdown), fix-median among them (the only task the
// demo's mock model solves for codex) — and keeps the key the demo's run
// config names.
func TestDemoCatalog(t *testing.T) {
	data, err := os.ReadFile("demo-catalog.toml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := benchmark.ParseCatalog(data, "demo-catalog.toml")
	if err != nil {
		t.Fatalf("parse demo-catalog.toml: %v", err)
	}
	entry, ok := cat.Lookup(datasetName)
	if !ok || len(cat.Benchmarks) != 1 {
		t.Fatalf("demo-catalog.toml: want one benchmark, key %q; got %+v", datasetName, cat.Benchmarks)
	}
	if entry.Source != "demo-bench-mini@1.0" || entry.Name == datasetName {
		t.Errorf("demo catalog: source %q name %q; want demo-bench-mini@1.0 under a name of its own (demo-bench@1.0 can be added beside it)", entry.Source, entry.Name)
	}
	f, err := os.Open(entry.Registry)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reg, err := harbor.ParseRegistry(f)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := reg.Resolve("demo-bench-mini", datasetVer)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ds.Tasks); n < 2 || n > 5 {
		t.Errorf("demo-bench-mini has %d tasks; the first run should prepare at most 5 images", n)
	}
	categories := map[string]string{}
	fixMedian := false
	for _, ref := range ds.Tasks {
		if filepath.Dir(filepath.FromSlash(ref.Path)) != datasetDir {
			t.Errorf("task %s: path %q is not one of demo-bench's task directories", ref.Name, ref.Path)
		}
		task, err := harbor.LoadTask(filepath.FromSlash(ref.Path))
		if err != nil {
			t.Fatalf("task %s: %v", ref.Name, err)
		}
		c := task.Config.Metadata.Category()
		if other, dup := categories[c]; dup {
			t.Errorf("tasks %s and %s are both %s; want one per category", other, ref.Name, c)
		}
		categories[c] = ref.Name
		fixMedian = fixMedian || ref.Name == "fix-median"
	}
	if len(categories) < 2 {
		t.Errorf("demo-bench-mini covers %d categories; want several", len(categories))
	}
	if !fixMedian {
		t.Error("demo-bench-mini lacks fix-median, the task the demo's mock model solves for codex")
	}
}
