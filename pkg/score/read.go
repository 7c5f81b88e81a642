// Package score computes a leaderboard offline, without any platform, from
// attempt results a user already has: JSONL files of attempts and Harbor job
// directories of trial result.json files. It reads them into
// leaderboard.EntrantInput values and renders the resulting board as a text
// table or as JSON.
package score

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
)

// DefaultThreshold is the pass threshold applied to rewards when none is
// given: a reward passes when it is ≥ the threshold.
const DefaultThreshold = 1.0

// OfflineRunID is the run id given to every entrant read from files.
const OfflineRunID = "offline"

// StdinPath is the path that names standard input: Read reads it as JSONL,
// under the name "stdin" in messages.
const StdinPath = "-"

// Read loads attempts from every path: a regular file is read as JSONL
// (ReadJSONL), a directory as a Harbor job directory (ReadJobDir), and
// StdinPath ("-") reads stdin as JSONL, with the same bounds as a file; it
// may be given once. Attempts are grouped into one entrant input per
// (harness, model, task set, version). Offline input is the user's own
// data, so every entrant counts as eligible: a finished run, on the full
// task list when no task set is named and on the named task set otherwise.
func Read(paths []string, stdin io.Reader, threshold float64) ([]leaderboard.EntrantInput, error) {
	if math.IsNaN(threshold) || math.IsInf(threshold, 0) {
		return nil, fmt.Errorf("threshold: must be a finite number, got %v", threshold)
	}
	if len(paths) == 0 {
		return nil, errors.New("no input paths")
	}
	if n := slices.Index(paths, StdinPath); n >= 0 && slices.Contains(paths[n+1:], StdinPath) {
		return nil, fmt.Errorf("%q (stdin) is given twice; it can be read only once", StdinPath)
	}
	c := newCollector()
	for _, p := range paths {
		if p == StdinPath {
			if stdin == nil {
				return nil, fmt.Errorf("%q names stdin, but there is none to read", StdinPath)
			}
			if err := readJSONL(stdin, "stdin", threshold, c); err != nil {
				return nil, err
			}
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("read attempts: %w", err)
		}
		if info.IsDir() {
			err = readJobDir(p, threshold, c)
		} else {
			err = readJSONLFile(p, threshold, c)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(c.order) == 0 {
		names := slices.Clone(paths)
		if i := slices.Index(names, StdinPath); i >= 0 {
			names[i] = "stdin"
		}
		return nil, fmt.Errorf("no attempts found in %s", strings.Join(names, ", "))
	}
	return c.inputs(), nil
}

// record is one attempt as read, before grouping.
type record struct {
	entrant leaderboard.Entrant
	taskSet string
	version string
	attempt leaderboard.Attempt
	// identity distinguishes the attempt within its entrant for duplicate
	// detection (the attempt number, or the Harbor trial name).
	identity string
	// where is "file:line" or the result.json path, for messages.
	where string
}

type entrantKey struct {
	entrant          leaderboard.Entrant
	taskSet, version string
}

// collector groups records by entrant and rejects duplicates.
type collector struct {
	order    []entrantKey
	attempts map[entrantKey][]leaderboard.Attempt
	seen     map[string]string // entrant key + task + identity → where
}

func newCollector() *collector {
	return &collector{attempts: map[entrantKey][]leaderboard.Attempt{}, seen: map[string]string{}}
}

// add records r, or returns the location of an earlier record with the same
// entrant, task set, version, task and identity.
func (c *collector) add(r record) (duplicateOf string, ok bool) {
	key := entrantKey{entrant: r.entrant, taskSet: r.taskSet, version: r.version}
	id := strings.Join([]string{r.entrant.Harness, r.entrant.Model, r.taskSet, r.version, r.attempt.Task, r.identity}, "\x00")
	if where, dup := c.seen[id]; dup {
		return where, false
	}
	c.seen[id] = r.where
	if _, known := c.attempts[key]; !known {
		c.order = append(c.order, key)
	}
	c.attempts[key] = append(c.attempts[key], r.attempt)
	return "", true
}

func (c *collector) inputs() []leaderboard.EntrantInput {
	keys := slices.Clone(c.order)
	slices.SortFunc(keys, func(a, b entrantKey) int {
		return cmp.Or(strings.Compare(a.taskSet, b.taskSet), strings.Compare(a.version, b.version),
			strings.Compare(a.entrant.String(), b.entrant.String()))
	})
	inputs := make([]leaderboard.EntrantInput, len(keys))
	for i, k := range keys {
		coverage := leaderboard.CoverageFull
		if k.taskSet != "" {
			coverage = leaderboard.CoverageParity
		}
		inputs[i] = leaderboard.EntrantInput{
			Entrant: k.entrant,
			Run: leaderboard.Run{ID: OfflineRunID, TaskSet: k.taskSet, ManifestVersion: k.version,
				Finished: true, AgentFinished: true, Coverage: coverage, AllSlotsReported: true},
			Attempts: c.attempts[k],
		}
	}
	return inputs
}

// outcomeOf applies the pass threshold to a reward.
func outcomeOf(reward, threshold float64) leaderboard.Outcome {
	if reward >= threshold {
		return leaderboard.Passed
	}
	return leaderboard.Failed
}
