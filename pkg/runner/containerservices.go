package runner

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Sidecar services under container isolation (a Fargate task): the
// services are containers of the attempt's ECS task, which ECS starts in
// depends_on order (dependsOn) before this container, whose own start
// waits for what compose's main depends on. The task's awsvpc network is
// every container's, so the services listen on this container's loopback;
// ECS cannot name them there (extraHosts and hostname are not supported
// in awsvpc mode), so the runner does: each service name is 127.0.0.1 in
// the container's /etc/hosts, as each local pod's /etc/hosts has it.

// containerHostsFile is the container's hosts file (a variable for tests).
var containerHostsFile = "/etc/hosts"

// nameContainerServices adds the services' names to the container's hosts
// file, in place: a container runtime bind-mounts /etc/hosts, which can be
// written but not replaced. Names the file already maps are left alone.
func (sv services) nameContainerServices(names []string) error {
	t := sv.t
	data, err := os.ReadFile(containerHostsFile)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("sidecar services: read %s: %w", containerHostsFile, err)
	}
	known := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		for _, f := range fields[min(1, len(fields)):] {
			known[f] = true
		}
	}
	var missing []string
	for _, n := range names {
		if !known[n] && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	f, err := os.OpenFile(containerHostsFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("sidecar services: name them in %s: %w", containerHostsFile, err)
	}
	prefix := ""
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		prefix = "\n"
	}
	_, err = fmt.Fprintf(f, "%s127.0.0.1\t%s\n", prefix, strings.Join(missing, " "))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sidecar services: name them in %s: %w", containerHostsFile, err)
	}
	t.log.Info("sidecar services are containers of the task; named on the loopback", "services", strings.Join(missing, ","))
	return nil
}

// healthcheckRole is whose phase the task's [environment.healthcheck] is.
// Under container isolation the agent's role is the agent's unprivileged
// uid, but the check is the task's, run as its image's user (Harbor's
// `docker exec`), which the runner in a Fargate task cannot read (the task
// definition runs it as root over the image's USER): the check runs as
// root, as task images' users mostly are, without the dangerous
// capabilities, and what it starts in the background (a server the check
// waits for) keeps running into the agent's and the verifier's phases, as
// after `docker exec` (roleEnvironment). Elsewhere the role stays base's
// and the image's user is resolved from the image.
func (sv services) healthcheckRole(base phaseRole) phaseRole {
	t := sv.t
	if t.container != nil {
		return roleEnvironment
	}
	return base
}
