package leaderboard

import (
	"math"
	"slices"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/stats"
)

// Estimate is a score averaged over tasks, with its 95% confidence interval.
type Estimate struct {
	// Mean is the mean over tasks of the per-task values.
	Mean float64 `json:"mean"`
	// Tasks is how many per-task values the mean is over.
	Tasks int `json:"tasks"`
	// CI is mean ± t(0.975, Tasks−1)·sd/√Tasks clipped to the quantity's
	// range ([0, 1] for pass rates, [0, ∞) for cost, time and tokens); nil
	// when Tasks < 2.
	CI *stats.Interval `json:"ci,omitempty"`
}

// PassAtK is the pass@k estimate for one k.
type PassAtK struct {
	K int `json:"k"`
	Estimate
}

// CategoryScore is the pass@1 of the tasks of one category.
type CategoryScore struct {
	Category string   `json:"category"`
	Pass1    Estimate `json:"pass1"`
}

// Summary is one run agent's scores.
//
// Per task t with n_t scored attempts (passed, failed or errored; cancelled
// attempts are not scored) and c_t passes, pass@1_t = c_t/n_t and pass@k_t is
// the unbiased estimator; every score is the mean over tasks.
//
// Cost, time and tokens per task are likewise means over tasks of a per-task
// value: the mean, over that task's scored attempts that report the quantity,
// of the attempt's cost in USD, its duration in seconds, or its input plus
// output tokens. They are "the expected cost (time, tokens) of one attempt at
// a task", comparable between runs with different attempt counts. A task
// none of whose attempts reports the quantity has no value and is left out of
// that mean (Estimate.Tasks says how many remain).
type Summary struct {
	Entrant Entrant `json:"entrant"`
	Run     Run     `json:"run"`
	// Tasks is the number of distinct tasks with at least one attempt.
	Tasks             int `json:"tasks"`
	ScoredAttempts    int `json:"scored_attempts"`
	CancelledAttempts int `json:"cancelled_attempts"`
	Passes            int `json:"passes"`
	// MinAttempts and MaxAttempts are the smallest and largest n_t over tasks.
	MinAttempts int `json:"min_attempts"`
	MaxAttempts int `json:"max_attempts"`
	// Pass1 is nil when some task has no scored attempt (pass@k is reported
	// only when every task has n_t ≥ k, and that includes k = 1).
	Pass1 *Estimate `json:"pass1,omitempty"`
	// PassAtK is the curve for k = 1..MinAttempts (the deepest k every task
	// reached); PassAtK[k−1] is pass@k and PassAtK[0] equals Pass1.
	PassAtK       []PassAtK       `json:"pass_at_k,omitempty"`
	CostPerTask   *Estimate       `json:"cost_per_task,omitempty"`
	TimePerTask   *Estimate       `json:"time_per_task,omitempty"`
	TokensPerTask *Estimate       `json:"tokens_per_task,omitempty"`
	Categories    []CategoryScore `json:"categories,omitempty"`

	perTask taskValues
}

// taskValues holds the per-task values behind a Summary, tasks sorted by
// name, so that paired tests can align two entrants without maps.
type taskValues struct {
	names []string
	// passK is k-major: pass@k of task t is passK[(k−1)·len(names)+t], for
	// k = 1..depth.
	passK []float64
	depth int
	// cost, time and tokens are NaN for tasks with no reported value.
	cost, time, tokens []float64
}

func (v taskValues) passAt(k int) []float64 {
	t := len(v.names)
	return v.passK[(k-1)*t : k*t]
}

// TaskTally is one task's attempts reduced to what scoring reads of them:
// the sufficient statistic of a Summary. A finished run's tallies are a few
// values per task where its attempts are one per attempt, so keeping them
// lets boards be recomputed without the attempts: SummarizeTallies of an
// entrant's tallies equals Summarize of its attempts.
type TaskTally struct {
	Task string `json:"task"`
	// Scored counts the scored attempts (passed, failed or errored), Passed
	// the passes among them, and All every attempt, cancelled ones included.
	Scored int32 `json:"n"`
	Passed int32 `json:"c,omitempty"`
	All    int32 `json:"all"`
	// Cost, Time and Tokens sum the quantity over the CostReports,
	// TimeReports and TokenReports scored attempts that report it.
	Cost         float64 `json:"cost,omitempty"`
	Time         float64 `json:"time,omitempty"`
	Tokens       float64 `json:"tokens,omitempty"`
	CostReports  int32   `json:"cost_n,omitempty"`
	TimeReports  int32   `json:"time_n,omitempty"`
	TokenReports int32   `json:"tokens_n,omitempty"`
}

func (tt *TaskTally) add(a *Attempt) {
	tt.All++
	switch a.Outcome {
	case Passed:
		tt.Passed++
	case Failed, Errored:
	default:
		return
	}
	tt.Scored++
	if a.HasCost {
		tt.Cost += a.CostUSD
		tt.CostReports++
	}
	if a.HasDuration {
		tt.Time += a.DurationSec
		tt.TimeReports++
	}
	if a.HasTokens {
		tt.Tokens += float64(a.InputTokens + a.OutputTokens)
		tt.TokenReports++
	}
}

// EntrantTallies is one run agent's attempts reduced to per-task tallies,
// tasks sorted by name.
type EntrantTallies struct {
	Entrant Entrant     `json:"entrant"`
	Run     Run         `json:"run"`
	Tasks   []TaskTally `json:"tasks"`
}

// Tally reduces an entrant's attempts to per-task tallies.
func Tally(in EntrantInput) EntrantTallies {
	return EntrantTallies{Entrant: in.Entrant, Run: in.Run, Tasks: tallyByTask(in.Attempts)}
}

// Summarize computes an entrant's scores from its attempts.
func Summarize(in EntrantInput, opts Options) Summary {
	return SummarizeTallies(Tally(in), opts)
}

// SummarizeTallies computes an entrant's scores from its per-task tallies,
// which must be sorted by task name with no task twice (as Tally returns
// them).
func SummarizeTallies(in EntrantTallies, opts Options) Summary {
	tallies := in.Tasks
	s := Summary{Entrant: in.Entrant, Run: in.Run, Tasks: len(tallies)}
	s.MinAttempts = math.MaxInt
	for i := range tallies {
		tt := &tallies[i]
		n := int(tt.Scored)
		s.ScoredAttempts += n
		s.CancelledAttempts += int(tt.All) - n
		s.Passes += int(tt.Passed)
		s.MinAttempts = min(s.MinAttempts, n)
		s.MaxAttempts = max(s.MaxAttempts, n)
	}
	if len(tallies) == 0 {
		s.MinAttempts = 0
	}
	s.perTask = perTaskValues(tallies, s.MinAttempts)
	s.fillEstimates(opts)
	return s
}

// tallyByTask groups attempts by task, tasks sorted by name. Attempts
// already ordered by task take one pass; others are sorted on a copy first.
func tallyByTask(attempts []Attempt) []TaskTally {
	if tallies, ok := tallySorted(attempts); ok {
		return tallies
	}
	sorted := slices.Clone(attempts)
	slices.SortStableFunc(sorted, func(a, b Attempt) int { return strings.Compare(a.Task, b.Task) })
	tallies, _ := tallySorted(sorted)
	return tallies
}

// tallySorted tallies attempts ordered by task; ok is false, and the tallies
// unusable, as soon as a task name goes backwards.
func tallySorted(attempts []Attempt) (tallies []TaskTally, ok bool) {
	tallies = make([]TaskTally, 0, expectedTasks(attempts))
	for i := range attempts {
		a := &attempts[i]
		if n := len(tallies); n == 0 || tallies[n-1].Task != a.Task {
			if n > 0 && a.Task < tallies[n-1].Task {
				return nil, false
			}
			tallies = append(tallies, TaskTally{Task: a.Task})
		}
		tallies[len(tallies)-1].add(a)
	}
	return tallies, true
}

// expectedTasks guesses the number of tasks from how many attempts the first
// task has, which is exact for the usual run with equal attempts per task.
func expectedTasks(attempts []Attempt) int {
	first := 0
	for first < len(attempts) && attempts[first].Task == attempts[0].Task {
		first++
	}
	if first == 0 {
		return 0
	}
	return len(attempts)/first + 1
}

func perTaskValues(tallies []TaskTally, depth int) taskValues {
	t := len(tallies)
	v := taskValues{
		names:  make([]string, t),
		passK:  make([]float64, depth*t),
		depth:  depth,
		cost:   make([]float64, t),
		time:   make([]float64, t),
		tokens: make([]float64, t),
	}
	curves := newCurveCache(depth)
	for i := range tallies {
		tt := &tallies[i]
		v.names[i] = tt.Task
		curve := curves.curve(int(tt.Scored), int(tt.Passed))
		for k := 1; k <= depth; k++ {
			v.passK[(k-1)*t+i] = curve[k-1]
		}
		v.cost[i] = ratio(tt.Cost, tt.CostReports)
		v.time[i] = ratio(tt.Time, tt.TimeReports)
		v.tokens[i] = ratio(tt.Tokens, tt.TokenReports)
	}
	return v
}

func ratio(sum float64, n int32) float64 {
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// curveCache memoizes the pass@k curve (k = 1..depth) of each (n, c), so a
// board of thousands of tasks computes each binomial product once.
type curveCache struct {
	depth int
	byN   [][][]float64
}

func newCurveCache(depth int) *curveCache { return &curveCache{depth: depth} }

func (cc *curveCache) curve(n, c int) []float64 {
	if n >= len(cc.byN) {
		cc.byN = append(cc.byN, make([][][]float64, n+1-len(cc.byN))...)
	}
	if cc.byN[n] == nil {
		cc.byN[n] = make([][]float64, n+1)
	}
	if cc.byN[n][c] == nil {
		curve := make([]float64, cc.depth)
		stats.PassAtKCurve(n, c, curve)
		cc.byN[n][c] = curve
	}
	return cc.byN[n][c]
}

func (s *Summary) fillEstimates(opts Options) {
	v := s.perTask
	if s.MinAttempts >= 1 {
		s.PassAtK = make([]PassAtK, v.depth)
		for k := 1; k <= v.depth; k++ {
			s.PassAtK[k-1] = PassAtK{K: k, Estimate: rateEstimate(v.passAt(k))}
		}
		p1 := s.PassAtK[0].Estimate
		s.Pass1 = &p1
		s.Categories = categoryScores(v, opts.Categories)
	}
	buf := make([]float64, 0, len(v.names))
	s.CostPerTask = usageEstimate(v.cost, buf)
	s.TimePerTask = usageEstimate(v.time, buf)
	s.TokensPerTask = usageEstimate(v.tokens, buf)
}

// rateEstimate is the mean of per-task rates with its CI clipped to [0, 1].
func rateEstimate(values []float64) Estimate {
	mean, ci, ok := stats.MeanCI(values)
	e := Estimate{Mean: mean, Tasks: len(values)}
	if ok {
		clipped := ci.Clip(0, 1)
		e.CI = &clipped
	}
	return e
}

// usageEstimate is the mean of the reported (non-NaN) per-task values with
// its CI clipped to [0, ∞), or nil when no task reports the quantity.
func usageEstimate(values, buf []float64) *Estimate {
	buf = buf[:0]
	for _, x := range values {
		if !math.IsNaN(x) {
			buf = append(buf, x)
		}
	}
	if len(buf) == 0 {
		return nil
	}
	mean, ci, ok := stats.MeanCI(buf)
	e := &Estimate{Mean: mean, Tasks: len(buf)}
	if ok {
		clipped := ci.Clip(0, math.Inf(1))
		e.CI = &clipped
	}
	return e
}

func categoryScores(v taskValues, categories map[string]string) []CategoryScore {
	if len(categories) == 0 {
		return nil
	}
	pass1 := v.passAt(1)
	byCategory := map[string][]float64{}
	for i, name := range v.names {
		if cat, ok := categories[name]; ok {
			byCategory[cat] = append(byCategory[cat], pass1[i])
		}
	}
	scores := make([]CategoryScore, 0, len(byCategory))
	for cat, values := range byCategory {
		scores = append(scores, CategoryScore{Category: cat, Pass1: rateEstimate(values)})
	}
	slices.SortFunc(scores, func(a, b CategoryScore) int { return strings.Compare(a.Category, b.Category) })
	return scores
}
