package runner

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"
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
	t := sv.t
	hc := t.task.Config.Environment.Healthcheck
	if hc == nil {
		return nil
	}
	pc := base
	pc.script = hc.Command
	env := baseEnv(t.seen.Tmp, t.seen.Tmp, t.seen.App)
	maps.Copy(env, t.task.Config.Environment.Env)
	pc.env = envList(env)
	if t.image != nil {
		u, err := resolveUser(t.image.root(), t.image.img.User)
		if err != nil {
			return fmt.Errorf("task %s: [environment.healthcheck]: %w", sv.healthcheckTaskName(), err)
		}
		pc.user = u
		pc.env = imageEnv(t.image.img, u, pc.env)
	}
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
			return fmt.Errorf("task %s: [environment.healthcheck]: %w", sv.healthcheckTaskName(), err)
		}
		if out.ExitCode == 0 && !out.TimedOut {
			t.log.Info("healthcheck passed", "attempts", attempts)
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
				return fmt.Errorf("task %s: [environment.healthcheck] %q did not pass: %d consecutive failures after the start period of %s (%d attempts in all); the last %s, output: %s",
					sv.healthcheckTaskName(), hc.Command, failures, hc.StartPeriod(), attempts, result, lastOutput(filepath.Join(dir, "stdout.txt"), filepath.Join(dir, "stderr.txt")))
			}
		}
		t.log.Info("healthcheck failed; trying again", "result", result, "in_start_period", inStart,
			"consecutive_failures", failures, "retries", hc.Retries, "wait", wait.String())
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("task %s: [environment.healthcheck]: runner stopped: %w", sv.healthcheckTaskName(), context.Cause(ctx))
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
