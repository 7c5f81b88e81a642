package stats

// PassAtK returns Chen et al.'s unbiased estimate of pass@k for a task with n
// scored attempts of which c passed: 1 − C(n−c, k)/C(n, k), computed in the
// numerically stable product form 1 − ∏_{i=n−c+1..n} (1 − k/i).
//
// ok is false, and the estimate must not be reported, when it is undefined:
// k < 1, n < k, or c outside [0, n]. In particular a task with fewer than k
// attempts never reports 1.0. c = 0 gives 0; n − c < k gives exactly 1.
func PassAtK(n, c, k int) (float64, bool) {
	if k < 1 || n < k || c < 0 || c > n {
		return 0, false
	}
	if c == 0 {
		return 0, true
	}
	if n-c < k {
		return 1, true
	}
	prod := 1.0
	kf := float64(k)
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - kf/float64(i)
	}
	return 1 - prod, true
}

// PassAtKCurve writes PassAtK(n, c, k) for k = 1..len(dst) into dst[k−1] and
// returns how many leading entries are defined (min(n, len(dst)), or 0 when c is
// outside [0, n]). Entries past that count are left untouched. The k = 1 entry
// is exactly c/n, the per-task pass@1.
func PassAtKCurve(n, c int, dst []float64) int {
	if c < 0 || c > n {
		return 0
	}
	defined := min(n, len(dst))
	for k := 1; k <= defined; k++ {
		dst[k-1], _ = PassAtK(n, c, k)
	}
	if defined > 0 {
		dst[0] = float64(c) / float64(n)
	}
	return defined
}

// PassHatK returns the unbiased estimate of pass^k — the probability that k
// attempts drawn without replacement from a task's n scored attempts all
// pass (τ-bench's reliability metric) — for a task with c passes:
// C(c, k)/C(n, k), computed as the product ∏_{i=0..k−1} (c−i)/(n−i).
//
// ok is false, and the estimate must not be reported, when it is undefined:
// k < 1, n < k, or c outside [0, n]. c < k gives exactly 0 and c = n exactly 1.
func PassHatK(n, c, k int) (float64, bool) {
	if k < 1 || n < k || c < 0 || c > n {
		return 0, false
	}
	if c < k {
		return 0, true
	}
	if c == n {
		return 1, true
	}
	prod := 1.0
	for i := range k {
		prod *= float64(c-i) / float64(n-i)
	}
	return prod, true
}

// PassHatKCurve writes PassHatK(n, c, k) for k = 1..len(dst) into dst[k−1]
// and returns how many leading entries are defined, as PassAtKCurve does.
// The k = 1 entry is exactly c/n.
func PassHatKCurve(n, c int, dst []float64) int {
	if c < 0 || c > n {
		return 0
	}
	defined := min(n, len(dst))
	for k := 1; k <= defined; k++ {
		dst[k-1], _ = PassHatK(n, c, k)
	}
	return defined
}
