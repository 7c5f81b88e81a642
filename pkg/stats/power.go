package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// DefaultPower is the probability of detecting a real difference that
// PairedSampleSize plans for.
const DefaultPower = 0.80

// SampleSizePlan is how many paired observations a two-sided paired test of
// two agents' pass rates needs, and the assumptions the number rests on.
type SampleSizePlan struct {
	// PassA and PassB are the pass rates planned for.
	PassA float64 `json:"pass_a"`
	PassB float64 `json:"pass_b"`
	// Alpha is the two-sided significance level, Power the target power.
	Alpha float64 `json:"alpha"`
	Power float64 `json:"power"`
	// Discordant is ψ, the planned probability that exactly one agent passes
	// a pair: pA(1−pB) + pB(1−pA) when outcomes are independent given the
	// rates.
	Discordant float64 `json:"discordant"`
	// Pairs is the number of paired observations (task × attempt) needed.
	Pairs int `json:"pairs"`
	// Attempts is the attempts per task planned for, Tasks = ⌈Pairs/Attempts⌉.
	Attempts int `json:"attempts"`
	Tasks    int `json:"tasks"`
	// Assumptions states, in words, what the number assumes.
	Assumptions []string `json:"assumptions"`
}

// PairedSampleSize returns the paired observations McNemar's test needs to
// separate pass rates passA and passB with the given power at two-sided
// level alpha, by Connor's (1987) closed form
//
//	n = (z₁₋α/₂·√ψ + z_power·√(ψ − δ²))² / δ²,  δ = pA − pB,
//
// with ψ taken from independent outcomes. attempts ≥ 1 spreads the pairs over
// tasks; that treats attempts of one task as independent, which understates
// the tasks needed when agents pass or fail a task consistently.
func PairedSampleSize(passA, passB, alpha, power float64, attempts int) (SampleSizePlan, error) {
	switch {
	case !(passA >= 0 && passA <= 1):
		return SampleSizePlan{}, fmt.Errorf("pass rate A %v: must be between 0 and 1", passA)
	case !(passB >= 0 && passB <= 1):
		return SampleSizePlan{}, fmt.Errorf("pass rate B %v: must be between 0 and 1", passB)
	case passA == passB:
		return SampleSizePlan{}, fmt.Errorf("pass rates A and B are both %v: no difference to detect", passA)
	case !(alpha > 0 && alpha < 1):
		return SampleSizePlan{}, fmt.Errorf("alpha %v: must be strictly between 0 and 1", alpha)
	case !(power > 0 && power < 1):
		return SampleSizePlan{}, fmt.Errorf("power %v: must be strictly between 0 and 1", power)
	case attempts < 1:
		return SampleSizePlan{}, fmt.Errorf("attempts %d: must be at least 1", attempts)
	}
	delta := passA - passB
	psi := passA*(1-passB) + passB*(1-passA)
	normal := distuv.UnitNormal
	za := normal.Quantile(1 - alpha/2)
	zb := normal.Quantile(power)
	root := za*math.Sqrt(psi) + zb*math.Sqrt(math.Max(0, psi-delta*delta))
	// The tiny tolerance keeps an exact integer result from rounding up on
	// floating-point noise.
	pairs := int(math.Ceil(root*root/(delta*delta) - 1e-9))
	if pairs < 1 {
		pairs = 1
	}
	return SampleSizePlan{
		PassA: passA, PassB: passB, Alpha: alpha, Power: power,
		Discordant: psi, Pairs: pairs, Attempts: attempts,
		Tasks: (pairs + attempts - 1) / attempts,
		Assumptions: []string{
			"two-sided McNemar test on paired pass/fail outcomes (Connor 1987 sample size)",
			"the two agents' outcomes on a pair are independent given their pass rates (ψ = pA(1−pB) + pB(1−pA)); positively correlated agents need fewer pairs",
			"attempts of one task count as independent pairs; if agents pass or fail a task consistently, plan with attempts = 1",
		},
	}, nil
}

// MinDetectableDiff is the smallest true mean difference a two-sided paired
// t-test with df degrees of freedom and standard error se detects with the
// given power at the package's significance level:
// (t(1 − α/2, df) + t(power, df))·se (the usual normal-approximation
// power formula with t quantiles).
func MinDetectableDiff(se float64, df int, power float64) float64 {
	return (CriticalT(df) + TQuantile(power, df)) * se
}
