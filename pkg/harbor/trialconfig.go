package harbor

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
)

// TrialConfigFile is the name of a trial's config file in its trial
// directory (Harbor's TrialPaths.config_path).
const TrialConfigFile = "config.json"

// TrialConfig is Harbor's TrialConfig: what one trial ran (task, agent,
// environment, verifier). Only the fields gauntlet fills are modelled;
// Harbor's defaults stand for the others, and a config Harbor wrote is kept
// verbatim in TrialResult.Config, never decoded into this type.
type TrialConfig struct {
	Task      TrialTask `json:"task"`
	TrialName string    `json:"trial_name"`
	// TrialsDir is the directory the trial directory sits in (the job dir).
	TrialsDir         string           `json:"trials_dir,omitempty"`
	TimeoutMultiplier float64          `json:"timeout_multiplier"`
	Agent             TrialAgent       `json:"agent"`
	Environment       TrialEnvironment `json:"environment"`
	Verifier          TrialVerifier    `json:"verifier"`
	// JobID is the UUID of the job (gauntlet: the run) the trial belongs to.
	JobID string `json:"job_id,omitempty"`
}

// TrialTask is Harbor's TaskConfig: where the task came from. Exactly one
// of Path (a local or git task) and Name (a package task, "org/name") is set.
type TrialTask struct {
	Path        string `json:"path,omitempty"`
	GitURL      string `json:"git_url,omitempty"`
	GitCommitID string `json:"git_commit_id,omitempty"`
	Name        string `json:"name,omitempty"`
	Ref         string `json:"ref,omitempty"`
	// Source is the dataset the task was taken from.
	Source string `json:"source,omitempty"`
}

// TrialAgent is Harbor's AgentConfig: the harness, its model and the
// environment it was given (sensitive values as ${NAME} templates).
type TrialAgent struct {
	Name      string            `json:"name"`
	ModelName string            `json:"model_name,omitempty"`
	Kwargs    map[string]any    `json:"kwargs,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
}

// TrialEnvironment is Harbor's EnvironmentConfig. Type names one of
// Harbor's environment types; ImportPath names any other implementation
// (gauntlet's sandboxes are one), in which case Type stays empty.
type TrialEnvironment struct {
	Type       string            `json:"type,omitempty"`
	ImportPath string            `json:"import_path,omitempty"`
	Kwargs     map[string]any    `json:"kwargs,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
}

// TrialVerifier is Harbor's VerifierConfig.
type TrialVerifier struct {
	Env     map[string]string `json:"env,omitempty"`
	Disable bool              `json:"disable,omitempty"`
}

// Validate checks what Harbor's TrialConfig validators check of the fields
// modelled here: a task is either a path or an "org/name" package, a ref
// needs a name, a commit needs a git URL, the timeout multiplier is
// positive. (An agent without a name is Harbor's oracle.)
func (c TrialConfig) Validate() error {
	var errs []error
	t := c.Task
	switch {
	case t.Path == "" && t.Name == "":
		errs = append(errs, errors.New("trial config: task: either path or name must be set"))
	case t.Path != "" && t.Name != "":
		errs = append(errs, errors.New("trial config: task: cannot set both path and name"))
	}
	if t.Ref != "" && t.Name == "" {
		errs = append(errs, errors.New("trial config: task: ref requires name"))
	}
	if t.GitCommitID != "" && t.GitURL == "" {
		errs = append(errs, errors.New("trial config: task: git_commit_id requires git_url"))
	}
	if c.TimeoutMultiplier <= 0 {
		errs = append(errs, fmt.Errorf("trial config: timeout_multiplier must be > 0, got %g", c.TimeoutMultiplier))
	}
	return errors.Join(errs...)
}

// Raw encodes c for TrialResult.Config after validating it.
func (c TrialConfig) Raw() (json.RawMessage, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode trial config: %w", err)
	}
	return data, nil
}

// sensitiveEnvKey is Harbor's rule (utils/env.py) for variables whose value
// is never written to a config file.
var sensitiveEnvKey = regexp.MustCompile(`(?i)KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL|AUTH`)

// SensitiveEnvKey reports whether Harbor treats the variable name as
// sensitive (it contains KEY, SECRET, TOKEN, PASSWORD, CREDENTIAL or AUTH).
func SensitiveEnvKey(name string) bool { return sensitiveEnvKey.MatchString(name) }

// ConfigEnv is the env of a trial config as Harbor persists it: literal
// variables keep their values unless their name is sensitive, and those and
// every secret (by name only) become "${NAME}" templates, so no secret
// value is ever written. It returns nil when there is nothing to record.
func ConfigEnv(literal map[string]string, secretNames []string) map[string]string {
	if len(literal) == 0 && len(secretNames) == 0 {
		return nil
	}
	out := make(map[string]string, len(literal)+len(secretNames))
	for _, k := range slices.Sorted(maps.Keys(literal)) {
		if SensitiveEnvKey(k) {
			out[k] = "${" + k + "}"
		} else {
			out[k] = literal[k]
		}
	}
	for _, k := range secretNames {
		out[k] = "${" + k + "}"
	}
	return out
}
