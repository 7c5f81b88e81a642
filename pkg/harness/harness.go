// Package harness is the harness table: how each agent harness is prepared,
// configured and run, and how its usage is read. Harnesses are data; the
// runner, submit-time validation and the dispatcher all read this one table.
package harness

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
)

// UsageParser reads what an agent reported about its model usage from the
// host copy of /logs/agent after the agent phase. ok is false when the agent
// reported nothing; an error means it reported something unreadable.
type UsageParser func(agentLogDir string) (u Usage, ok bool, err error)

// Harness describes how one agent harness is installed and run inside the
// agent sandbox. Harnesses are data: adding one is adding a row to the table,
// never adding control flow that tests a harness name.
type Harness struct {
	Name        string
	Description string
	// Version is reported as agent_info.version in result.json.
	Version string
	// Install is shell run in the agent sandbox before the agent (with the
	// agent's environment, /tmp kept for the run); empty means nothing to install.
	Install string
	// Run is a text/template of the shell command that runs the agent, given
	// RunTemplateData; it is executed with `bash -c` in the agent sandbox.
	Run string
	// KeyEnv names the environment variable through which the harness expects
	// the model API key (e.g. OPENAI_API_KEY); the dispatcher exposes the
	// agent's api_key_secret under this name. Empty: the harness takes none.
	KeyEnv string
	// Usage reads token counts and cost from /logs/agent; nil when the
	// harness reports none.
	Usage UsageParser
	// MountsSolution gives the agent phase the task's solution/ read-only at
	// /solution (and the task's [solution].env); only an oracle may have it.
	MountsSolution bool
}

// RunTemplateData is what a harness's Run template may refer to.
type RunTemplateData struct {
	// Command is the agent config's command (sandbox.Spec.Command).
	Command string
	// Model is the agent's model name.
	Model string
	// InstructionFile is the path of the task instruction as the agent sees it.
	InstructionFile string
	// SolutionDir is where the task's solution/ is mounted (MountsSolution only).
	SolutionDir string
	// AgentsDir is where the agents directory is mounted ("" when none).
	AgentsDir string
}

// Paths in the sandbox that harness rows refer to (Harbor's conventions).
const (
	AgentLogDir     = "/logs/agent"
	InstructionPath = AgentLogDir + "/instruction.md"
	UsagePath       = AgentLogDir + "/" + UsageFile
)

// harnesses is the harness table. Keep rows sorted by name.
var harnesses = []Harness{
	{
		Name:    "command",
		Version: "1.0.0",
		Description: "runs the agent config's command with bash -c; the instruction is in " +
			InstructionPath + " and $GAUNTLET_INSTRUCTION, usage may be reported in " + UsagePath,
		Run:   "{{.Command}}",
		Usage: ReadUsageJSON,
	},
	{
		Name:        "nop",
		Version:     "1.0.0",
		Description: "does nothing and exits 0 (a baseline that should score 0)",
		Run:         ":",
	},
	{
		Name:           "oracle",
		Version:        "1.0.0",
		Description:    "runs the task's reference solution, solution/solve.sh",
		Run:            "bash {{.SolutionDir}}/solve.sh",
		MountsSolution: true,
	},
}

// All returns a copy of the harness table, sorted by name.
func All() []Harness {
	return append([]Harness(nil), harnesses...)
}

// Lookup returns the harness named name.
func Lookup(name string) (Harness, bool) {
	return LookupIn(harnesses, name)
}

// LookupIn returns the harness named name in table.
func LookupIn(table []Harness, name string) (Harness, bool) {
	for _, h := range table {
		if h.Name == name {
			return h, true
		}
	}
	return Harness{}, false
}

// Names lists the names of table's harnesses, comma-separated.
func Names(table []Harness) string {
	names := make([]string, len(table))
	for i, h := range table {
		names[i] = h.Name
	}
	return strings.Join(names, ", ")
}

// RunCommand renders the harness's Run template. An empty result is an error:
// the agent config lacks what the harness needs (e.g. `command` without a command).
func (h Harness) RunCommand(data RunTemplateData) (string, error) {
	tmpl, err := template.New(h.Name).Option("missingkey=error").Parse(h.Run)
	if err != nil {
		return "", fmt.Errorf("harness %q: parse run template: %w", h.Name, err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("harness %q: render run template: %w", h.Name, err)
	}
	cmd := strings.TrimSpace(buf.String())
	if cmd == "" {
		return "", fmt.Errorf("harness %q: the run command is empty; does the agent config set command?", h.Name)
	}
	return cmd, nil
}
