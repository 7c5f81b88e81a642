package leaderboard

import "slices"

// Eligible reports whether a run agent may appear on the leaderboard, and if
// not, why. Per DESIGN.md a run agent is eligible when the run finished, the
// agent finished, the run covered the full task list or a published parity
// set, every slot produced a result, and pass@1 exists.
func Eligible(s Summary) (ok bool, reason string) {
	switch {
	case !s.Run.Finished:
		return false, "run not finished"
	case !s.Run.AgentFinished:
		return false, "agent not finished"
	case s.Run.Coverage != CoverageFull && s.Run.Coverage != CoverageParity:
		return false, "run covered neither the full task list nor a published task set"
	case !s.Run.AllSlotsReported:
		return false, "not every slot produced a result"
	case s.Pass1 == nil:
		return false, "no pass@1: no task has a scored attempt"
	}
	return true, ""
}

// boardKey identifies the entrants that are ever tested against each other:
// the same task set of the same resolved manifest version.
type boardKey struct {
	taskSet, version, digest string
}

func keyOf(r Run) boardKey {
	return boardKey{taskSet: r.TaskSet, version: r.ManifestVersion, digest: r.ManifestDigest}
}

// LatestEligible keeps, for every entrant (harness + model), the eligible
// summary of its latest run — the greatest Run.FinishedAt, then the greatest
// Run.ID on equal times — whatever its task set or version: a later parity
// run replaces a full run and vice versa. Ineligible summaries are dropped.
// The result keeps the input order.
func LatestEligible(summaries []Summary) []Summary {
	idx := LatestEligibleIndices(summaries)
	kept := make([]Summary, len(idx))
	for i, j := range idx {
		kept[i] = summaries[j]
	}
	return kept
}

// LatestEligibleIndices is LatestEligible as indices into summaries, in
// increasing order.
func LatestEligibleIndices(summaries []Summary) []int {
	latest := map[Entrant]int{}
	for i := range summaries {
		s := &summaries[i]
		if ok, _ := Eligible(*s); !ok {
			continue
		}
		if j, seen := latest[s.Entrant]; !seen || later(s.Run, summaries[j].Run) {
			latest[s.Entrant] = i
		}
	}
	kept := make([]int, 0, len(latest))
	for _, i := range latest {
		kept = append(kept, i)
	}
	slices.Sort(kept)
	return kept
}

func later(a, b Run) bool {
	if !a.FinishedAt.Equal(b.FinishedAt) {
		return a.FinishedAt.After(b.FinishedAt)
	}
	return a.ID > b.ID
}
