package harbortest_test

import (
	"os"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor/harbortest"
)

// Harbor's own files pass; gauntlet's results of before (config: null) and
// misspelt or mistyped fields do not.
func TestCheck(t *testing.T) {
	const job = "../testdata/jobs/2026-01-28__14-00-00/"
	for file, shape := range map[string]string{
		"config.json": harbortest.JobConfig, "result.json": harbortest.JobResult,
		"lru-cache__a1Xk3Pq/config.json": harbortest.TrialConfig, "csv-summary__a2Xk3Pq/result.json": harbortest.TrialResult,
	} {
		data, err := os.ReadFile(job + file)
		if err != nil {
			t.Fatal(err)
		}
		if err := harbortest.Check(shape, data); err != nil {
			t.Errorf("Harbor's own %s: %v", file, err)
		}
	}
	passed, err := os.ReadFile(job + "lru-cache__a1Xk3Pq/result.json")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(passed)
	tests := []struct{ name, old, new string }{
		{"null config", `"config": {`, `"config": null, "x": {`},
		{"misspelt field", `"n_input_tokens"`, `"n_input_token"`},
		{"token count as text", `"n_output_tokens": 200`, `"n_output_tokens": "200"`},
		{"id not a uuid", `"id": "00000000-0000-0000-0000-000000000001"`, `"id": "trial-1"`},
		{"no task_id", `"task_id"`, `"task_idx"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := strings.Replace(doc, tt.old, tt.new, 1)
			if bad == doc {
				t.Fatalf("%q not in the fixture", tt.old)
			}
			if err := harbortest.Check(harbortest.TrialResult, []byte(bad)); err == nil {
				t.Errorf("Check accepted a result with %s", tt.name)
			}
		})
	}
}
