package pipeline

import (
	"fmt"
	"slices"
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

// preparingTasks names the unavailable tasks whose image is still being
// prepared, sorted.
func preparingTasks(m benchmark.Manifest, unavailable []run.UnavailableTask) []string {
	var names []string
	for _, u := range unavailable {
		if t, ok := m.Task(u.Name); ok && t.Environment.State() == benchmark.ImagePreparing {
			names = append(names, u.Name)
		}
	}
	slices.Sort(names)
	return names
}

// unavailableWarning says which selected tasks a run will not attempt,
// the ones still preparing their image first (they may be selected again
// once ready).
func unavailableWarning(tasks []run.UnavailableTask, preparing []string) string {
	var others []string
	for _, t := range tasks {
		if !slices.Contains(preparing, t.Name) {
			others = append(others, t.Name)
		}
	}
	var parts []string
	if len(preparing) > 0 {
		parts = append(parts, fmt.Sprintf("%d selected tasks are still preparing their image and get no attempts in this run: %s (the run takes the %s)",
			len(preparing), benchmark.QuoteList(preparing, 20), "tasks whose image is ready; submit again for the others once `gauntlet benchmark info` shows them ready"))
	}
	if len(others) > 0 {
		parts = append(parts, fmt.Sprintf("%d selected tasks are unavailable and get no attempts: %s (see the run's unavailable_tasks for each reason)",
			len(others), benchmark.QuoteList(others, 10)))
	}
	return strings.Join(parts, "; ")
}

// unavailableProblem rejects a selection with no available task.
func unavailableProblem(tasks []run.UnavailableTask, preparing []string) Problem {
	if len(preparing) == len(tasks) {
		return Problem{Code: CodeTasksUnavailable, Field: "tasks",
			Message: fmt.Sprintf("no selected task has its image ready yet: %d still preparing (%s); wait for one (`gauntlet benchmark info` shows each task's image) and submit again",
				len(preparing), benchmark.QuoteList(preparing, 10))}
	}
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
