package benchmark

// ServiceRun is how one sidecar service of a task runs (its compose keys:
// environment/docker-compose.yaml), kept in the manifest beside the
// service's pinned image for a sandbox that declares every container up
// front (an ECS task definition) and so cannot read the task's compose file
// at run time. A sandbox that runs the services itself from the task's
// files (the local runner) does not need it.
type ServiceRun struct {
	// Entrypoint and Command replace the image's; nil keeps the image's.
	Entrypoint []string `json:"entrypoint,omitempty"`
	Command    []string `json:"command,omitempty"`
	// Environment is the service's `environment`.
	Environment map[string]string `json:"environment,omitempty"`
	WorkingDir  string            `json:"working_dir,omitempty"`
	User        string            `json:"user,omitempty"`
	// DependsOn are the services started (or healthy) before this one.
	DependsOn []ServiceDependency `json:"depends_on,omitempty"`
	// Healthcheck is the service's compose healthcheck, nil without one.
	Healthcheck *ServiceHealthcheck `json:"healthcheck,omitempty"`
}

// ServiceDependency is one depends_on entry: the service and compose's
// condition ("service_started" or "service_healthy").
type ServiceDependency struct {
	Service   string `json:"service"`
	Condition string `json:"condition"`
}

// ServiceHealthcheck is a compose healthcheck with Docker's defaults
// applied; durations in milliseconds.
type ServiceHealthcheck struct {
	// Test is the command: argv for compose's CMD form, ["sh", "-c", cmd]
	// for CMD-SHELL.
	Test            []string `json:"test"`
	IntervalMS      int64    `json:"interval_ms"`
	TimeoutMS       int64    `json:"timeout_ms"`
	StartPeriodMS   int64    `json:"start_period_ms,omitempty"`
	StartIntervalMS int64    `json:"start_interval_ms,omitempty"`
	Retries         int      `json:"retries"`
}
