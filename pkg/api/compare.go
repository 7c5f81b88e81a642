package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/wire/v1"
)

// compare answers GET /v1/compare?a=RUN[/AGENT]&b=RUN[/AGENT]: two finished
// run agents of one benchmark contrasted on their common tasks.
func (h *boardsAPI) compare(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q := r.URL.Query()
	a, err := h.compareSide(ctx, "a", q.Get("a"))
	if err != nil {
		return err
	}
	b, err := h.compareSide(ctx, "b", q.Get("b"))
	if err != nil {
		return err
	}
	if a.run.Benchmark != b.run.Benchmark {
		return errorf(http.StatusBadRequest, v1.CodeBadRequest, "b: run %s is of benchmark %s, a's run %s of %s: only entrants of one benchmark are compared",
			b.run.ID, b.run.Benchmark, a.run.ID, a.run.Benchmark)
	}
	cats, err := h.taskCategories(ctx, a.run)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, compareView(leaderboard.Compare(a.summary, b.summary, cats), a, b))
}

// compareEntrant is one side of a comparison as loaded.
type compareEntrant struct {
	run     run.Run
	agent   run.Agent
	summary leaderboard.Summary
	// selfReported: some of the agent's usage is its own report.
	selfReported bool
}

// compareSide resolves the reference ref ("RUN" when the run has one agent,
// else "RUN/AGENT" with the agent's index) given as query parameter param,
// and summarizes the agent from its run's stored per-task tallies.
func (h *boardsAPI) compareSide(ctx context.Context, param, ref string) (compareEntrant, error) {
	bad := func(format string, args ...any) (compareEntrant, error) {
		return compareEntrant{}, errorf(http.StatusBadRequest, v1.CodeBadRequest, param+": "+format, args...)
	}
	if ref == "" {
		return bad("required: RUN or RUN/AGENT (a run id and, when it has several agents, the agent's index)")
	}
	id, index, hasIndex := strings.Cut(ref, "/")
	r, err := h.scope.ownRun(ctx, id)
	if err != nil {
		return compareEntrant{}, err
	}
	agents, err := h.recs.Agents(ctx, r.ID)
	if err != nil {
		return compareEntrant{}, fmt.Errorf("load agents of run %s: %w", r.ID, err)
	}
	i := 0
	switch {
	case hasIndex:
		if i, err = strconv.Atoi(index); err != nil || i < 0 || i >= len(agents) {
			return bad("agent %q of run %s: want an index from 0 to %d", index, r.ID, len(agents)-1)
		}
	case len(agents) != 1:
		labels := make([]string, len(agents))
		for j, ag := range agents {
			labels[j] = fmt.Sprintf("%s/%d (%s)", r.ID, j, leaderboard.Entrant{Harness: ag.Harness, Model: ag.RankedModel()})
		}
		return bad("run %s has %d agents: name one as %s", r.ID, len(agents), strings.Join(labels, ", "))
	}
	if r.Status != run.Finished {
		return bad("run %s is %s: only a finished run's agents are compared", r.ID, r.Status)
	}
	tallies, ok, err := h.recs.RunTallies(ctx, r.ID)
	if errors.Is(err, records.ErrNotFound) || (err == nil && !ok) {
		return compareEntrant{}, errorf(http.StatusConflict, v1.CodeConflict, "%s: run %s has no per-task scores yet (they are stored once its metrics are recomputed after it finished); try again shortly", param, r.ID)
	}
	if err != nil {
		return compareEntrant{}, fmt.Errorf("load task tallies of run %s: %w", r.ID, err)
	}
	ag := agents[i]
	in := leaderboard.EntrantTallies{
		Entrant: leaderboard.Entrant{Harness: ag.Harness, Model: ag.RankedModel()},
		Run:     leaderboard.Run{ID: r.ID, FinishedAt: r.EndedAt, TaskSet: r.TaskSet, ManifestVersion: r.ManifestVersion, ManifestDigest: r.ManifestDigest},
		Tasks:   tallies[ag.Index],
	}
	at, err := h.recs.AgentTally(ctx, r.ID, ag.Index)
	if err != nil {
		return compareEntrant{}, fmt.Errorf("load tally of run %s agent %d: %w", r.ID, ag.Index, err)
	}
	return compareEntrant{run: r, agent: ag, summary: leaderboard.SummarizeTallies(in, leaderboard.Options{}),
		selfReported: at.UsageSelfReported > 0}, nil
}

// taskCategories maps the run's tasks to their categories in its manifest.
func (h *boardsAPI) taskCategories(ctx context.Context, r run.Run) (map[string]string, error) {
	m, _, err := h.recs.Manifest(ctx, r.ManifestWorkspace, r.Benchmark, r.ManifestVersion)
	if err != nil {
		return nil, fmt.Errorf("load manifest %s@%s: %w", r.Benchmark, r.ManifestVersion, err)
	}
	cats := map[string]string{}
	for _, t := range m.Tasks {
		if t.Category != "" {
			cats[t.Name] = t.Category
		}
	}
	return cats, nil
}

func compareView(c leaderboard.Contrast, a, b compareEntrant) v1.CompareView {
	out := v1.CompareView{A: compareEntrantView(a), B: compareEntrantView(b), SameMeasurement: c.SameMeasurement,
		Tasks: c.Tasks, OnlyA: c.OnlyA, OnlyB: c.OnlyB, Pass1: differenceView(c.Pass1),
		Cost: differencePtr(c.Cost), Time: differencePtr(c.Time), Tokens: differencePtr(c.Tokens),
		Categories:  make([]v1.CategoryDifference, len(c.Categories)),
		Regressions: taskChanges(c.Regressions), Improvements: taskChanges(c.Improvements)}
	for i, cd := range c.Categories {
		out.Categories[i] = v1.CategoryDifference{Category: cd.Category, Pass1: differenceView(cd.Pass1)}
	}
	return out
}

func compareEntrantView(e compareEntrant) v1.CompareEntrant {
	s := e.summary
	return v1.CompareEntrant{RunID: e.run.ID, Agent: e.agent.Index, Label: s.Entrant.String(), Harness: s.Entrant.Harness,
		Model: s.Entrant.Model, ManifestVersion: e.run.ManifestVersion, Pass1: estimatePtr(s.Pass1),
		CostPerTask: estimatePtr(s.CostPerTask), UsageSelfReported: e.selfReported, TimePerTask: estimatePtr(s.TimePerTask)}
}

func differenceView(d leaderboard.Difference) v1.Difference {
	out := v1.Difference{Tasks: d.Tasks, Diff: d.Diff, PValue: d.P}
	if d.CI != nil {
		lo, hi := d.CI.Lo, d.CI.Hi
		out.CILow, out.CIHigh = &lo, &hi
	}
	return out
}

func differencePtr(d *leaderboard.Difference) *v1.Difference {
	if d == nil {
		return nil
	}
	v := differenceView(*d)
	return &v
}

func taskChanges(ts []leaderboard.TaskContrast) []v1.TaskChange {
	out := make([]v1.TaskChange, len(ts))
	for i, t := range ts {
		out[i] = v1.TaskChange{Task: t.Task, A: t.A, B: t.B}
	}
	return out
}
