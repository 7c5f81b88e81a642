package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/gauntlet-bench/gauntlet/infra/config"
)

// Options are the inputs of a stage that do not come from context.
type Options struct {
	// Env is the account and region; nil synthesizes environment-agnostic stacks.
	Env *awscdk.Environment
	// RunnerContext is the Docker build context of the sandbox-runner image (the repository root).
	RunnerContext string
	// ConsoleSite is the built console to upload; empty uploads nothing.
	ConsoleSite string
}

// Stage is the pair of stacks of one deployment stage.
type Stage struct {
	Stateful  *Stateful
	Stateless *Stateless
}

// New creates both stacks of cfg's stage under scope (normally the App).
func New(scope constructs.Construct, cfg config.Config, opts Options) (*Stage, error) {
	props := awscdk.StackProps{Env: opts.Env}
	stateful, err := NewStateful(scope, cfg, &props)
	if err != nil {
		return nil, err
	}
	stateless, err := NewStateless(scope, cfg, StatelessProps{
		StackProps:    props,
		Stateful:      stateful,
		RunnerContext: opts.RunnerContext,
		ConsoleSite:   opts.ConsoleSite,
	})
	if err != nil {
		return nil, err
	}
	return &Stage{Stateful: stateful, Stateless: stateless}, nil
}
