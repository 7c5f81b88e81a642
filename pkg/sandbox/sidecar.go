package sandbox

import "time"

// Sidecar is one sidecar service of a task (environment/docker-compose.yaml)
// as a driver that declares every container up front runs it (ECS: one
// container of the attempt's task definition). Drivers that leave the
// services to the runner (which reads the task's compose file) use only
// Spec.Services.
type Sidecar struct {
	Name string `json:"name"`
	// Image is the service's pinned image (repo@sha256:…).
	Image string `json:"image"`
	// Entrypoint and Command replace the image's; nil keeps the image's.
	Entrypoint  []string          `json:"entrypoint,omitempty"`
	Command     []string          `json:"command,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
	WorkingDir  string            `json:"working_dir,omitempty"`
	User        string            `json:"user,omitempty"`
	DependsOn   []Dependency      `json:"depends_on,omitempty"`
	Healthcheck *Healthcheck      `json:"healthcheck,omitempty"`
}

// Dependency is a depends_on entry: a service and compose's condition.
type Dependency struct {
	Service string `json:"service"`
	// Condition is ConditionStarted or ConditionHealthy.
	Condition string `json:"condition"`
}

// Compose's depends_on conditions a sandbox honours.
const (
	ConditionStarted = "service_started"
	ConditionHealthy = "service_healthy"
)

// Healthcheck is a service's compose healthcheck (Docker's defaults
// applied).
type Healthcheck struct {
	// Test is argv for compose's CMD form, ["sh", "-c", cmd] for CMD-SHELL.
	Test          []string      `json:"test"`
	Interval      time.Duration `json:"interval"`
	Timeout       time.Duration `json:"timeout"`
	StartPeriod   time.Duration `json:"start_period,omitempty"`
	StartInterval time.Duration `json:"start_interval,omitempty"`
	Retries       int           `json:"retries"`
}
