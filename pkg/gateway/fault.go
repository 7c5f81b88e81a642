package gateway

import (
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// Fault kinds: why the gateway holds an attempt's model use failed.
const (
	// FaultAuth: the upstream refused the key (401/403). Agent error, final.
	FaultAuth = "auth"
	// FaultModelUnavailable: 429/5xx or unreachable after retries. Agent error.
	FaultModelUnavailable = "model_unavailable"
	// FaultBudget: the attempt's token or cost budget is spent. Agent error.
	FaultBudget = "budget_exceeded"
	// FaultGateway: the gateway itself failed (its record could not be
	// written). Infrastructure error, retried.
	FaultGateway = "gateway"
)

// Fault is a failure of the attempt's model use the runner reports.
type Fault struct {
	Kind    string `json:"kind"`
	Status  int    `json:"status,omitempty"`
	Message string `json:"message"`
}

// Class is the result's error class for the fault.
func (f Fault) Class() run.ErrorClass {
	if f.Kind == FaultGateway {
		return run.Infra
	}
	return run.AgentError
}

func (f Fault) Error() string { return fmt.Sprintf("model gateway: %s: %s", f.Kind, f.Message) }
