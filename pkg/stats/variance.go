package stats

// VarianceParts splits the variance of pass/fail attempts over tasks into
// its between-task and within-task parts (Miller 2024, "Adding Error Bars
// to Evals", §4), from each task's scored attempts n[t] and passes c[t]:
//
//	within  = mean over tasks of c(n − c) / (n(n − 1)),  the unbiased
//	          attempt-to-attempt variance of a task's outcome;
//	between = s²(c/n) − mean over tasks of within_t / n_t,  the variance of
//	          the tasks' true pass rates (s² with ddof = 1), floored at 0.
//
// within says how much re-running the same tasks would move a score;
// between how much a different sample of tasks would. ok is false when
// fewer than two tasks are given or some task has fewer than two attempts
// (no within-task variance can be estimated).
func VarianceParts(n, c []int) (between, within float64, ok bool) {
	if len(n) < 2 || len(n) != len(c) {
		return 0, 0, false
	}
	rates := make([]float64, len(n))
	withinOverN := 0.0
	for t := range n {
		if n[t] < 2 || c[t] < 0 || c[t] > n[t] {
			return 0, 0, false
		}
		nt, ct := float64(n[t]), float64(c[t])
		w := ct * (nt - ct) / (nt * (nt - 1))
		within += w
		withinOverN += w / nt
		rates[t] = ct / nt
	}
	tasks := float64(len(n))
	within /= tasks
	sd := StdDev(rates, Mean(rates))
	between = max(0, sd*sd-withinOverN/tasks)
	return between, within, true
}
