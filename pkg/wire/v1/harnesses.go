package v1

// HarnessInfo is one row of the harness table as the API shows it: what
// the New Run form offers in its harness picker.
type HarnessInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Version     string `json:"version"`
	// TakesCommand is true for the harness that runs the agent config's own
	// command (the form then asks for it).
	TakesCommand bool `json:"takes_command"`
	// ModelFree is true for the harnesses that run without a model
	// (oracle, nop, command): their agents may omit [agents.model], which
	// every other harness requires.
	ModelFree bool `json:"model_free"`
	// WireAPI is the model wire API the harness speaks through the model
	// gateway; "" when it calls no model through it (a hosted model, which
	// only the gateway reaches, is then refused).
	WireAPI string `json:"wire_api,omitempty"`
	// KeyEnv names the variable through which the harness takes its model
	// key; "" when it takes none.
	KeyEnv string `json:"key_env,omitempty"`
	// MemoryMB is the memory the harness's program needs (measured peak
	// with headroom); a task giving the agent less is warned of at
	// validation. 0 when it runs nothing of its own.
	MemoryMB int `json:"memory_mb,omitempty"`
	// Available is false for a harness this platform cannot run (submit
	// refuses it); Reason then says why.
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
}

// HarnessList is the answer of GET /v1/harnesses.
type HarnessList struct {
	Harnesses []HarnessInfo `json:"harnesses"`
	// HostedModels reports that this platform serves hosted models
	// (model type "hosted"); submit refuses them otherwise.
	HostedModels bool `json:"hosted_models"`
}
