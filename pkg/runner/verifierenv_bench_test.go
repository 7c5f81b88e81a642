package runner

import "testing"

// BenchmarkSeparateVerifierTrial times whole trials side by side: plain
// (the oracle's files, no artifacts, the verifier in the agent's pod) and
// separate (the same oracle, a declared directory artifact collected, the
// pod stopped, a second writable layer and pod over the verifier's image,
// the artifacts placed, the verifier, two tear-downs). The ratio
// separate/plain is the added cost of a separate verifier per attempt.
func BenchmarkSeparateVerifierTrial(b *testing.B) {
	img := testImage(b)
	vimg := verifierImage(b, sepVerifierScript)
	separate := separateTask(b, sepSolve)
	plain := plainTask(b, sepSolve+"echo gauntlet > /app/answer.txt\n")
	b.Run("plain", func(b *testing.B) {
		cpuLoop(b, func() { benchTrial(b, plain, img, nil) })
	})
	b.Run("separate", func(b *testing.B) {
		cpuLoop(b, func() { benchTrial(b, separate, img, &vimg) })
	})
}
