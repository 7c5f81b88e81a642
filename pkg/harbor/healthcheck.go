package harbor

import "time"

// Harbor's defaults for [environment.healthcheck] (its HealthcheckConfig,
// which mirrors Docker's HEALTHCHECK options).
const (
	DefaultHealthcheckIntervalSec      = 5.0
	DefaultHealthcheckTimeoutSec       = 30.0
	DefaultHealthcheckStartPeriodSec   = 0.0
	DefaultHealthcheckStartIntervalSec = 5.0
	DefaultHealthcheckRetries          = 3
)

// HealthcheckConfig is [environment.healthcheck]: a shell command run in
// the environment after it starts, until it exits 0, before the agent is
// set up. Failures during the start period do not count; after it, Retries
// consecutive failures fail the trial.
type HealthcheckConfig struct {
	Command          string
	IntervalSec      float64
	TimeoutSec       float64
	StartPeriodSec   float64
	StartIntervalSec float64
	// Retries is how many consecutive failures after the start period fail
	// the check; 0 fails it at the first, as Harbor's loop does.
	Retries int
}

// Interval is the pause between attempts after the start period.
func (h HealthcheckConfig) Interval() time.Duration { return seconds(h.IntervalSec) }

// Timeout bounds one attempt of the command.
func (h HealthcheckConfig) Timeout() time.Duration { return seconds(h.TimeoutSec) }

// StartPeriod is the grace period whose failures do not count.
func (h HealthcheckConfig) StartPeriod() time.Duration { return seconds(h.StartPeriodSec) }

// StartInterval is the pause between attempts during the start period.
func (h HealthcheckConfig) StartInterval() time.Duration { return seconds(h.StartIntervalSec) }

// healthcheck reads the healthcheck table of e, whose dotted name is
// parent ([environment.healthcheck], a step's healthcheck); nil when
// absent.
func (r *fieldReader) healthcheck(e map[string]any, parent string) *HealthcheckConfig {
	p := joinKey(parent, "healthcheck")
	if _, ok := e["healthcheck"]; !ok {
		return nil
	}
	t := r.table(e, parent, "healthcheck")
	h := &HealthcheckConfig{
		IntervalSec:      DefaultHealthcheckIntervalSec,
		TimeoutSec:       DefaultHealthcheckTimeoutSec,
		StartPeriodSec:   DefaultHealthcheckStartPeriodSec,
		StartIntervalSec: DefaultHealthcheckStartIntervalSec,
		Retries:          DefaultHealthcheckRetries,
	}
	if _, present := t["command"]; !present {
		r.fail(p+".command", "is required (a shell command; exit 0 means healthy)")
	} else if c, ok := r.str(t, p, "command"); ok {
		if c == "" {
			r.fail(p+".command", "must not be empty")
		}
		h.Command = c
	}
	if v, ok := r.number(t, p, "interval_sec"); ok {
		h.IntervalSec = v
	}
	if v, ok := r.positive(t, p, "timeout_sec"); ok {
		h.TimeoutSec = v
	}
	if v, ok := r.number(t, p, "start_period_sec"); ok {
		h.StartPeriodSec = v
	}
	if v, ok := r.number(t, p, "start_interval_sec"); ok {
		h.StartIntervalSec = v
	}
	if v, ok := r.integer(t, p, "retries"); ok {
		h.Retries = v
	}
	return h
}
