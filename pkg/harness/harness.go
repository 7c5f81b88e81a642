// Package harness is the harness table: how each agent harness is prepared,
// configured and run, and how its usage, trajectory and errors are read.
// Harnesses are data; the runner, submit-time validation, the dispatcher and
// the agent-bundle cache all read this one table.
package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
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
	// Version is reported as agent_info.version in result.json; for a
	// bundled program it is the pinned npm version of Bundle.Package.
	Version string
	// Install is shell run in the agent sandbox before the agent (with the
	// agent's environment, /tmp kept for the run); empty means nothing to install.
	Install string
	// NetworkInstall is the pinned install recipe of a harness that installs
	// from the network per attempt (PyPI, a vendor script). Deployments
	// whose sandboxes may not reach the network refuse such a harness at
	// submit time (see Available); where the operator allows it
	// (`gauntlet local --allow-network-installs`), the runner runs it before
	// Install, in the install step, with public network.
	NetworkInstall string
	// Bundle is the pinned program the harness runs, prepared once into the
	// agent-bundle cache and mounted read-only at BundleMount; nil for
	// harnesses that run nothing of their own.
	Bundle *Bundle
	// Run is a text/template of the shell command that runs the agent, given
	// RunTemplateData; it is executed with `bash -c` in the agent sandbox.
	Run string
	// Env are variables set for the agent, each value a text/template given
	// RunTemplateData (e.g. ANTHROPIC_BASE_URL = "{{.GatewayURL}}").
	Env map[string]string
	// Files are written into the agent's writable home before the agent
	// starts: path relative to $HOME → a text/template of the content.
	Files map[string]string
	// KeyEnv names the environment variable through which the harness takes
	// its model key (e.g. OPENAI_API_KEY). The dispatcher passes the agent's
	// api_key_secret under this name; for a harness that speaks through the
	// model gateway (WireAPI set) the runner keeps that value for the gateway
	// and gives the agent the attempt's gateway token under this name
	// instead. Empty: the harness takes none.
	KeyEnv string
	// CredentialSecret is the pinned secret record name of the separate
	// credential the harness takes besides its model key (the config's
	// harness_api_key_secret, which must name exactly this record); empty:
	// the harness takes none and the config may not set it.
	CredentialSecret string
	// PlatformEnv are env vars the platform sets for the harness when its
	// model is a provider model; a config may not set them in [env] or
	// [agents.env] for such an agent.
	PlatformEnv []string
	// WireAPI is the model wire protocol the program speaks (one of the
	// Wire* constants); "" for a harness that calls no model.
	WireAPI string
	// NativeLogs are globs, relative to the agent's home, of the files the
	// program writes about its session (its native log); they are kept as
	// artifacts under agent/native/.
	NativeLogs []string
	// Output makes the incremental parser of the agent's captured output
	// (usage and model errors), which the runner feeds the agent's stdout
	// and stderr; nil when the harness reads those with Usage and
	// ModelError (or reports none).
	Output func() OutputParser
	// Session makes the incremental parser of the program's native session
	// log, which the runner feeds the row's SessionLog (the newest match of
	// NativeLogs[0]) to build the trajectory; nil when Trajectory builds it
	// (or none is built).
	Session func() SessionParser
	// Usage reads token counts and cost from /logs/agent; nil when the
	// harness reports none or its Output does.
	Usage UsageParser
	// Trajectory builds the ATIF trajectory from the agent's logs; nil when
	// the harness leaves no log to build one from or its Session does.
	Trajectory TrajectoryParser
	// ModelError reads from the agent's logs and exit code whether the
	// agent failed because of the model (auth, model_unavailable); nil when
	// the harness reports no such thing or its Output does.
	ModelError ModelErrorParser
	// MountsSolution gives the agent phase the task's solution/ read-only at
	// /solution (and the task's [solution].env); only an oracle may have it.
	MountsSolution bool
	// ImageNeeds are absolute paths the program starts from the task image
	// itself, whatever its bundle carries (cline's shell tool spawns
	// /bin/bash by that path, not $SHELL). An image without one cannot run
	// the harness: the runner refuses the attempt before the agent starts,
	// as it does a bundle the image cannot run.
	ImageNeeds []string
	// MemoryMB is the memory the harness's program needs (MB): the peak
	// resident memory of its processes on a multi-turn task, measured
	// (docs/AGENTS.md) and rounded up with headroom. A run whose task gives
	// the agent less (its environment's memory_mb) is warned at submit; 0
	// for a harness that runs nothing of its own.
	MemoryMB int
	// ModelFree marks gauntlet's own harnesses that run without a model
	// (oracle, nop, command — a documented extension of Osmosis's config):
	// their agents may omit [agents.model]. Every other harness requires
	// one, as Osmosis requires it of every agent.
	ModelFree bool
}

// Bundle is a pinned agent program from the npm registry, as the agents/
// folder's package-lock.json pins it. Only Files are kept in the prepared
// bundle (the rest of the npm install — other platforms' binaries, voice
// assets, helpers the one-shot mode never starts — is pruned).
type Bundle struct {
	// Package is the npm package whose version is the harness's version.
	Package string
	// Packages are every npm package the bundle's files come from (their
	// lock entries' integrity hashes make the bundle's content digest).
	Packages []string
	// Files copies node_modules-relative paths (a file or a directory) to
	// bundle-relative paths.
	Files []BundleFile
	// Program is the bundle-relative path of the executable the harness
	// starts; before an attempt its ELF needs (interpreter, libraries, glibc
	// version) are checked against the sandbox's root filesystem.
	Program string
	// Path are bundle-relative directories put first on the agent's PATH
	// (RuntimePath, the runtime's static bash, is always among them).
	Path []string
	// Glibc marks a Program dynamically linked against glibc: the bundle
	// carries the runtime's loader and libraries under RuntimeLib, the
	// program's interpreter is RuntimeInterpreter, and the harness's Run
	// starts with OpenRuntime (see pkg/agentbundle's runtime.go).
	Glibc bool
	// Prepare, when set, is bash run once when the bundle is prepared,
	// after its files and runtime are in place and before it is complete:
	// $BUNDLE is the bundle's directory, $HOME a scratch directory removed
	// afterwards, and a Glibc program's lib/ is open on RuntimeFD. What it
	// writes under $BUNDLE is part of the bundle (copilot-cli unpacks the
	// JS its single-file binary carries, which it would otherwise unpack
	// into a writable cache on every start).
	Prepare string
}

// The runtime every bundle carries (pkg/agentbundle, agents/runtime.json).
const (
	// RuntimeFD is the file descriptor on which a glibc program's bundle
	// lib/ directory is open while it runs: its loader is reached, and
	// finds its libraries, through /proc/self/fd/RuntimeFD, so nothing in
	// the bundle depends on where it is mounted, and nothing of the task
	// image's is read.
	RuntimeFD = "217"
	// RuntimeDir is the bundle's lib/ as its programs reach it.
	RuntimeDir = "/proc/self/fd/" + RuntimeFD
	// RuntimeInterpreter is a glibc program's ELF interpreter in a bundle.
	RuntimeInterpreter = RuntimeDir + "/ld.so"
	// RuntimeLib is the bundle-relative directory of the loader and libraries.
	RuntimeLib = "lib"
	// RuntimeLoader is the bundle-relative path of the loader.
	RuntimeLoader = RuntimeLib + "/ld.so"
	// RuntimePath is the bundle-relative directory of the runtime's static
	// bash; it is first on the agent's PATH, so the phase's `bash -c` and
	// the programs' shell tools have a bash in an image that has none.
	RuntimePath = "path"
	// OpenRuntime starts the Run of a harness whose bundle is Glibc: it
	// opens the bundle's lib/ on RuntimeFD for the program and whatever
	// of it the program starts again.
	OpenRuntime = "exec " + RuntimeFD + "<{{.BundleDir}}/" + RuntimeLib + " && "
)

// BundleFile is one file or directory of a bundle.
type BundleFile struct {
	From string // relative to node_modules
	To   string // relative to the bundle root
}

// Wire APIs a harness may speak (the model gateway meters each).
const (
	WireOpenAIResponses   = string(wireapi.Responses)
	WireOpenAIChat        = string(wireapi.Chat)
	WireAnthropicMessages = string(wireapi.Messages)
	WireGemini            = string(wireapi.Gemini)
)

// RunTemplateData is what a harness's Run, Env and Files templates may refer to.
type RunTemplateData struct {
	// Command is the agent config's command (sandbox.Spec.Command).
	Command string
	// Model is the agent's model as configured ("openai/gpt-5.2").
	Model string
	// ModelName is the model's name as its provider knows it ("gpt-5.2").
	ModelName string
	// InstructionFile is the path of the task instruction as the agent sees it.
	InstructionFile string
	// SolutionDir is where the task's solution/ is mounted (MountsSolution only).
	SolutionDir string
	// AgentsDir is where the agents directory is mounted ("" when none).
	AgentsDir string
	// BundleDir is where the harness's bundle is mounted ("" when none).
	BundleDir string
	// Home is the agent's writable home directory.
	Home string
	// GatewayURL is the model gateway's base URL as the agent reaches it,
	// without a trailing slash or API version ("http://127.0.0.1:PORT").
	GatewayURL string
	// KeyEnv is the harness's KeyEnv (the variable holding the token).
	KeyEnv string
}

// Paths in the sandbox that harness rows refer to (Harbor's conventions).
const (
	AgentLogDir     = "/logs/agent"
	InstructionPath = AgentLogDir + "/instruction.md"
	UsagePath       = AgentLogDir + "/" + UsageFile
	// BundleMount is where a harness's agent bundle is mounted read-only.
	BundleMount = "/installed-agent"
	// StdoutFile is the name of the agent's captured stdout in /logs/agent.
	StdoutFile = "stdout.txt"
)

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

// Platform is what a deployment's sandboxes can do, for Available.
type Platform struct {
	// NetworkInstalls reports that sandboxes may install agents from the
	// network per attempt (PyPI, vendor scripts).
	NetworkInstalls bool
}

// Available reports whether h can run on platform p; the error says why not
// in words a user can act on.
func (h Harness) Available(p Platform) error {
	if h.NetworkInstall != "" && !p.NetworkInstalls {
		return fmt.Errorf("%s needs a network install, which this platform does not allow", h.Name)
	}
	return nil
}

// Runnable returns the names of the table's harnesses that can run on p.
func Runnable(table []Harness, p Platform) []string {
	var names []string
	for _, h := range table {
		if h.Available(p) == nil {
			names = append(names, h.Name)
		}
	}
	return names
}

// RunCommand renders the harness's Run template. An empty result is an error:
// the agent config lacks what the harness needs (e.g. `command` without a command).
func (h Harness) RunCommand(data RunTemplateData) (string, error) {
	cmd, err := render(h.Name+" run", h.Run, data)
	if err != nil {
		return "", err
	}
	cmd = strings.TrimSpace(cmd)
	if cmd == "" {
		return "", fmt.Errorf("harness %q: the run command is empty; does the agent config set command?", h.Name)
	}
	return cmd, nil
}

// Environment renders the harness's Env templates.
func (h Harness) Environment(data RunTemplateData) (map[string]string, error) {
	out := make(map[string]string, len(h.Env))
	for k, v := range h.Env {
		s, err := render(h.Name+" env "+k, v, data)
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

// HomeFiles renders the harness's Files templates (path relative to $HOME
// → content).
func (h Harness) HomeFiles(data RunTemplateData) (map[string][]byte, error) {
	out := make(map[string][]byte, len(h.Files))
	for path, tmpl := range h.Files {
		s, err := render(h.Name+" file "+path, tmpl, data)
		if err != nil {
			return nil, err
		}
		out[path] = []byte(s)
	}
	return out, nil
}

// funcs are the functions the templates may call: json quotes a string as a
// JSON (and TOML basic) string, shq as a single shell word.
var funcs = template.FuncMap{
	"json": func(s string) (string, error) {
		b, err := json.Marshal(s)
		return string(b), err
	},
	"shq": func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" },
}

func render(name, text string, data RunTemplateData) (string, error) {
	tmpl, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("harness %s: parse template: %w", name, err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("harness %s: render template: %w", name, err)
	}
	return buf.String(), nil
}
