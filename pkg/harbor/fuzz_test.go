package harbor

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
)

// Fuzz targets of every parser of outside input in this package. `make
// test` runs their seeds (the real fixtures); `make fuzz` mutates them.
// Each asserts no panic and bounded work: inputs over a size limit are
// refused, never decoded.

// seedFiles adds every file matching the globs as a seed.
func seedFiles(f *testing.F, globs ...string) {
	f.Helper()
	n := 0
	for _, g := range globs {
		matches, _ := filepath.Glob(g)
		for _, m := range matches {
			data, err := os.ReadFile(m)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
			n++
		}
	}
	if n == 0 {
		f.Fatalf("no seed files match %v", globs)
	}
}

// fixtureDir returns the directory of a shared fixture.
func fixtureDir(f *testing.F, name string) string {
	return filepath.Dir(fixturePath(f, name))
}

func FuzzParseRegistry(f *testing.F) {
	seedFiles(f, "../../examples/registry.json")
	// Two real datasets of the Harbor snapshot (the whole file is a seed
	// too large to mutate usefully).
	var snap []json.RawMessage
	if err := json.Unmarshal(loadSnapshot(f), &snap); err != nil {
		f.Fatal(err)
	}
	for _, d := range snap[:4] {
		f.Add([]byte("[" + string(d) + "]"))
	}
	f.Add([]byte(`[{"name":"a","version":"1","tasks":[{"name":"../x","path":"p"}]}]`))
	f.Add([]byte(`[{"name":"a","version":"1","tasks":[{"name":7}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		reg, err := ParseRegistry(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, d := range reg {
			if len(d.Problems) > 0 {
				if _, err := reg.Resolve(d.Name, d.Version); err == nil {
					if first, _ := reg.first(d.Name, d.Version); len(first.Problems) > 0 {
						t.Fatalf("Resolve(%q, %q) returned a refused entry", d.Name, d.Version)
					}
				}
				continue
			}
			for _, task := range d.Tasks {
				if !benchmark.ValidTaskName(task.Name) {
					t.Fatalf("ParseRegistry accepted task name %q", task.Name)
				}
			}
		}
	})
}

func FuzzParseTaskConfig(f *testing.F) {
	seedFiles(f, "../../examples/demo-bench/*/task.toml", "testdata/tasks/*/task.toml")
	seedFiles(f, filepath.Join(fixtureDir(f, "terminal-bench-2/fix-git/task.toml"), "..", "*", "task.toml"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > MaxTaskConfigBytes {
			return // LoadTask never hands more to the parser
		}
		_, _ = ParseTaskConfig(data, "task.toml")
	})
}

func FuzzDecodeTrialResult(f *testing.F) {
	seedFiles(f, "testdata/results/*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		// DecodeTrialResult reads at most MaxTrialResultBytes, then this.
		tr, err := parseTrialResult(data)
		if err == nil && tr.TaskName == "" {
			t.Fatalf("DecodeTrialResult accepted a result without task_name: %q", data)
		}
	})
}

func FuzzParseReward(f *testing.F) {
	for _, s := range []string{"1", "0.5\n", " 1.0 \n2\n", "nan", "inf", "", `{"reward": 1}`, `{"a": 0.2, "reward": 0.7}`,
		`{"a": 1}`, `{"a": 1, "b": 2}`, `{"reward": null}`, `[]`, `{"reward": 1e999}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte, string) (Reward, error){parseRewardText, parseRewardJSON} {
			r, err := parse(data, "reward")
			if err == nil && (r.Value != r.Value || r.Values == nil) {
				t.Fatalf("parse(%q) = %+v: NaN or no values accepted", data, r)
			}
		}
	})
}
