package v1

import "time"

// LeaderboardView is the answer of GET /v1/benchmarks/{key}/leaderboard:
// every eligible entrant in one list, each scored by its latest eligible
// run. Task set and manifest version enter only the tie test.
type LeaderboardView struct {
	Benchmark string `json:"benchmark"`
	Metric    string `json:"metric"`
	// K is the pass@k depth every row reached.
	K    int        `json:"k"`
	Rows []BoardRow `json:"rows"`
	// MinDetectableDiff is the median, over the rows tested against the
	// best, of the smallest difference from the best their paired test
	// detects with 80% power at α = 0.05 (null when none was tested).
	MinDetectableDiff *float64 `json:"min_detectable_diff"`
}

// BoardRow is one entrant's place.
type BoardRow struct {
	Rank int `json:"rank"`
	// Rank is 0 for a row without a value for the metric (shown "–").
	// Tied marks a row that shares rank 1 only because the paired t-test
	// cannot separate it from the best; only rows of the best's task set
	// and manifest version are tested.
	Tied    bool   `json:"tied"`
	Best    bool   `json:"best"`
	Label   string `json:"label"`
	Harness string `json:"harness"`
	Model   string `json:"model"`
	// TaskSet ("" for the full task list), ManifestVersion and
	// ManifestDigest name the measurement the row's run made.
	TaskSet         string        `json:"task_set"`
	ManifestVersion string        `json:"manifest_version"`
	ManifestDigest  string        `json:"manifest_digest"`
	Value           *float64      `json:"value"`
	Pass1           *Estimate     `json:"pass1"`
	PassAtK         *PassAtKPoint `json:"pass_at_k"`
	// PassHatK is pass^K: the chance that all K attempts pass.
	PassHatK *PassAtKPoint `json:"pass_hat_k"`
	// Pass1ErrorsAsFailures is pass@1 with every error (the platform's and
	// failed judges too) scored as a failure.
	Pass1ErrorsAsFailures *Estimate `json:"pass1_errors_as_failures"`
	// Errors says how many attempts each error rule touched.
	Errors ErrorCounts `json:"errors"`
	// Variance splits pass@1's variance (null with one attempt per task).
	Variance *Variance `json:"variance"`
	// CostPerTask (USD), TimePerTask (seconds), TokensPerTask.
	CostPerTask *Estimate `json:"cost_per_task"`
	// CostEstimated is true when some of the row's cost was computed from
	// the platform's dated price table rather than reported by a provider.
	CostEstimated bool `json:"cost_estimated"`
	// UsageSelfReported is true when some of the tokens and cost are an
	// agent's own report (a command agent's usage.json), not metered by
	// the model gateway.
	UsageSelfReported bool      `json:"usage_self_reported"`
	TimePerTask       *Estimate `json:"time_per_task"`
	TokensPerTask     *Estimate `json:"tokens_per_task"`
	RunID             string    `json:"run_id"`
	FinishedAt        time.Time `json:"finished_at"`
	// VsBest compares the row with the best row (null for the best row and
	// for rows of another measurement than the best's).
	VsBest *Comparison `json:"vs_best"`
}

// Comparison is a row's paired difference from the best row: its mean over
// shared tasks, the 95% interval and the two-sided p-value (null when
// fewer than two tasks pair up).
type Comparison struct {
	Tasks  int      `json:"tasks"`
	Tested bool     `json:"tested"`
	Diff   float64  `json:"diff"`
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
	PValue *float64 `json:"p_value"`
	// AdjustedP is PValue adjusted by Holm's step-down procedure over every
	// tested comparison with the best on the board: the row is tied with
	// the best when it is ≥ 0.05.
	AdjustedP *float64 `json:"adjusted_p"`
}
