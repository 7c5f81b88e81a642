// Package stats owns the statistics gauntlet scores agents with: the unbiased
// pass@k estimator, means with Student's t confidence intervals, the two-sided
// paired t-test used to decide statistical ties, and competition ranks.
//
// Every function is pure and allocation-light so that a full leaderboard
// recompute can call them thousands of times. The t distribution comes from
// gonum (gonum.org/v1/gonum/stat/distuv); nothing here hand-rolls a special
// function.
package stats
