package local_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
)

func TestCatalogIsInstalledThroughBenchsync(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	open := func() records.Benchmark {
		t.Helper()
		p, err := local.Open(ctx, testOptions(dir, runnerBin))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		b, err := p.Records().Benchmarks.Benchmark(ctx, pipeline.PlatformWorkspace, "demo-bench")
		if err != nil {
			t.Fatal(err)
		}
		var src json.RawMessage
		if err := p.Records().Benchmarks.SyncSource(ctx, pipeline.PlatformWorkspace, "demo-bench", &src); err != nil {
			t.Errorf("demo-bench has no sync source (%v); it was not installed through benchsync", err)
		}
		return b
	}
	first := open()
	if first.Status != records.SyncReady || first.ReadyVersion != "1.0" || first.TaskCount != 15 || first.Source.Type != benchmark.Managed {
		t.Errorf("after the first start demo-bench is %s at %q with %d tasks (%s), want ready at 1.0 with 15 managed tasks",
			first.Status, first.ReadyVersion, first.TaskCount, first.Source.Type)
	}
	if second := open(); second.Version != first.Version {
		t.Errorf("a second start rewrote demo-bench (version %d → %d); an unchanged catalog must change nothing", first.Version, second.Version)
	}
}
