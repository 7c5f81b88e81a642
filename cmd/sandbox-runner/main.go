// Command sandbox-runner runs one slot of a gauntlet run: the agent, then the
// verifier, each in a bubblewrap sandbox, and writes result.json (Harbor's
// TrialResult shape) and the collected logs. Exit codes: 0 when result.json was
// written (whatever the reward), 70 when the runner could not do its job.
//
// Usage:
//
//	sandbox-runner --spec slot.json --out OUT [--work DIR] [--isolation bwrap|process] [--agents-dir DIR]
//	sandbox-runner install DEST   (copy this binary to DEST; the cloud init container uses it)
package main

import (
	"os"

	"github.com/gauntlet-bench/gauntlet/pkg/runner"
)

func main() {
	os.Exit(runner.Main(os.Args[1:], os.Environ()))
}
