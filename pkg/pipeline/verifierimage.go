package pipeline

import "github.com/gauntlet-bench/gauntlet/pkg/benchmark"

// verifierImage is the pinned image of a task's separate verifier, as
// sync pinned it in the manifest version; "" for a shared verifier.
func verifierImage(t benchmark.Task) string {
	if t.Environment == nil || t.Environment.Verifier == nil {
		return ""
	}
	return t.Environment.Verifier.Pinned
}
