package cloud

import (
	"errors"
	"fmt"
)

// ErrNotWired reports that a function was asked for something built on a
// port it was not configured with: its row of the function table (and the
// CDK stack's environment and IAM grants for it) leaves the port out. The
// error names the variable that would wire it. Stages report it at cold
// start, never at the first message.
var ErrNotWired = errors.New("port not wired into this function")

func notWired(port, env string) error {
	return fmt.Errorf("%s: %w (set %s)", port, ErrNotWired, env)
}

// wire is one port a stage takes: whether it is missing, its name and the
// variable that wires it.
type wire struct {
	missing   bool
	port, env string
}

// wired reports every port of the stage that is missing, each naming its
// variable.
func wired(stage string, ports ...wire) error {
	var errs []error
	for _, w := range ports {
		if w.missing {
			errs = append(errs, notWired(w.port, w.env))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", stage, errors.Join(errs...))
	}
	return nil
}

func (p *Platform) planWire() wire { return wire{p.Ports.Plan == nil, "plan queue", EnvPlanQueueURL} }
func (p *Platform) slotsWire() wire {
	return wire{p.Ports.Slots == nil, "slots queue", EnvSlotsQueueURL}
}
func (p *Platform) completionsWire() wire {
	return wire{p.Ports.Completions == nil, "completions queue", EnvCompletionsQueueURL}
}
func (p *Platform) resultsWire() wire {
	return wire{p.Ports.Results == nil, "results queue", EnvResultsQueueURL}
}
func (p *Platform) blobsWire() wire { return wire{p.Ports.Blobs == nil, "blob store", EnvBucket} }
func (p *Platform) secretsWire() wire {
	return wire{p.Ports.Secrets == nil, "secret store", EnvSecretsPrefix}
}
func (p *Platform) sandboxesWire() wire {
	return wire{p.Ports.Sandboxes == nil, "sandbox driver", EnvCluster}
}
