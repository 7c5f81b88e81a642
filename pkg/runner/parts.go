package runner

// A trial's work is split in parts, each a type of its own: the steps of a
// multi-step task (multiStep, steps.go), the agent's rig — its harness
// bundle, model gateway and logs — (rigging, agent.go), the image sandbox's
// layer, pod and directories (imageSandbox, imagetrial.go), the task's
// sidecar services, healthcheck and collect hooks (services, services.go,
// healthcheck.go, collect.go), and what the verifier gets — a separate
// environment, the declared artifacts, the judge — (verification,
// verifierenv.go, artifacts.go, judge.go). The trial's own methods are the
// order of its phases and its result. Each part works on the one trial's
// state, which it reaches through t.

// multiStep runs a multi-step task's steps (steps.go).
type multiStep struct{ t *trial }

// rigging is the agent's rig: its harness bundle, model gateway and logs
// (agent.go).
type rigging struct{ t *trial }

// imageSandbox is an image trial's writable layer, pod and directories
// (imagetrial.go).
type imageSandbox struct{ t *trial }

// services are the task's sidecar services, its healthcheck and its
// collect hooks (services.go, healthcheck.go, collect.go).
type services struct{ t *trial }

// verification is what the verifier gets: a separate environment, the
// declared artifacts, the LLM judge (verifierenv.go, artifacts.go,
// judge.go).
type verification struct{ t *trial }

func (t *trial) multiStep() multiStep       { return multiStep{t} }
func (t *trial) rigging() rigging           { return rigging{t} }
func (t *trial) imageSandbox() imageSandbox { return imageSandbox{t} }
func (t *trial) services() services         { return services{t} }
func (t *trial) verification() verification { return verification{t} }
