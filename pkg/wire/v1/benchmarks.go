package v1

import "time"

// BenchmarkView is a benchmark as the list shows it.
type BenchmarkView struct {
	Key         string `json:"key"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Source      Source `json:"source"`
	// Status is the sync status: pending, syncing, ready or failed.
	Status    string       `json:"status"`
	Progress  SyncProgress `json:"progress"`
	SyncError string       `json:"sync_error,omitempty"`
	// SyncWarning is what the source warned about (a yanked version).
	SyncWarning   string `json:"sync_warning,omitempty"`
	TaskCount     int    `json:"task_count"`
	CategoryCount int    `json:"category_count"`
	// Version and Digest name the ready manifest version runs pin.
	Version  string    `json:"version,omitempty"`
	Digest   string    `json:"digest,omitempty"`
	RunCount int       `json:"run_count"`
	LastRun  *RunBrief `json:"last_run"`
	// RegistryCredentials are the registry logins the sync uses, by secret
	// record name; empty when none.
	RegistryCredentials []RegistryCredential `json:"registry_credentials"`
	// Removable is false for managed benchmarks.
	Removable bool      `json:"removable"`
	UpdatedAt time.Time `json:"updated_at"`
	// Images is the image preparation of the version a sync stored and is
	// still preparing (null when none): runs may select its ready tasks
	// already.
	Images *ImageProgress `json:"images"`
}

// ImageProgress is how far a sync is in preparing the task images of a
// manifest version, with each task's state.
type ImageProgress struct {
	// Version is the manifest version being prepared (what a run submitted
	// now pins).
	Version string `json:"version"`
	// Ready, Preparing and Unavailable count the tasks in each state.
	Ready       int `json:"ready"`
	Preparing   int `json:"preparing"`
	Unavailable int `json:"unavailable"`
	Total       int `json:"total"`
	// Label says it in words: "preparing images 7 / 16" (ready or
	// unavailable of all).
	Label string      `json:"label"`
	Tasks []TaskImage `json:"tasks"`
}

// TaskImage is one task's image state during a sync.
type TaskImage struct {
	Name string `json:"name"`
	// State is preparing, ready or unavailable.
	State string `json:"state"`
	// Reason says why an unavailable task is.
	Reason string `json:"reason,omitempty"`
	// BuildLog is the API path of the build log of a Dockerfile task,
	// readable (and followable) while it builds.
	BuildLog string `json:"build_log,omitempty"`
}

// SyncProgress counts the steps of a sync's phase.
type SyncProgress struct {
	Synced int `json:"synced"`
	Total  int `json:"total"`
	// Phase is tasks (fetching tasks) or images (preparing task images)
	// while syncing; empty otherwise.
	Phase string `json:"phase,omitempty"`
	// Label says it in words: "Fetching tasks · 4 / 15", "Preparing images · 3 / 15".
	Label string `json:"label,omitempty"`
}

// RunBrief names a run.
type RunBrief struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
}

// BenchmarkList is the answer of GET /v1/benchmarks.
type BenchmarkList struct {
	Benchmarks []BenchmarkView `json:"benchmarks"`
}

// BenchmarkDetail is the answer of GET /v1/benchmarks/{key}: the list view
// plus the ready manifest, or, while a first sync prepares the images, the
// version it prepares (its tasks' environments say which are ready); null
// before that.
type BenchmarkDetail struct {
	BenchmarkView
	Manifest *ManifestView `json:"manifest"`
}

// ManifestView is a manifest version as the API shows it.
type ManifestView struct {
	Version         string              `json:"version"`
	Digest          string              `json:"digest"`
	Tasks           []TaskView          `json:"tasks"`
	Categories      []CategoryView      `json:"categories"`
	TaskSets        []TaskSetView       `json:"task_sets"`
	Harness         HarnessView         `json:"harness"`
	Judge           Judge               `json:"judge"`
	PassThreshold   float64             `json:"pass_threshold"`
	RequiredSecrets []string            `json:"required_secrets"`
	Difficulties    map[string]int      `json:"difficulties"`
	TaskSetTasks    map[string][]string `json:"task_set_tasks"`
	// UnavailableTasks are tasks whose image could not be had at sync.
	UnavailableTasks []UnavailableTask `json:"unavailable_tasks"`
	// Check is the environment check of this version; null until one ran.
	Check *EnvCheckView `json:"check"`
}

// TaskView is one task; category and difficulty are null when the source
// gives none.
type TaskView struct {
	Name       string   `json:"name"`
	Category   *string  `json:"category"`
	Difficulty *string  `json:"difficulty"`
	Tags       []string `json:"tags"`
	// Environment is the task's pinned image; null in manifests synced
	// without image preparation.
	Environment *TaskEnvironment `json:"environment"`
	// Check is the environment check's verdict (ok, broken, trivial,
	// unavailable); null until a check ran on this manifest version.
	Check *string `json:"check"`
}

// TaskEnvironment is where a task's image comes from and what it is pinned to.
type TaskEnvironment struct {
	// Source is pull (docker_image), build (environment/Dockerfile) or
	// default (the platform's default image).
	Source string `json:"source"`
	// Image is the reference as the task (or platform) states it.
	Image string `json:"image,omitempty"`
	// Pinned is the digest reference every attempt runs.
	Pinned   string `json:"pinned,omitempty"`
	BuildKey string `json:"build_key,omitempty"`
	// BuildLog is the API path of the build log, for Dockerfile tasks.
	BuildLog string `json:"build_log,omitempty"`
	// Unavailable says why the task cannot be attempted.
	Unavailable string `json:"unavailable,omitempty"`
	// State is preparing (its sync still builds or pulls it), ready or
	// unavailable.
	State string `json:"state"`
	// Verifier is the image of the task's separate verifier (built from
	// its tests/ or pulled, pinned like the task's); nil when the
	// verifier shares the task's environment.
	Verifier *TaskEnvironment `json:"verifier,omitempty"`
}

// UnavailableTask is a task that gets no attempts, and why.
type UnavailableTask struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// EnvCheckView is the environment check of a manifest version: the oracle
// and nop run once per task in its real environment; broken tasks (the
// oracle fails) and trivial ones (nop passes) are listed.
type EnvCheckView struct {
	Version string `json:"version"`
	// Status is CheckNone (no check of the ready version yet), running or
	// done.
	Status string `json:"status"`
	// Message says, with CheckNone, that no check ran and how to start one.
	Message string   `json:"message,omitempty"`
	Run     string   `json:"run,omitempty"`
	Broken  []string `json:"broken"`
	Trivial []string `json:"trivial"`
	Checked int      `json:"checked"`
	// Flagged explains each broken and trivial task of a done check (the
	// outcomes of its oracle and nop attempts), so a reader can tell why
	// without opening the check's run.
	Flagged   []EnvCheckTask `json:"flagged"`
	StartedAt *time.Time     `json:"started_at"`
	EndedAt   *time.Time     `json:"ended_at"`
}

// CheckNone is the status of GET /v1/benchmarks/{key}/check before any
// environment check of the benchmark's ready version.
const CheckNone = "none"

// EnvCheckTask is one task an environment check flagged, and why.
type EnvCheckTask struct {
	Task string `json:"task"`
	// Verdict is broken or trivial.
	Verdict string `json:"verdict"`
	// Detail says why: "the oracle (the task's own solution) does not
	// pass: failed", "nop (doing nothing) passes".
	Detail string `json:"detail"`
}

// CategoryView is a category with its task count.
type CategoryView struct {
	Name  string `json:"name"`
	Tasks int    `json:"tasks"`
}

// TaskSetView is a named task set.
type TaskSetView struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Recommended bool   `json:"recommended"`
	Tasks       int    `json:"tasks"`
}

// HarnessView is a benchmark's harness requirement.
type HarnessView struct {
	Requirement string `json:"requirement"`
	Default     string `json:"default,omitempty"`
}

// AddBenchmarkRequest is the body of POST /v1/benchmarks.
type AddBenchmarkRequest struct {
	// Source is a Harbor registry.json dataset, "name" or "name@version",
	// or a Harbor package dataset, "org/name" or "org/name@ref"; empty
	// with Repo.
	Source string `json:"source,omitempty"`
	// Repo is a git repository whose task directories are the dataset,
	// "https://host/org/name[@ref]".
	Repo string `json:"repo,omitempty"`
	// Path is the directory of Repo holding the task directories (default
	// "tasks").
	Path string `json:"path,omitempty"`
	// APIKeySecret names the workspace secret record holding a Harbor API
	// key, for private package datasets.
	APIKeySecret string `json:"api_key_secret,omitempty"`
	// RegistryCredentials give the sync a login per container registry
	// for the task images (pull and Dockerfile bases): each names a
	// workspace secret record holding "username:password".
	RegistryCredentials []RegistryCredential `json:"registry_credentials,omitempty"`
}

// RegistryCredential names the workspace secret record ("username:password")
// the sync logs in to Registry (host[:port], e.g. "ghcr.io") with. Names
// only: a value is never shown.
type RegistryCredential struct {
	Registry string `json:"registry"`
	Secret   string `json:"secret"`
}

// Source says where a benchmark comes from.
type Source struct {
	// Type is managed (the platform's catalog) or harbor (added from the
	// Harbor registry).
	Type string `json:"type"`
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
	// ModelPinned is true when the grader fixes its model: a run gives only
	// execution.judge_api_key_secret and may not set execution.judge_model.
	ModelPinned bool `json:"model_pinned,omitempty"`
}
