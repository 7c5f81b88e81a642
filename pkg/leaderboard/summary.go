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
	// CI is the 95% interval of Mean; nil when Tasks < 2. For pass rates
	// (pass@1, pass@k, pass^k) it is the Wilson score interval with an
	// effective sample size (stats.RateCI), which keeps its width at 0% and
	// 100%; for cost, time and tokens the percentile bootstrap over tasks
	// (stats.BootstrapMeanCI), which follows their heavy right tails, up to
	// BootstrapMaxTasks tasks and the t interval clipped at 0 beyond.
	CI *stats.Interval `json:"ci,omitempty"`
	// Method names how CI was computed: CIWilson, CIBootstrap or CIT;
	// empty without an interval.
	Method string `json:"method,omitempty"`
}

// The interval methods an Estimate names.
const (
	CIWilson    = "wilson"
	CIBootstrap = "bootstrap"
	CIT         = "t"
)

// PassAtK is the pass@k (or pass^k) estimate for one k.
type PassAtK struct {
	K int `json:"k"`
	Estimate
}

// CategoryScore is the pass@1 of the tasks of one category.
type CategoryScore struct {
	Category string   `json:"category"`
	Pass1    Estimate `json:"pass1"`
}

// ErrorCounts says how many of an entrant's attempts each error rule
// touched (docs/SCORING.md, "Errors").
type ErrorCounts struct {
	// AgentErrors counts errored attempts that were the agent's own: scored
	// as failures.
	AgentErrors int `json:"agent_errors"`
	// PlatformErrors counts errored attempts that were the platform's after
	// its retries: left out of the estimate.
	PlatformErrors int `json:"platform_errors"`
	// JudgeFailures counts attempts whose LLM judge failed after the
	// platform's retries: left out of the estimate.
	JudgeFailures int `json:"judge_failures"`
	// UnscoredTasks counts the tasks that had attempts but none scored
	// (every one excluded): they are left out of every estimate.
	UnscoredTasks int `json:"unscored_tasks"`
}

// Variance splits the variance of the entrant's pass/fail outcomes into the
// part due to which tasks were drawn (Between) and the part due to attempt
// to attempt luck on the same task (Within); see stats.VarianceParts.
type Variance struct {
	Between float64 `json:"between"`
	Within  float64 `json:"within"`
}

// Summary is one run agent's scores.
//
// Per task t with n_t scored attempts and c_t passes, pass@1_t = c_t/n_t,
// pass@k_t is Chen et al.'s unbiased estimator and pass^k_t = C(c,k)/C(n,k);
// every score is the mean over tasks. Passed and failed attempts and the
// agent's own errors (as failures) are scored; platform errors and failed
// judges are excluded (n_t shrinks, and a task left with no scored attempt
// is left out and counted in Errors.UnscoredTasks); cancelled attempts
// count nowhere.
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
	// Errors counts the attempts each error rule touched.
	Errors ErrorCounts `json:"errors"`
	// MinAttempts and MaxAttempts are the smallest and largest n_t over the
	// scored tasks.
	MinAttempts int `json:"min_attempts"`
	MaxAttempts int `json:"max_attempts"`
	// Pass1 is nil when no task has a scored attempt.
	Pass1 *Estimate `json:"pass1,omitempty"`
	// PassAtK is the curve for k = 1..MinAttempts (the deepest k every
	// scored task reached); PassAtK[k−1] is pass@k and PassAtK[0] equals
	// Pass1. PassHatK is the pass^k curve over the same k.
	PassAtK  []PassAtK `json:"pass_at_k,omitempty"`
	PassHatK []PassAtK `json:"pass_hat_k,omitempty"`
	// Pass1ErrorsAsFailures is pass@1 with every error — the platform's and
	// failed judges too — scored as a failure (the rule before errors were
	// told apart), over every task with an attempt that was not cancelled.
	Pass1ErrorsAsFailures *Estimate `json:"pass1_errors_as_failures,omitempty"`
	// Variance splits pass@1's variance into between- and within-task
	// parts; nil when some scored task has fewer than two attempts.
	Variance      *Variance       `json:"variance,omitempty"`
	CostPerTask   *Estimate       `json:"cost_per_task,omitempty"`
	TimePerTask   *Estimate       `json:"time_per_task,omitempty"`
	TokensPerTask *Estimate       `json:"tokens_per_task,omitempty"`
	Categories    []CategoryScore `json:"categories,omitempty"`

	perTask taskValues
}

// taskValues holds the per-task values behind a Summary, tasks sorted by
// name, so that paired tests can align two entrants without maps. A task
// is listed when it has an attempt that was not cancelled; its pass values
// are NaN when none was scored.
type taskValues struct {
	names []string
	// passK and passHatK are k-major: pass@k of task t is
	// passK[(k−1)·len(names)+t], for k = 1..depth.
	passK, passHatK []float64
	depth           int
	// attempts is the number of scored attempts behind the pass values,
	// strictAttempts the attempts behind strict.
	attempts, strictAttempts int
	// scored is each task's n_t; strict is pass@1 with every error a
	// failure.
	scored []int
	strict []float64
	// cost, time and tokens are NaN for tasks with no reported value.
	cost, time, tokens []float64
}

func (v taskValues) passAt(k int) []float64 {
	t := len(v.names)
	return v.passK[(k-1)*t : k*t]
}

func (v taskValues) passHatAt(k int) []float64 {
	t := len(v.names)
	return v.passHatK[(k-1)*t : k*t]
}

// TaskTally is one task's attempts reduced to what scoring reads of them:
// the sufficient statistic of a Summary. A finished run's tallies are a few
// values per task where its attempts are one per attempt, so keeping them
// lets boards be recomputed without the attempts: SummarizeTallies of an
// entrant's tallies equals Summarize of its attempts.
type TaskTally struct {
	Task string `json:"task"`
	// Scored counts the scored attempts (passed, failed and the agent's own
	// errors), Passed the passes among them, and All every attempt,
	// cancelled and excluded ones included.
	Scored int32 `json:"n"`
	Passed int32 `json:"c,omitempty"`
	All    int32 `json:"all"`
	// AgentErrors counts the scored attempts that were agent errors;
	// PlatformErrors and JudgeFailures the excluded attempts. Tallies
	// stored before errors were told apart have none: every error was then
	// scored, as an agent error is now.
	AgentErrors    int32 `json:"agent_err,omitempty"`
	PlatformErrors int32 `json:"platform_err,omitempty"`
	JudgeFailures  int32 `json:"judge_failed,omitempty"`
	// Cost, Time and Tokens sum the quantity over the CostReports,
	// TimeReports and TokenReports scored attempts that report it.
	Cost         float64 `json:"cost,omitempty"`
	Time         float64 `json:"time,omitempty"`
	Tokens       float64 `json:"tokens,omitempty"`
	CostReports  int32   `json:"cost_n,omitempty"`
	TimeReports  int32   `json:"time_n,omitempty"`
	TokenReports int32   `json:"tokens_n,omitempty"`
}

// excluded is the task's attempts left out of the estimate.
func (tt *TaskTally) excluded() int32 { return tt.PlatformErrors + tt.JudgeFailures }

func (tt *TaskTally) add(a *Attempt) {
	tt.All++
	switch RuleOf(a.Outcome, a.ErrorClass) {
	case RuleExcluded:
		if a.Outcome == JudgeFailed {
			tt.JudgeFailures++
		} else {
			tt.PlatformErrors++
		}
		return
	case RuleIgnored:
		return
	}
	switch a.Outcome {
	case Passed:
		tt.Passed++
	case Errored:
		tt.AgentErrors++
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
		s.CancelledAttempts += int(tt.All - tt.Scored - tt.excluded())
		s.Passes += int(tt.Passed)
		s.Errors.AgentErrors += int(tt.AgentErrors)
		s.Errors.PlatformErrors += int(tt.PlatformErrors)
		s.Errors.JudgeFailures += int(tt.JudgeFailures)
		if n == 0 {
			if tt.excluded() > 0 {
				s.Errors.UnscoredTasks++
			}
			continue
		}
		s.MinAttempts = min(s.MinAttempts, n)
		s.MaxAttempts = max(s.MaxAttempts, n)
	}
	if s.MinAttempts == math.MaxInt {
		s.MinAttempts = 0
	}
	s.perTask = perTaskValues(tallies, s.MinAttempts)
	s.fillEstimates(tallies, opts)
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
	t := 0
	for i := range tallies {
		if tallies[i].Scored+tallies[i].excluded() > 0 {
			t++
		}
	}
	v := taskValues{
		names:    make([]string, 0, t),
		passK:    make([]float64, depth*t),
		passHatK: make([]float64, depth*t),
		depth:    depth,
		scored:   make([]int, 0, t),
		strict:   make([]float64, 0, t),
		cost:     make([]float64, 0, t),
		time:     make([]float64, 0, t),
		tokens:   make([]float64, 0, t),
	}
	curves := newCurveCache(depth)
	for i := range tallies {
		tt := &tallies[i]
		n, c := int(tt.Scored), int(tt.Passed)
		if n+int(tt.excluded()) == 0 {
			continue
		}
		j := len(v.names)
		v.names = append(v.names, tt.Task)
		if n == 0 {
			for k := 1; k <= depth; k++ {
				v.passK[(k-1)*t+j], v.passHatK[(k-1)*t+j] = math.NaN(), math.NaN()
			}
		} else {
			at, hat := curves.curves(n, c)
			for k := 1; k <= depth; k++ {
				v.passK[(k-1)*t+j], v.passHatK[(k-1)*t+j] = at[k-1], hat[k-1]
			}
		}
		all := n + int(tt.excluded())
		v.attempts += n
		v.strictAttempts += all
		v.scored = append(v.scored, n)
		v.strict = append(v.strict, float64(c)/float64(all))
		v.cost = append(v.cost, ratio(tt.Cost, tt.CostReports))
		v.time = append(v.time, ratio(tt.Time, tt.TimeReports))
		v.tokens = append(v.tokens, ratio(tt.Tokens, tt.TokenReports))
	}
	return v
}

func ratio(sum float64, n int32) float64 {
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// curveCache memoizes the pass@k and pass^k curves (k = 1..depth) of each
// (n, c), so a board of thousands of tasks computes each binomial product
// once.
type curveCache struct {
	depth int
	byN   [][]*curvePair
}

type curvePair struct{ at, hat []float64 }

func newCurveCache(depth int) *curveCache { return &curveCache{depth: depth} }

func (cc *curveCache) curves(n, c int) (at, hat []float64) {
	if n >= len(cc.byN) {
		cc.byN = append(cc.byN, make([][]*curvePair, n+1-len(cc.byN))...)
	}
	if cc.byN[n] == nil {
		cc.byN[n] = make([]*curvePair, n+1)
	}
	if cc.byN[n][c] == nil {
		p := &curvePair{at: make([]float64, cc.depth), hat: make([]float64, cc.depth)}
		stats.PassAtKCurve(n, c, p.at)
		stats.PassHatKCurve(n, c, p.hat)
		cc.byN[n][c] = p
	}
	p := cc.byN[n][c]
	return p.at, p.hat
}

func (s *Summary) fillEstimates(tallies []TaskTally, opts Options) {
	v := s.perTask
	if s.MinAttempts >= 1 {
		s.PassAtK = make([]PassAtK, v.depth)
		s.PassHatK = make([]PassAtK, v.depth)
		buf := make([]float64, 0, len(v.names))
		for k := 1; k <= v.depth; k++ {
			s.PassAtK[k-1] = PassAtK{K: k, Estimate: rateEstimate(v.passAt(k), v.attempts, buf)}
			s.PassHatK[k-1] = PassAtK{K: k, Estimate: rateEstimate(v.passHatAt(k), v.attempts, buf)}
		}
		p1 := s.PassAtK[0].Estimate
		s.Pass1 = &p1
		s.Categories = categoryScores(v, opts.Categories)
		s.Variance = varianceOf(tallies)
	}
	if len(v.strict) > 0 {
		strict := rateEstimate(v.strict, v.strictAttempts, nil)
		s.Pass1ErrorsAsFailures = &strict
	}
	s.CostPerTask, s.TimePerTask, s.TokensPerTask = usageEstimates(v.cost, v.time, v.tokens)
}

// varianceOf splits pass@1's variance over the scored tasks; nil when some
// has fewer than two attempts.
func varianceOf(tallies []TaskTally) *Variance {
	n, c := make([]int, 0, len(tallies)), make([]int, 0, len(tallies))
	for i := range tallies {
		if tallies[i].Scored > 0 {
			n, c = append(n, int(tallies[i].Scored)), append(c, int(tallies[i].Passed))
		}
	}
	between, within, ok := stats.VarianceParts(n, c)
	if !ok {
		return nil
	}
	return &Variance{Between: between, Within: within}
}

// rateEstimate is the mean of the defined (non-NaN) per-task rates with its
// Wilson interval (stats.RateCI) over the attempts behind them. buf is
// scratch space.
func rateEstimate(values []float64, attempts int, buf []float64) Estimate {
	defined := buf[:0]
	for _, x := range values {
		if !math.IsNaN(x) {
			defined = append(defined, x)
		}
	}
	mean, ci, ok := stats.RateCI(defined, attempts)
	e := Estimate{Mean: mean, Tasks: len(defined)}
	if ok {
		e.CI, e.Method = &ci, CIWilson
	}
	return e
}

// BootstrapMaxTasks is the most tasks whose cost, time and tokens get a
// bootstrap interval. A bootstrap costs resamples × tasks draws per
// estimate; past this many tasks the mean's sampling distribution is close
// enough to normal even for heavy-tailed per-task values that the t
// interval (clipped at 0) serves, at a thousandth of the cost.
const BootstrapMaxTasks = 100

// usageEstimates are the cost, time and tokens estimates: each the mean of
// the reported (non-NaN) per-task values with its interval — the percentile
// bootstrap over tasks up to BootstrapMaxTasks tasks, the t interval clipped
// to [0, ∞) beyond — or nil when no task reports the quantity. Quantities
// reported by the same number of tasks are bootstrapped together
// (stats.BootstrapMeanCIs: the same intervals, one draw of indices).
func usageEstimates(costs, times, tokenCounts []float64) (cost, time, tokens *Estimate) {
	quantities := [][]float64{costs, times, tokenCounts}
	out := make([]*Estimate, len(quantities))
	reported := make([][]float64, len(quantities))
	byLen := map[int][]int{}
	for q, values := range quantities {
		reported[q] = make([]float64, 0, len(values))
		for _, x := range values {
			if !math.IsNaN(x) {
				reported[q] = append(reported[q], x)
			}
		}
		n := len(reported[q])
		if n == 0 {
			continue
		}
		e := &Estimate{Mean: stats.Mean(reported[q]), Tasks: n}
		out[q] = e
		if n > BootstrapMaxTasks {
			_, ci, _ := stats.MeanCI(reported[q])
			clipped := ci.Clip(0, math.Inf(1))
			e.CI, e.Method = &clipped, CIT
			continue
		}
		byLen[n] = append(byLen[n], q)
	}
	for _, qs := range byLen {
		samples := make([][]float64, len(qs))
		for i, q := range qs {
			samples[i] = reported[q]
		}
		cis, ok := stats.BootstrapMeanCIs(samples...)
		if !ok {
			continue
		}
		for i, q := range qs {
			out[q].CI, out[q].Method = &cis[i], CIBootstrap
		}
	}
	return out[0], out[1], out[2]
}

func categoryScores(v taskValues, categories map[string]string) []CategoryScore {
	if len(categories) == 0 {
		return nil
	}
	pass1 := v.passAt(1)
	byCategory := map[string][]float64{}
	attempts := map[string]int{}
	for i, name := range v.names {
		if cat, ok := categories[name]; ok && !math.IsNaN(pass1[i]) {
			byCategory[cat] = append(byCategory[cat], pass1[i])
			attempts[cat] += v.scored[i]
		}
	}
	scores := make([]CategoryScore, 0, len(byCategory))
	for cat, values := range byCategory {
		scores = append(scores, CategoryScore{Category: cat, Pass1: rateEstimate(values, attempts[cat], nil)})
	}
	slices.SortFunc(scores, func(a, b CategoryScore) int { return strings.Compare(a.Category, b.Category) })
	return scores
}
