// Package runner is the sandbox-runner: it runs one slot (one trial of one
// agent on one task) from outside the isolation it sets up. The agent phase
// (the harness's install step and its run command) and the verifier phase
// (the task's tests/test.sh) each run in their own bubblewrap sandbox over a
// shared work dir: /app (seeded from the task's environment/files), /logs/agent
// and /logs/verifier; /tests only for the verifier, /solution only for a
// harness that mounts it (the oracle). The runner enforces the timeouts, reads
// the reward, collects /logs as artifacts and writes result.json in Harbor's
// TrialResult shape.
//
// Harnesses are rows of a table (see Harnesses), so a new harness is data.
package runner
