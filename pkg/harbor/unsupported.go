package harbor

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// The parts of Harbor's task format (schema 1.4, Harbor v0.22) that gauntlet
// does not run yet. A task that uses one is made unavailable at sync with a
// reason naming it, never run as if it were a plain task: its score would be
// wrong. Keys Harbor does not define are ignored, as Harbor ignores them.

// unsupportedKeys lists the task.toml keys of doc that Harbor defines and
// gauntlet does not implement, each with what it is.
func (r *fieldReader) unsupportedKeys(doc map[string]any) []string {
	var out []string
	out = append(out, r.unsupportedArtifacts(doc)...)
	e := r.table(doc, "", "environment")
	if osName, ok := r.str(e, "environment", "os"); ok {
		switch osName {
		case "linux", "Linux", "LINUX":
		case "windows", "Windows", "WINDOWS":
			out = append(out, `[environment].os = "windows" (this platform runs Linux containers only)`)
		default:
			r.fail("environment.os", "must be %q or %q, got %q", "linux", "windows", osName)
		}
	}
	if gpus, ok := r.integer(e, "environment", "gpus"); ok && gpus > 0 {
		out = append(out, fmt.Sprintf("[environment].gpus = %d (this platform has no GPUs)", gpus))
	}
	if _, ok := e["tpu"]; ok {
		out = append(out, "[environment.tpu] (this platform has no TPUs)")
	}
	if m, ok := e["mcp_servers"]; ok && nonEmpty(m) {
		out = append(out, "[[environment.mcp_servers]] (MCP servers for the agent)")
	}
	if _, ok := e["skills_dir"]; ok {
		out = append(out, "[environment].skills_dir (agent skills)")
	}
	return out
}

// nonEmpty reports whether a decoded TOML value holds anything: an empty
// array means the feature is not used, as Harbor reads it.
func nonEmpty(v any) bool {
	switch x := v.(type) {
	case []any:
		return len(x) > 0
	case []map[string]any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	case nil:
		return false
	default:
		return true
	}
}

// unsupportedLayout lists the files and directories of a task directory
// that Harbor gives a meaning and gauntlet does not implement.
func unsupportedLayout(dir string) []string {
	var out []string
	if _, err := os.Lstat(filepath.Join(dir, "trajectory.json")); err == nil {
		out = append(out, "trajectory.json (prior agent context seeded before the agent runs)")
	}
	return out
}

// Unsupported lists what the task uses of Harbor's format that gauntlet
// does not run yet (task.toml keys, then files), sorted and without
// repeats; empty when the task runs as Harbor would run it.
func (t Task) Unsupported() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), t.Config.Unsupported...), t.UnsupportedFiles...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
