package harbor

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// [environment.healthcheck] is read with Harbor's defaults, and a task
// with one is no longer unsupported: the runner runs it.
func TestParseHealthcheck(t *testing.T) {
	cfg, err := ParseTaskConfig([]byte("[environment.healthcheck]\ncommand = \"curl -sf http://localhost:8080/\"\n"), "task.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := &HealthcheckConfig{Command: "curl -sf http://localhost:8080/", IntervalSec: 5, TimeoutSec: 30, StartIntervalSec: 5, Retries: 3}
	if diff := cmp.Diff(want, cfg.Environment.Healthcheck); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if len(cfg.Unsupported) != 0 {
		t.Errorf("Unsupported = %q, want none", cfg.Unsupported)
	}
	cfg, err = ParseTaskConfig([]byte(`[environment.healthcheck]
command = "test -f /tmp/ready"
interval_sec = 2
timeout_sec = 5.5
start_period_sec = 5
start_interval_sec = 0.5
retries = 2
`), "task.toml")
	if err != nil {
		t.Fatal(err)
	}
	want = &HealthcheckConfig{Command: "test -f /tmp/ready", IntervalSec: 2, TimeoutSec: 5.5, StartPeriodSec: 5, StartIntervalSec: 0.5, Retries: 2}
	if diff := cmp.Diff(want, cfg.Environment.Healthcheck); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if cfg, _ := ParseTaskConfig([]byte("[environment]\ncpus = 1\n"), "task.toml"); cfg.Environment.Healthcheck != nil {
		t.Errorf("no [environment.healthcheck]: got %+v, want nil", cfg.Environment.Healthcheck)
	}
}

// Bad healthcheck fields are errors naming the file and the field.
func TestParseHealthcheckErrors(t *testing.T) {
	tests := []struct{ toml, field string }{
		{"[environment.healthcheck]\ninterval_sec = 2", "environment.healthcheck.command"},
		{"[environment.healthcheck]\ncommand = \"\"", "environment.healthcheck.command"},
		{"[environment.healthcheck]\ncommand = 1", "environment.healthcheck.command"},
		{"[environment.healthcheck]\ncommand = \"true\"\ntimeout_sec = 0", "environment.healthcheck.timeout_sec"},
		{"[environment.healthcheck]\ncommand = \"true\"\ninterval_sec = -1", "environment.healthcheck.interval_sec"},
		{"[environment.healthcheck]\ncommand = \"true\"\nretries = 1.5", "environment.healthcheck.retries"},
		{"[environment.healthcheck]\ncommand = \"true\"\nstart_period_sec = \"5s\"", "environment.healthcheck.start_period_sec"},
		{"[environment]\nhealthcheck = \"true\"", "environment.healthcheck"},
	}
	for _, tt := range tests {
		_, err := ParseTaskConfig([]byte(tt.toml), "tasks/x/task.toml")
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || fe.File != "tasks/x/task.toml" {
			t.Errorf("ParseTaskConfig(%q) = %v, want a FieldError on %s", tt.toml, err, tt.field)
			continue
		}
		if !strings.Contains(err.Error(), tt.field) {
			t.Errorf("error %q does not name %s", err, tt.field)
		}
	}
}
