package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// The task's [environment.healthcheck], run as Harbor runs it: once the
// environment is up (the pod started) and before the agent is set up, the
// command is run again and again in the environment until it exits 0.
// Failures during the start period do not count and are retried after the
// start interval; after it, `retries` consecutive failures end the trial
// as an infra error naming the task, the command and its last output.
// Each attempt is a phase of its own (in a pod: entered with nsenter, as
// `docker exec` enters the container), bounded by the check's timeout; an
// attempt that times out is a failure.

// healthcheckOutput bounds the output of one attempt kept for the error.
const healthcheckOutput = 4 << 10

// runHealthcheck runs the task's healthcheck, if it has one, with the
// agent phase's sandbox settings (base) but the environment's own user and
// variables: the check is the task's, not the agent's, so it gets none of
// the agent's secrets.
func (sv services) runHealthcheck(ctx context.Context, base phaseCommand) error {
	return sv.checkHealth(ctx, base, sv.t.task.Config.Environment.Healthcheck, "[environment.healthcheck]")
}

// checkHealth runs hc (nil: nothing), named what in its errors, until it
// passes, as runHealthcheck describes.
func (sv services) checkHealth(ctx context.Context, base phaseCommand, hc *harbor.HealthcheckConfig, what string) error {
	t := sv.t
	if hc == nil {
		return nil
	}
	pc, err := sv.environmentCommand(base)
	if err != nil {
		return fmt.Errorf("task %s: %s: %w", sv.healthcheckTaskName(), what, err)
	}
	pc.script = hc.Command
	dir := filepath.Join(t.work, "healthcheck")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	started := time.Now()
	failures, attempts := 0, 0
	for {
		attempts++
		inStart := time.Since(started) < hc.StartPeriod()
		out, err := t.phase(ctx, "environment_healthcheck", pc, hc.Timeout(), "stdout.txt", "stderr.txt", dir)
		if err != nil {
			return fmt.Errorf("task %s: %s: %w", sv.healthcheckTaskName(), what, err)
		}
		if out.ExitCode == 0 && !out.TimedOut {
			t.log.Info("healthcheck passed", "check", what, "attempts", attempts)
			return nil
		}
		result := fmt.Sprintf("exit code %d", out.ExitCode)
		if out.TimedOut {
			result = fmt.Sprintf("timed out after %s", hc.Timeout())
		}
		wait := hc.StartInterval()
		if !inStart {
			failures++
			wait = hc.Interval()
			if failures >= hc.Retries {
				return fmt.Errorf("task %s: %s %q did not pass: %d consecutive failures after the start period of %s (%d attempts in all); the last %s, output: %s",
					sv.healthcheckTaskName(), what, hc.Command, failures, hc.StartPeriod(), attempts, result, lastOutput(filepath.Join(dir, "stdout.txt"), filepath.Join(dir, "stderr.txt")))
			}
		}
		t.log.Info("healthcheck failed; trying again", "check", what, "result", result, "in_start_period", inStart,
			"consecutive_failures", failures, "retries", hc.Retries, "wait", wait.String())
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("task %s: %s: runner stopped: %w", sv.healthcheckTaskName(), what, context.Cause(ctx))
		case <-timer.C:
		}
	}
}

// lastOutput is the end of the given output files (a check's last
// stdout and stderr), clipped, on one line.
func lastOutput(files ...string) string {
	var parts []string
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		if s := strings.TrimSpace(string(data)); s != "" {
			if len(s) > healthcheckOutput {
				s = "…" + s[len(s)-healthcheckOutput:]
			}
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return "(no output)"
	}
	line := strings.Join(strings.Fields(strings.Join(parts, " | ")), " ")
	if len(line) > 600 {
		line = "…" + strings.ToValidUTF8(line[len(line)-600:], "")
	}
	return line
}

// healthcheckTaskName names the task in the check's errors as the run
// knows it (the spec's name; the task directory's own name otherwise).
func (sv services) healthcheckTaskName() string {
	t := sv.t
	if t.spec.Task.Name != "" {
		return t.spec.Task.Name
	}
	return t.task.Name
}
