package runconfig_test

import (
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
)

func TestValidationErrorCountsItsProblemsInWords(t *testing.T) {
	cases := []struct {
		doc, want string
	}{
		{"[experiment]\nbenchmark = \"\"\n[[agents]]\nharness = \"oracle\"\n", "invalid run config (1 problem): "},
		{"[experiment]\nbenchmark = \"\"\n[execution]\nattempts_per_task = 0\n[[agents]]\nharness = \"oracle\"\n", "invalid run config (2 problems): "},
	}
	for _, tc := range cases {
		_, err := runconfig.Parse([]byte(tc.doc))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error starting %q", tc.doc, err, tc.want)
		}
	}
	if got := runconfig.CountProblems(1) + ", " + runconfig.CountProblems(0) + ", " + runconfig.CountProblems(3); got != "1 problem, 0 problems, 3 problems" {
		t.Errorf("CountProblems = %q", got)
	}
}
