package pipeline

import (
	"fmt"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// CodeTasksUnavailable rejects a run whose every selected task is
// unavailable (its image could not be had at sync, or policy forbids it).
const CodeTasksUnavailable = "tasks_unavailable"

// splitUnavailable separates the selected tasks whose environment could
// not be prepared at sync: they are listed on the run with their reason and
// get no slots, so an image problem is never scored as an agent's failure.
func splitUnavailable(m benchmark.Manifest, selected []string) (available []string, unavailable []run.UnavailableTask) {
	byName := make(map[string]benchmark.Task, len(m.Tasks))
	for _, t := range m.Tasks {
		byName[t.Name] = t
	}
	for _, name := range selected {
		if reason := byName[name].UnavailableReason(); reason != "" {
			unavailable = append(unavailable, run.UnavailableTask{Name: name, Reason: reason})
			continue
		}
		available = append(available, name)
	}
	return available, unavailable
}

// availableCount is the number of the manifest's tasks a run can attempt.
func availableCount(m benchmark.Manifest) int {
	n := 0
	for _, t := range m.Tasks {
		if t.Available() {
			n++
		}
	}
	return n
}

// unavailableWarning says which selected tasks a run will not attempt.
func unavailableWarning(tasks []run.UnavailableTask) string {
	names := make([]string, len(tasks))
	for i, t := range tasks {
		names[i] = t.Name
	}
	return fmt.Sprintf("%d selected tasks are unavailable and get no attempts: %s (see the run's unavailable_tasks for each reason)",
		len(tasks), benchmark.QuoteList(names, 10))
}

// unavailableProblem rejects a selection with no available task.
func unavailableProblem(tasks []run.UnavailableTask) Problem {
	reasons := make([]string, 0, min(len(tasks), 3))
	for _, t := range tasks[:min(len(tasks), 3)] {
		reasons = append(reasons, t.Reason)
	}
	return Problem{Code: CodeTasksUnavailable, Field: "tasks",
		Message: fmt.Sprintf("every selected task is unavailable (%d); for example: %s", len(tasks), strings.Join(reasons, "; "))}
}

// pinnedImage is the image reference a slot's sandbox runs: the digest
// reference sync pinned in the manifest version (so every attempt of a run
// runs the same image, whatever a tag does upstream), or, for a manifest
// synced without image preparation, the task's docker_image as written.
func pinnedImage(t benchmark.Task) string {
	if t.Environment != nil {
		return t.Environment.Pinned
	}
	return t.DockerImage
}
