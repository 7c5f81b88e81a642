package pipelinetest

import "fmt"

// ParityTasks is the number of tasks in demo-bench's parity task set.
const ParityTasks = 8

// OracleNopConfig returns a run config (TOML) of the oracle and nop agents on
// demo-bench's parity task set, attemptsPerTask attempts of every task, at
// most maxConcurrent at once and no retries: the oracle passes every attempt
// and nop fails every one, so every run of it has 2 × ParityTasks ×
// attemptsPerTask attempts and a known leaderboard.
func OracleNopConfig(attemptsPerTask, maxConcurrent int) string {
	return fmt.Sprintf(`
[experiment]
benchmark = "demo-bench"

[tasks]
task_set = "parity"

[execution]
attempts_per_task = %d
max_concurrent_attempts = %d
max_retries = 0

[[agents]]
harness = "oracle"

[[agents]]
harness = "nop"
`, attemptsPerTask, maxConcurrent)
}
