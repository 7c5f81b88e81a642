// Package benchmark owns what a benchmark is: its manifest (the resolved,
// pinned task list with per-task metadata, named task sets, harness and judge
// requirements, pass threshold, version and digest), the rules for benchmark
// keys, and the operator's catalog of managed benchmarks. It is pure domain
// code: it reads no files and talks to no registry.
package benchmark

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// SourceType says where a benchmark comes from.
type SourceType string

// Source types.
const (
	// Managed benchmarks come from the platform's catalog; they appear in
	// every workspace and cannot be removed.
	Managed SourceType = "managed"
	// Harbor benchmarks were added to a workspace from the Harbor registry.
	Harbor SourceType = "harbor"
)

// Valid reports whether t is a known source type.
func (t SourceType) Valid() bool { return t == Managed || t == Harbor }

// HarnessRequirement says what a run must say about the harness of each agent.
type HarnessRequirement string

// Harness requirements.
const (
	// HarnessRequired means every agent must name its harness.
	HarnessRequired HarnessRequirement = "required"
	// HarnessOptional means an agent may name a harness; without one it runs
	// the benchmark's default harness.
	HarnessOptional HarnessRequirement = "optional"
	// HarnessOfficialOnly means every agent runs the benchmark's default
	// (official) harness; naming another one is an error.
	HarnessOfficialOnly HarnessRequirement = "official-only"
)

// HarnessRequirements lists the valid requirements in documentation order.
var HarnessRequirements = []HarnessRequirement{HarnessRequired, HarnessOptional, HarnessOfficialOnly}

// Valid reports whether r is a known requirement.
func (r HarnessRequirement) Valid() bool { return slices.Contains(HarnessRequirements, r) }

// DefaultPassThreshold is the pass threshold of a benchmark that sets none.
const DefaultPassThreshold = 1.0

// Source names where a benchmark's tasks come from.
type Source struct {
	Type SourceType `json:"type"`
	// Ref is the registry spec ("terminal-bench@2.0") or, for a managed
	// benchmark kept in a local directory, that directory.
	Ref string `json:"ref"`
	// URL links to the upstream project, when known.
	URL string `json:"url,omitempty"`
}

// Judge is a benchmark's LLM-judge requirement.
type Judge struct {
	// Required is true when grading needs an LLM judge.
	Required bool `json:"required"`
	// DefaultModel is the judge model used when a run names none.
	DefaultModel string `json:"default_model,omitempty"`
	// ModelPinned is true when the benchmark's grader fixes its judge model
	// (DefaultModel, when known): a run gives only the judge's API key and
	// may not name a model (the spec's "key only" case).
	ModelPinned bool `json:"model_pinned,omitempty"`
}

// TaskLocation says where a task's files are fetched from (Harbor's registry
// fields); empty for tasks read from a local directory.
type TaskLocation struct {
	GitURL      string `json:"git_url,omitempty"`
	GitCommitID string `json:"git_commit_id,omitempty"`
	Path        string `json:"path,omitempty"`
	// ContentHash is the Harbor content hash ("sha256:<hex>") a task from
	// a package registry was verified against; the task's name is its
	// package (org/name).
	ContentHash string `json:"content_hash,omitempty"`
}

// DatasetFile is a dataset-level file of a Harbor package dataset (such as
// metric.py), kept beside the tasks.
type DatasetFile struct {
	Path string `json:"path"`
	// Digest is "sha256:<hex>" of the file's bytes.
	Digest string `json:"digest"`
	// BlobKey is where the file is stored.
	BlobKey string `json:"blob_key"`
}

// Task is one task of a manifest, with what the runner needs to execute it.
type Task struct {
	Name string `json:"name"`
	// Category is "" when the source gives none.
	Category string `json:"category,omitempty"`
	// Difficulty is conventionally easy, medium or hard; "" when the source
	// gives none.
	Difficulty string   `json:"difficulty,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	// Digest identifies the task's content ("sha256:…"); it feeds the
	// manifest digest.
	Digest   string       `json:"digest"`
	Location TaskLocation `json:"location,omitzero"`
	// AgentTimeoutSec is nil when the task sets no agent timeout.
	AgentTimeoutSec    *float64 `json:"agent_timeout_sec,omitempty"`
	VerifierTimeoutSec float64  `json:"verifier_timeout_sec,omitempty"`
	DockerImage        string   `json:"docker_image,omitempty"`
	NetworkMode        string   `json:"network_mode,omitempty"`
	CPUs               float64  `json:"cpus,omitempty"`
	MemoryMB           int      `json:"memory_mb,omitempty"`
	StorageMB          int      `json:"storage_mb,omitempty"`
	// Environment is the task's pinned image; nil in manifests synced
	// without image preparation.
	Environment *Environment `json:"environment,omitempty"`
	// Steps are a multi-step task's steps in order (Harbor's [[steps]]);
	// empty for a single-step task. The task's digest covers their files.
	Steps []TaskStep `json:"steps,omitempty"`
	// RewardStrategy is a multi-step task's multi_step_reward_strategy
	// ("mean" or "final"); "" for a single-step task.
	RewardStrategy string `json:"reward_strategy,omitempty"`
}

// TaskStep is one step of a multi-step task as the manifest keeps it.
type TaskStep struct {
	Name string `json:"name"`
	// AgentTimeoutSec is nil when neither the step nor the task sets one;
	// VerifierTimeoutSec is the step's, else the task's.
	AgentTimeoutSec    *float64 `json:"agent_timeout_sec,omitempty"`
	VerifierTimeoutSec float64  `json:"verifier_timeout_sec,omitempty"`
	// MinReward is the step's threshold per reward key (nil = none).
	MinReward map[string]float64 `json:"min_reward,omitempty"`
}

// Timeouts are the task's agent and verifier time limits over all its
// steps: a multi-step task's are the sums of its steps' (agent nil when a
// step has none), a single-step task's its own.
func (t Task) Timeouts() (agent *float64, verifier float64) {
	if len(t.Steps) == 0 {
		return t.AgentTimeoutSec, t.VerifierTimeoutSec
	}
	total := 0.0
	for _, s := range t.Steps {
		verifier += s.VerifierTimeoutSec
		if s.AgentTimeoutSec == nil {
			return nil, verifier
		}
		total += *s.AgentTimeoutSec
	}
	return &total, verifier
}

// TaskSet is a named subset of a benchmark's tasks, such as "parity" (the
// sample that published scores were measured on).
type TaskSet struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Recommended bool     `json:"recommended,omitempty"`
	Tasks       []string `json:"tasks"`
}

// Manifest is a benchmark at one resolved version: everything a run pins.
type Manifest struct {
	Key         string `json:"key"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Source      Source `json:"source"`
	// Version is the resolved source version ("2.0", "head", …).
	Version string `json:"version"`
	// Digest is ComputeDigest(Tasks).
	Digest   string             `json:"digest"`
	Tasks    []Task             `json:"tasks"`
	TaskSets map[string]TaskSet `json:"task_sets,omitempty"`

	HarnessRequirement HarnessRequirement `json:"harness_requirement"`
	// DefaultHarness is the harness published scores were measured with;
	// required when HarnessRequirement is official-only.
	DefaultHarness string `json:"default_harness,omitempty"`
	Judge          Judge  `json:"judge"`
	// PassThreshold is the reward at or above which an attempt passes, in (0, 1].
	PassThreshold float64 `json:"pass_threshold"`
	// RequiredSecrets are secret record names the benchmark itself needs
	// (for example a dataset token its verifier reads), whatever the run says.
	RequiredSecrets []string `json:"required_secrets,omitempty"`
	// Files are the dataset-level files of a package dataset.
	Files []DatasetFile `json:"files,omitempty"`
}

// CategoryCount is one category of a manifest with its number of tasks.
type CategoryCount struct {
	Name  string `json:"name"`
	Tasks int    `json:"tasks"`
}

// TaskSetCount describes one task set with its number of tasks.
type TaskSetCount struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Recommended bool   `json:"recommended"`
	Tasks       int    `json:"tasks"`
}

// Categories returns every category with its task count, sorted by name.
// Tasks without a category are not counted.
func (m Manifest) Categories() []CategoryCount {
	counts := map[string]int{}
	for _, t := range m.Tasks {
		if t.Category != "" {
			counts[t.Category]++
		}
	}
	out := make([]CategoryCount, 0, len(counts))
	for name, n := range counts {
		out = append(out, CategoryCount{Name: name, Tasks: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// TaskSetCounts returns every task set with its task count, sorted by name.
func (m Manifest) TaskSetCounts() []TaskSetCount {
	out := make([]TaskSetCount, 0, len(m.TaskSets))
	for _, s := range m.TaskSets {
		out = append(out, TaskSetCount{Name: s.Name, Description: s.Description, Recommended: s.Recommended, Tasks: len(s.Tasks)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Task returns the task called name.
func (m Manifest) Task(name string) (Task, bool) {
	for _, t := range m.Tasks {
		if t.Name == name {
			return t, true
		}
	}
	return Task{}, false
}

// TaskNames returns the task names in manifest order.
func (m Manifest) TaskNames() []string {
	names := make([]string, len(m.Tasks))
	for i, t := range m.Tasks {
		names[i] = t.Name
	}
	return names
}

// EffectivePassThreshold returns the manifest's pass threshold, or
// DefaultPassThreshold when it has none.
func (m Manifest) EffectivePassThreshold() float64 {
	if m.PassThreshold == 0 {
		return DefaultPassThreshold
	}
	return m.PassThreshold
}

// Validate checks the manifest's invariants and reports every problem it finds.
func (m Manifest) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !ValidKey(m.Key) {
		add("key %q must match %s", m.Key, keyPattern)
	}
	if m.Name == "" {
		add("name is empty")
	}
	if !m.Source.Type.Valid() {
		add("source type %q must be managed or harbor", m.Source.Type)
	}
	if m.Source.Ref == "" {
		add("source ref is empty")
	}
	if m.Version == "" {
		add("version is empty")
	}
	errs = append(errs, validateTasks(m.Tasks)...)
	if want := ComputeDigest(m.Tasks); m.Digest != want {
		add("digest %q does not match the task list (want %q)", m.Digest, want)
	}
	errs = append(errs, validateTaskSets(m.TaskSets, m.Tasks)...)
	errs = append(errs, validatePolicy(m.HarnessRequirement, m.DefaultHarness, m.PassThreshold)...)
	if len(errs) > 0 {
		return fmt.Errorf("manifest %q: %w", m.Key, errors.Join(errs...))
	}
	return nil
}

func validateTasks(tasks []Task) []error {
	var errs []error
	seen := make(map[string]bool, len(tasks))
	for i, t := range tasks {
		switch {
		case t.Name == "":
			errs = append(errs, fmt.Errorf("tasks[%d]: name is empty", i))
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("tasks[%d]: task %q is listed twice", i, t.Name))
		}
		seen[t.Name] = true
		if t.Digest == "" {
			errs = append(errs, fmt.Errorf("tasks[%d] (%s): digest is empty", i, t.Name))
		}
	}
	return errs
}

func validateTaskSets(sets map[string]TaskSet, tasks []Task) []error {
	known := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		known[t.Name] = true
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(sets)) {
		s := sets[name]
		if s.Name != name {
			errs = append(errs, fmt.Errorf("task set %q: name field is %q", name, s.Name))
		}
		if len(s.Tasks) == 0 {
			errs = append(errs, fmt.Errorf("task set %q: has no tasks", name))
		}
		var unknown []string
		seen := map[string]bool{}
		for _, t := range s.Tasks {
			if !known[t] {
				unknown = append(unknown, t)
			}
			if seen[t] {
				errs = append(errs, fmt.Errorf("task set %q: task %q is listed twice", name, t))
			}
			seen[t] = true
		}
		if len(unknown) > 0 {
			errs = append(errs, fmt.Errorf("task set %q: unknown tasks %s", name, QuoteList(unknown, 10)))
		}
	}
	return errs
}

func validatePolicy(req HarnessRequirement, defaultHarness string, threshold float64) []error {
	var errs []error
	if !req.Valid() {
		errs = append(errs, fmt.Errorf("harness requirement %q must be one of %s", req, joinRequirements()))
	}
	if req == HarnessOfficialOnly && defaultHarness == "" {
		errs = append(errs, errors.New("harness requirement official-only needs a default harness"))
	}
	if !(threshold > 0 && threshold <= 1) {
		errs = append(errs, fmt.Errorf("pass threshold %v must be in (0, 1]", threshold))
	}
	return errs
}

func joinRequirements() string {
	s := ""
	for i, r := range HarnessRequirements {
		if i > 0 {
			s += ", "
		}
		s += string(r)
	}
	return s
}

// QuoteList renders names as a comma-separated list of quoted names, showing
// at most limit of them and saying how many more there are.
func QuoteList(names []string, limit int) string {
	s := ""
	for i, n := range names {
		if i == limit {
			return fmt.Sprintf("%s, … (%d more, %d in all)", s, len(names)-limit, len(names))
		}
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q", n)
	}
	return s
}
