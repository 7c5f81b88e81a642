package harbor

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// Files of a Harbor job directory (job.py): the job's config and result
// beside one directory per trial, each holding TrialConfigFile,
// TrialResultFile and the trial's sub-directories.
const (
	JobConfigFile = "config.json"
	JobResultFile = "result.json"
	// Trial sub-directories (TrialPaths): what the agent, the verifier and
	// the artifact collection wrote, and the trial's log.
	TrialAgentDir     = "agent"
	TrialVerifierDir  = "verifier"
	TrialArtifactsDir = "artifacts"
	TrialLogFile      = "trial.log"
)

// ExceptionCancelled is the exception type Harbor records for a cancelled
// trial; JobStats counts those as cancelled.
const ExceptionCancelled = "CancelledError"

// JobConfig is Harbor's JobConfig as a job directory's config.json holds
// it: what ran, in the fields gauntlet has (Harbor's defaults stand for the
// rest).
type JobConfig struct {
	JobName           string       `json:"job_name"`
	NAttempts         int          `json:"n_attempts"`
	TimeoutMultiplier float64      `json:"timeout_multiplier"`
	NConcurrentTrials int          `json:"n_concurrent_trials"`
	Retry             JobRetry     `json:"retry"`
	Agents            []TrialAgent `json:"agents"`
	Datasets          []JobDataset `json:"datasets"`
}

// JobRetry is Harbor's RetryConfig: how often a failed trial is retried.
type JobRetry struct {
	MaxRetries int `json:"max_retries"`
}

// JobDataset is Harbor's DatasetConfig: a registry dataset by name and
// version, or a local directory by path, and the tasks taken from it.
type JobDataset struct {
	Name      string   `json:"name,omitempty"`
	Version   string   `json:"version,omitempty"`
	Path      string   `json:"path,omitempty"`
	TaskNames []string `json:"task_names,omitempty"`
}

// JobResult is Harbor's JobResult as a job directory's result.json holds
// it (Harbor leaves trial_results out of the file).
type JobResult struct {
	ID           string     `json:"id"`
	StartedAt    time.Time  `json:"started_at"`
	UpdatedAt    *time.Time `json:"updated_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	NTotalTrials int        `json:"n_total_trials"`
	Stats        JobStats   `json:"stats"`
}

// JobStats is Harbor's JobStats: trial counts, per-eval statistics and
// token and cost totals.
type JobStats struct {
	NCompletedTrials int                   `json:"n_completed_trials"`
	NErroredTrials   int                   `json:"n_errored_trials"`
	NRunningTrials   int                   `json:"n_running_trials"`
	NPendingTrials   int                   `json:"n_pending_trials"`
	NCancelledTrials int                   `json:"n_cancelled_trials"`
	NRetries         int                   `json:"n_retries"`
	Evals            map[string]*EvalStats `json:"evals"`
	NInputTokens     *int                  `json:"n_input_tokens"`
	NCacheTokens     *int                  `json:"n_cache_tokens"`
	NOutputTokens    *int                  `json:"n_output_tokens"`
	CostUSD          *float64              `json:"cost_usd"`
}

// EvalStats is Harbor's AgentDatasetStats: one agent × model × dataset.
// RewardStats maps a reward key, then a reward value (as Python writes a
// float key), to the trials that got it.
type EvalStats struct {
	NTrials        int                            `json:"n_trials"`
	NErrors        int                            `json:"n_errors"`
	Metrics        []map[string]float64           `json:"metrics"`
	PassAtK        map[int]float64                `json:"pass_at_k"`
	RewardStats    map[string]map[string][]string `json:"reward_stats"`
	ExceptionStats map[string][]string            `json:"exception_stats"`
}

// EvalsKey is Harbor's key of an eval: agent, model (when known) and
// dataset ("adhoc" when the trial names none), joined by "__".
func EvalsKey(t TrialResult) string {
	source := "adhoc"
	if t.Source != nil && *t.Source != "" {
		source = *t.Source
	}
	if m := t.AgentInfo.ModelInfo; m != nil && m.Name != "" {
		return t.AgentInfo.Name + "__" + m.Name + "__" + source
	}
	return t.AgentInfo.Name + "__" + source
}

// NewJobStats computes a job's statistics from its trials' results as
// Harbor's Job does at the end of a run: counts (total trials planned,
// running ones, retries made), per-eval rewards, exceptions, the mean
// metric (Harbor's default) and pass@k, and token and cost totals.
func NewJobStats(trials []TrialResult, total, running, retries int) JobStats {
	s := JobStats{Evals: map[string]*EvalStats{}, NRunningTrials: running, NRetries: retries}
	groups := map[string][]TrialResult{}
	var order []string
	for _, t := range trials {
		s.NCompletedTrials++
		key := EvalsKey(t)
		e := s.Evals[key]
		if e == nil {
			e = &EvalStats{Metrics: []map[string]float64{}, PassAtK: map[int]float64{},
				RewardStats: map[string]map[string][]string{}, ExceptionStats: map[string][]string{}}
			s.Evals[key] = e
			order = append(order, key)
		}
		groups[key] = append(groups[key], t)
		if t.VerifierResult != nil && t.VerifierResult.Rewards != nil {
			e.NTrials++
			for k, v := range t.VerifierResult.Rewards {
				if e.RewardStats[k] == nil {
					e.RewardStats[k] = map[string][]string{}
				}
				e.RewardStats[k][pyFloat(v)] = append(e.RewardStats[k][pyFloat(v)], t.TrialName)
			}
		}
		if x := t.ExceptionInfo; x != nil {
			e.ExceptionStats[x.ExceptionType] = append(e.ExceptionStats[x.ExceptionType], t.TrialName)
			e.NErrors++
			s.NErroredTrials++
			if x.ExceptionType == ExceptionCancelled {
				s.NCancelledTrials++
			}
		}
		if a := t.AgentResult; a != nil {
			s.NInputTokens = addInt(s.NInputTokens, a.NInputTokens)
			s.NCacheTokens = addInt(s.NCacheTokens, a.NCacheTokens)
			s.NOutputTokens = addInt(s.NOutputTokens, a.NOutputTokens)
			if a.CostUSD != nil {
				s.CostUSD = ptrTo(deref(s.CostUSD) + *a.CostUSD)
			}
		}
	}
	s.NPendingTrials = max(total-s.NCompletedTrials-running, 0)
	for _, key := range order {
		s.Evals[key].Metrics = append(s.Evals[key].Metrics, meanMetric(groups[key]))
		s.Evals[key].PassAtK = passAtK(groups[key])
	}
	return s
}

// meanMetric is Harbor's Mean metric: the mean of each reward key over
// every trial, a trial without rewards counting 0; named "mean" when the
// trials have at most one reward key.
func meanMetric(trials []TrialResult) map[string]float64 {
	keys := map[string]bool{}
	for _, t := range trials {
		if t.VerifierResult != nil {
			for k := range t.VerifierResult.Rewards {
				keys[k] = true
			}
		}
	}
	n := float64(len(trials))
	if len(keys) <= 1 {
		sum := 0.0
		for _, t := range trials {
			if t.VerifierResult != nil {
				for _, v := range t.VerifierResult.Rewards {
					sum += v
				}
			}
		}
		return map[string]float64{"mean": sum / n}
	}
	out := map[string]float64{}
	for k := range keys {
		sum := 0.0
		for _, t := range trials {
			if t.VerifierResult != nil {
				sum += t.VerifierResult.Rewards[k]
			}
		}
		out[k] = sum / n
	}
	return out
}

// passAtK is Harbor's pass@k of one eval (utils/pass_at_k.py): only when
// every reward is a single 0 or 1 (a trial without one counts as 0), for k
// = 2, 4, 8, … and 5, 10, 15, … up to the fewest trials of any task.
func passAtK(trials []TrialResult) map[int]float64 {
	type tally struct{ n, c int }
	tasks := map[string]*tally{}
	var order []string
	for _, t := range trials {
		tt := tasks[t.TaskName]
		if tt == nil {
			tt = &tally{}
			tasks[t.TaskName] = tt
			order = append(order, t.TaskName)
		}
		tt.n++
		if t.VerifierResult == nil || t.VerifierResult.Rewards == nil {
			continue
		}
		if len(t.VerifierResult.Rewards) != 1 {
			return map[int]float64{}
		}
		for _, v := range t.VerifierResult.Rewards {
			switch v {
			case 1:
				tt.c++
			case 0:
			default:
				return map[int]float64{}
			}
		}
	}
	out := map[int]float64{}
	if len(tasks) == 0 {
		return out
	}
	fewest := math.MaxInt
	for _, tt := range tasks {
		fewest = min(fewest, tt.n)
	}
	for _, k := range passAtKValues(fewest) {
		sum := 0.0
		for _, name := range order {
			sum += passAtKOfTask(tasks[name].n, tasks[name].c, k)
		}
		out[k] = sum / float64(len(tasks))
	}
	return out
}

func passAtKValues(most int) []int {
	seen := map[int]bool{}
	var ks []int
	for k := 2; k <= most; k *= 2 {
		seen[k] = true
		ks = append(ks, k)
	}
	for k := 5; k <= most; k += 5 {
		if !seen[k] {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks) // as Harbor returns them
	return ks
}

// passAtKOfTask is Chen et al.'s unbiased estimator in Harbor's product form.
func passAtKOfTask(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := range k {
		p *= float64(n-c-i) / float64(n-i)
	}
	return 1 - p
}

// pyFloat writes a reward value as Python's repr of a float, the key
// Harbor's reward_stats has for it ("1.0", "0.5").
func pyFloat(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e16 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func addInt(total, n *int) *int {
	if n == nil {
		return total
	}
	return ptrTo(deref(total) + *n)
}

func ptrTo[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
