// Command sandbox-runner runs one slot of a gauntlet run: the agent, then the
// verifier, each in a bubblewrap sandbox (or, as root inside an ECS task, under
// container isolation: the agent under a uid of its own), and writes
// result.json (Harbor's TrialResult shape) and the collected logs. Exit codes:
// 0 when result.json was written (whatever the reward), 70 when the runner
// could not do its job.
//
// Usage:
//
//	sandbox-runner --spec slot.json --out OUT [--work DIR] [--isolation bwrap|container|process] [--agents-dir DIR]
//	sandbox-runner install [--static-bin DIR] DEST   (copy this binary to DEST and DIR's static helpers to bin/ beside it; the cloud init container uses it)
//
// Sealed secrets (GAUNTLET_SECRETS_URL, GAUNTLET_SECRETS_DATA_KEY) are opened
// with KMS through the default AWS configuration: in ECS, the task role.
package main

import (
	"os"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/kmskeys"
	"github.com/gauntlet-bench/gauntlet/pkg/runner"
)

func main() {
	os.Exit(runner.Main(os.Args[1:], os.Environ(), kmskeys.FromEnvironment()))
}
