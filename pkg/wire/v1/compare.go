package v1

// CompareView is the answer of GET /v1/compare: two entrants of a
// benchmark contrasted on the tasks both scored. A is the baseline, B the
// candidate; every difference is B − A, paired over tasks (95% interval and
// two-sided p of a paired t-test, null with fewer than two tasks).
type CompareView struct {
	A CompareEntrant `json:"a"`
	B CompareEntrant `json:"b"`
	// SameMeasurement is false when the two ran different manifest versions.
	SameMeasurement bool `json:"same_measurement"`
	// Tasks counts the tasks both scored; OnlyA and OnlyB those one scored.
	Tasks  int         `json:"tasks"`
	OnlyA  int         `json:"only_a"`
	OnlyB  int         `json:"only_b"`
	Pass1  Difference  `json:"pass1"`
	Cost   *Difference `json:"cost"`
	Time   *Difference `json:"time"`
	Tokens *Difference `json:"tokens"`
	// Categories is the pass@1 difference within each category.
	Categories []CategoryDifference `json:"categories"`
	// Regressions are the common tasks A solves and B does not;
	// Improvements the reverse (solved: pass@1 ≥ 0.5 on the task).
	Regressions  []TaskChange `json:"regressions"`
	Improvements []TaskChange `json:"improvements"`
}

// CompareEntrant is one side of a comparison: a run's agent and its scores.
type CompareEntrant struct {
	RunID           string    `json:"run_id"`
	Agent           int       `json:"agent"`
	Label           string    `json:"label"`
	Harness         string    `json:"harness"`
	Model           string    `json:"model"`
	ManifestVersion string    `json:"manifest_version"`
	Pass1           *Estimate `json:"pass1"`
	CostPerTask     *Estimate `json:"cost_per_task"`
	// UsageSelfReported is true when some of the agent's tokens and cost
	// are its own report (usage.json), not metered by the model gateway.
	UsageSelfReported bool      `json:"usage_self_reported"`
	TimePerTask       *Estimate `json:"time_per_task"`
}

// Difference is a paired difference B − A over tasks.
type Difference struct {
	Tasks  int      `json:"tasks"`
	Diff   float64  `json:"diff"`
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
	PValue *float64 `json:"p_value"`
}

// CategoryDifference is the pass@1 difference within one category.
type CategoryDifference struct {
	Category string     `json:"category"`
	Pass1    Difference `json:"pass1"`
}

// TaskChange is one task's pass@1 under A and under B.
type TaskChange struct {
	Task string  `json:"task"`
	A    float64 `json:"a"`
	B    float64 `json:"b"`
}
