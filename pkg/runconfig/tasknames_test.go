package runconfig

import (
	"slices"
	"testing"
)

// Osmosis's own configs name Harbor package tasks "org/name"; a run config
// selecting them parses, while a category stays one segment.
func TestParsePackageTaskNames(t *testing.T) {
	cfg, err := Parse([]byte(head + agent + "[tasks]\ntask_names = [\"terminal-bench/git-multibranch\", \"fix-permissions\"]\n"))
	if err != nil {
		t.Fatalf("Parse = %v, want no error", err)
	}
	want := []string{"terminal-bench/git-multibranch", "fix-permissions"}
	if !slices.Equal(cfg.Tasks.TaskNames, want) {
		t.Errorf("task_names = %q, want %q", cfg.Tasks.TaskNames, want)
	}
	for _, bad := range []string{"a/b/c", "org/../x", "org/", "/name"} {
		if _, err := Parse([]byte(head + agent + "[tasks]\ntask_names = [\"" + bad + "\"]\n")); err == nil {
			t.Errorf("Parse(task_names = [%q]) = nil, want an error", bad)
		}
	}
}
