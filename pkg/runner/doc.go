// Package runner is the sandbox-runner: it runs one slot (one trial of one
// agent on one task) from outside the isolation it sets up. The agent phase
// (the harness's install step and its run command) and the verifier phase
// (the task's tests/test.sh) run in one environment for the trial, as in
// Harbor's shared container (what the agent leaves running serves the
// verifier), over a shared /app, /logs/agent and /logs/verifier; /tests
// only for the verifier, /solution only for a harness that gets it (the
// oracle). The runner enforces the
// timeouts, reads the reward, collects /logs as artifacts with every secret
// value it handed out replaced by [redacted:NAME], and writes result.json in
// Harbor's TrialResult shape.
//
// Three isolations (Options.Isolation):
//
//   - bwrap: one bubblewrap sandbox over the task's image for the trial (a
//     pod, pod.go), every phase entered into it as `docker exec` enters a
//     container (local machines). bwrap-host, the development mode on the
//     host's root filesystem, keeps a sandbox per phase.
//   - container: the runner is root inside a container that is the sandbox
//     (an ECS Fargate task, where bubblewrap cannot run). The phases see the
//     container's real /app, /logs, /tests and /solution. The install step
//     and the agent run under a uid and gid of their own (DefaultAgentUID)
//     with no supplementary groups, no-new-privileges, a session of their
//     own and an environment built from scratch; /app, /logs/agent and the
//     agent's home are theirs, /logs/verifier, the work dir (task bundle)
//     and the out dir root's. What the agent leaves running keeps running
//     while the tests are copied to /tests (root-owned, read-only) and the
//     verifier runs, as root without CAP_SYS_PTRACE and CAP_SYS_ADMIN;
//     every process of the agent uid is killed at the end of the trial. The runner itself is non-dumpable
//     and overwrites the sensitive variables (spec, secrets, presigned
//     URLs, the task role's credentials endpoint) in its own environment
//     block, which another uid could not read anyway.
//   - process: no isolation at all, an explicit opt-in.
//
// Harnesses are rows of a table (see Harnesses), so a new harness is data.
package runner
