package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
)

// replacementWarnings says, for each agent of a resolved submission, which
// leaderboard row its run would replace once it finishes and what changes:
// an entrant is scored by its latest eligible run whatever it measured, so
// a smaller parity run replaces a full run's row. Only a run that can be
// eligible (the full task list or a published task set) replaces a row, and
// a row is named only when the task set, the task count, the attempts per
// task or the manifest version change.
func (s *Submitter) replacementWarnings(ctx context.Context, ws, key string, res runconfig.Resolved, m benchmark.Manifest) ([]string, error) {
	full := len(res.Tasks) == availableCount(m)
	if !full && !isParitySet(m, res.TaskSet) {
		return nil, nil
	}
	board, err := s.recs.Boards.Board(ctx, ws, key, leaderboard.MetricPass1)
	if err != nil {
		return nil, fmt.Errorf("leaderboard of %s: %w", key, err)
	}
	taskSet := res.TaskSet
	if full {
		taskSet = ""
	}
	attempts := res.Config.Execution.AttemptsPerTask
	var warnings []string
	for i, a := range res.Config.Agents {
		model := a.ModelLabel()
		if model == "" {
			model = a.Name
		}
		entrant := leaderboard.Entrant{Harness: res.Harnesses[i], Model: model}
		for _, row := range board.Rows {
			if row.Entrant != entrant {
				continue
			}
			if w := replacementWarning(row, len(board.Rows), entrant, taskSet, len(res.Tasks), attempts, res.ManifestVersion); w != "" {
				warnings = append(warnings, w)
			}
		}
	}
	return warnings, nil
}

// replacementWarning describes how a run of taskSet ("" for the full task
// list), tasks × attempts on version replaces row; "" when it measures the
// same.
func replacementWarning(row records.BoardRow, rows int, e leaderboard.Entrant, taskSet string, tasks, attempts int, version string) string {
	var changes []string
	if row.TaskSet != taskSet {
		changes = append(changes, fmt.Sprintf("%s instead of %s", describeTaskSet(taskSet), describeTaskSet(row.TaskSet)))
	}
	if row.Pass1 != nil && row.Pass1.Tasks != tasks {
		changes = append(changes, fmt.Sprintf("%d tasks instead of %d", tasks, row.Pass1.Tasks))
	}
	if row.Attempts > 0 && row.Attempts != attempts {
		changes = append(changes, fmt.Sprintf("%d attempts per task instead of %d", attempts, row.Attempts))
	}
	if row.ManifestVersion != version {
		changes = append(changes, fmt.Sprintf("manifest version %s instead of %s", version, row.ManifestVersion))
	}
	if len(changes) == 0 {
		return ""
	}
	w := fmt.Sprintf("when this run finishes, %s's leaderboard row (run %s) is replaced by it: %s", e, row.RunID, strings.Join(changes, ", "))
	if row.Best && rows > 1 && (row.TaskSet != taskSet || row.ManifestVersion != version) {
		w += "; it is the best row, so the other rows are then tested for a tie with it only if they ran the same task set on the same version"
	}
	return w
}

func describeTaskSet(name string) string {
	if name == "" {
		return "the full task list"
	}
	return fmt.Sprintf("task set %q", name)
}
