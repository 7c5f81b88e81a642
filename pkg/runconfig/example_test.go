package runconfig_test

import (
	"errors"
	"fmt"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
)

func ExampleParse() {
	_, err := runconfig.Parse([]byte(`
[experiment]
benchmark = "terminal-bench-2-0"

[execution]
attempts_per_task = 0

[[agents]]
harness = "codex"
[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"
[agents.env]
OPENAI_API_KEY = "literal"
`))
	var ve *runconfig.ValidationError
	if errors.As(err, &ve) {
		for _, fe := range ve.Errors {
			fmt.Println(fe.Field)
		}
	}
	// Output:
	// execution.attempts_per_task
	// agents[0].env.OPENAI_API_KEY
}

func ExampleResolve() {
	tasks := []benchmark.Task{
		{Name: "hello", Category: "basics", Digest: "sha256:1"},
		{Name: "sort", Category: "algorithms", Digest: "sha256:2"},
		{Name: "grep", Category: "basics", Digest: "sha256:3"},
	}
	m, _ := benchmark.HarborManifest("example", "1.0", "", tasks)
	m.DefaultHarness = "oracle"
	cfg, _ := runconfig.Parse([]byte(`
[experiment]
benchmark = "example"
[tasks]
categories = ["basics"]
[[agents]]
name = "reference"
`))
	r, err := runconfig.Resolve(cfg, m)
	fmt.Println(r.Tasks, r.Harnesses, r.PassThreshold, err)
	// Output: [hello grep] [oracle] 1 <nil>
}
