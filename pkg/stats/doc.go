// Package stats owns the statistics gauntlet scores agents with: the unbiased
// pass@k and pass^k estimators, means with their confidence intervals
// (Student's t, Wilson with an effective sample size for pass rates, a
// seeded percentile bootstrap for heavy-tailed quantities), the two-sided
// paired t-test used to decide statistical ties with Holm's step-down
// correction across them, the between-/within-task split of variance, and
// competition ranks.
//
// Every function is pure and deterministic (the bootstrap is seeded) so that
// a board recomputed from the same data is the same board. The t and normal
// distributions come from gonum (gonum.org/v1/gonum/stat/distuv); nothing
// here hand-rolls a special function. testdata/reference.py computes the
// tests' expected values independently.
package stats
