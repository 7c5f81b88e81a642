package harbor

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/tomldoc"
)

// DefaultVerifierTimeoutSec is Harbor's verifier timeout when task.toml sets none.
const DefaultVerifierTimeoutSec = 600.0

// DefaultBuildTimeoutSec is Harbor's environment build timeout when task.toml sets none.
const DefaultBuildTimeoutSec = 600.0

// DefaultSchemaVersion is the schema version of a task.toml that names none.
const DefaultSchemaVersion = "1.4"

// Network modes Harbor accepts for [environment], [agent] and [verifier].
const (
	NetworkPublic    = "public"
	NetworkNone      = "no-network"
	NetworkAllowlist = "allowlist"
)

// TaskConfig is a parsed task.toml. Field meanings and defaults follow Harbor's
// TaskConfig model; keys Harbor does not define are ignored, as Harbor does.
type TaskConfig struct {
	// Version is the task schema version: `schema_version`, or the legacy
	// top-level `version` of schema 1.0 files; DefaultSchemaVersion when absent.
	Version string
	// Package is the optional [task] section (registry package identity).
	Package *PackageInfo
	// Metadata is the free-form [metadata] table.
	Metadata    Metadata
	Agent       AgentConfig
	Verifier    VerifierConfig
	Environment EnvironmentConfig
	Solution    SolutionConfig
	// Source is the optional top-level `source` (the dataset a task came from).
	Source string
	// Steps is [[steps]]: a multi-step task's steps in order (steps.go);
	// nil for a single-step task.
	Steps []StepConfig
	// MultiStepRewardStrategy is StrategyMean or StrategyFinal (mean when
	// a multi-step task sets none); "" for a single-step task that sets none.
	MultiStepRewardStrategy string
	// Artifacts are the task-level `artifacts` (artifacts.go).
	Artifacts []Artifact
	// Unsupported names each task.toml key Harbor defines that gauntlet
	// does not run yet, with what it is (e.g. "[[steps]] (multi-step
	// tasks)"). A task with any is unavailable, never run as a plain task.
	Unsupported []string
}

// PackageInfo is the [task] section: the task's registry package identity.
type PackageInfo struct {
	Name        string // "org/name"
	Version     string
	Description string
	Authors     []Author
	Keywords    []string
}

// Author is one entry of [task].authors.
type Author struct {
	Name  string
	Email string
}

// AgentConfig is the [agent] section.
type AgentConfig struct {
	// TimeoutSec is the agent's time limit in seconds; nil means no timeout.
	TimeoutSec *float64
	// User runs the agent as this user name or UID; empty = the image default.
	User string
	// NetworkMode overrides the environment's network mode for the agent
	// phase; empty = inherit.
	NetworkMode  string
	AllowedHosts []string
}

// VerifierConfig is the [verifier] section.
type VerifierConfig struct {
	// TimeoutSec is the verifier's time limit in seconds (default 600).
	TimeoutSec float64
	// Env holds environment variables for tests/test.sh.
	Env          map[string]string
	User         string
	NetworkMode  string
	AllowedHosts []string
	// EnvironmentMode is `environment_mode` as written: "", VerifierShared
	// or VerifierSeparate (see Separate, verifierenv.go).
	EnvironmentMode string
	// Environment is [verifier.environment] (nil = absent).
	Environment *EnvironmentConfig
	// Collect are the [[verifier.collect]] hooks (collect.go).
	Collect []CollectHook
}

// EnvironmentConfig is the [environment] section. Zero resource values mean
// the task declares none and the sandbox provider's default applies (Harbor
// injects no defaults either).
type EnvironmentConfig struct {
	BuildTimeoutSec float64 // default 600
	DockerImage     string
	CPUs            float64
	MemoryMB        int // also set from the deprecated `memory = "2G"`
	StorageMB       int // also set from the deprecated `storage = "10G"`
	GPUs            int
	GPUTypes        []string
	// NetworkMode is public, no-network or allowlist (default public); the
	// deprecated `allow_internet = false` maps to no-network.
	NetworkMode  string
	AllowedHosts []string
	Env          map[string]string
	Workdir      string
	// Healthcheck is [environment.healthcheck]; nil when the task has none.
	Healthcheck *HealthcheckConfig
}

// SolutionConfig is the [solution] section.
type SolutionConfig struct {
	Env map[string]string
}

// Metadata is the free-form [metadata] table of task.toml.
type Metadata map[string]any

// Difficulty returns metadata `difficulty`, or "" when absent.
func (m Metadata) Difficulty() string { return m.stringValue("difficulty") }

// Category returns metadata `category` when it is a category name a run
// config can select (benchmark.SegmentRule), else "". [metadata] is free-form
// in Harbor: a category with spaces is kept in the table, never an error.
func (m Metadata) Category() string {
	c := m.stringValue("category")
	if !benchmark.ValidCategory(c) {
		return ""
	}
	return c
}

// Tags returns metadata `tags`: its strings when it is an array, the one
// tag when it is a string; empty (never nil) when absent.
func (m Metadata) Tags() []string {
	var items []any
	switch v := m["tags"].(type) {
	case []any:
		items = v
	case string:
		items = []any{v}
	}
	tags := make([]string, 0, len(items))
	for _, item := range items {
		if s, ok := item.(string); ok && s != "" {
			tags = append(tags, s)
		}
	}
	return tags
}

func (m Metadata) stringValue(key string) string {
	s, _ := m[key].(string)
	return s
}

// AgentTimeout is the agent time limit; 0 means none.
func (c TaskConfig) AgentTimeout() time.Duration {
	if c.Agent.TimeoutSec == nil {
		return 0
	}
	return seconds(*c.Agent.TimeoutSec)
}

// VerifierTimeout is the verifier time limit; 0 means none.
func (c TaskConfig) VerifierTimeout() time.Duration { return seconds(c.Verifier.TimeoutSec) }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

var schemaVersionPattern = regexp.MustCompile(`^1\.[0-9]+$`)

// ParseTaskConfig parses the contents of a task.toml. file names the file in
// errors. Every invalid field is reported, each as a *FieldError naming the
// file and the dotted field, joined into one error.
func ParseTaskConfig(data []byte, file string) (TaskConfig, error) {
	var doc map[string]any
	if _, err := tomldoc.Decode(data, &doc); err != nil {
		return TaskConfig{}, fmt.Errorf("%s: %w", file, err)
	}
	r := &fieldReader{file: file}
	cfg := TaskConfig{
		Version:     r.schemaVersion(doc),
		Package:     r.packageInfo(doc),
		Metadata:    r.metadata(doc),
		Agent:       r.agent(doc),
		Verifier:    r.verifier(doc),
		Environment: r.environment(doc),
		Solution:    SolutionConfig{Env: r.envMap(r.table(doc, "", "solution"), "solution", "env")},
	}
	cfg.Source, _ = r.str(doc, "", "source")
	cfg.Steps, cfg.MultiStepRewardStrategy = r.steps(doc)
	cfg.Artifacts = r.artifacts(doc, "")
	cfg.Unsupported = append(r.unsupportedKeys(doc), r.unsupportedStepKeys(doc)...)
	if len(r.errs) > 0 {
		return TaskConfig{}, errors.Join(r.errs...)
	}
	return cfg, nil
}

func (r *fieldReader) schemaVersion(doc map[string]any) string {
	key := "schema_version"
	if _, ok := doc[key]; !ok {
		key = "version" // schema 1.0 spelling
	}
	v, ok := r.str(doc, "", key)
	if !ok {
		return DefaultSchemaVersion
	}
	if !schemaVersionPattern.MatchString(v) {
		r.fail(key, "unsupported schema version %q (supported: 1.x)", v)
	}
	return v
}

func (r *fieldReader) packageInfo(doc map[string]any) *PackageInfo {
	if _, ok := doc["task"]; !ok {
		return nil
	}
	t := r.table(doc, "", "task")
	p := &PackageInfo{}
	if _, present := t["name"]; !present {
		r.fail("task.name", "is required when [task] is present")
	} else if name, ok := r.str(t, "task", "name"); ok {
		org, short, found := strings.Cut(name, "/")
		if !found || org == "" || short == "" || strings.Contains(short, "/") {
			r.fail("task.name", "must be \"org/name\", got %q", name)
		}
		p.Name = name
	}
	p.Version, _ = r.str(t, "task", "version")
	p.Description, _ = r.str(t, "task", "description")
	p.Keywords, _ = r.strList(t, "task", "keywords")
	p.Authors = r.authors(t)
	return p
}

func (r *fieldReader) authors(t map[string]any) []Author {
	v, ok := t["authors"]
	if !ok {
		return nil
	}
	var list []any
	switch a := v.(type) {
	case []any: // authors = [{...}]
		list = a
	case []map[string]any: // [[task.authors]]
		for _, m := range a {
			list = append(list, m)
		}
	default:
		r.fail("task.authors", "must be an array of tables with name and email, got %s", tomlType(v))
		return nil
	}
	authors := make([]Author, 0, len(list))
	for i, item := range list {
		prefix := "task.authors[" + strconv.Itoa(i) + "]"
		m, ok := item.(map[string]any)
		if !ok {
			r.fail(prefix, "must be a table with name and email, got %s", tomlType(item))
			continue
		}
		var au Author
		au.Name, _ = r.str(m, prefix, "name")
		au.Email, _ = r.str(m, prefix, "email")
		if _, present := m["name"]; !present {
			r.fail(prefix+".name", "is required")
		}
		authors = append(authors, au)
	}
	return authors
}

// metadata keeps [metadata] as written: Harbor reads it as a free-form
// table (dict[str, Any]), so no value of it makes a task invalid.
func (r *fieldReader) metadata(doc map[string]any) Metadata {
	return Metadata(r.table(doc, "", "metadata"))
}

func (r *fieldReader) agent(doc map[string]any) AgentConfig {
	t := r.table(doc, "", "agent")
	a := AgentConfig{User: r.user(t, "agent")}
	if v, ok := r.positive(t, "agent", "timeout_sec"); ok {
		a.TimeoutSec = &v
	}
	a.NetworkMode, a.AllowedHosts = r.networkPolicy(t, "agent", "")
	return a
}

func (r *fieldReader) verifier(doc map[string]any) VerifierConfig {
	t := r.table(doc, "", "verifier")
	v := VerifierConfig{TimeoutSec: DefaultVerifierTimeoutSec, User: r.user(t, "verifier")}
	if s, ok := r.positive(t, "verifier", "timeout_sec"); ok {
		v.TimeoutSec = s
	}
	v.Env = r.envMap(t, "verifier", "env")
	v.Collect = r.collectHooks(t, "verifier")
	v.NetworkMode, v.AllowedHosts = r.networkPolicy(t, "verifier", "")
	r.verifierMode(t, &v)
	return v
}

func (r *fieldReader) environment(doc map[string]any) EnvironmentConfig {
	return r.environmentTable(r.table(doc, "", "environment"), "environment")
}

// environmentTable reads an environment table ([environment], or
// [verifier.environment], which has the same schema); p is its dotted name.
func (r *fieldReader) environmentTable(t map[string]any, p string) EnvironmentConfig {
	e := EnvironmentConfig{BuildTimeoutSec: DefaultBuildTimeoutSec}
	if s, ok := r.positive(t, p, "build_timeout_sec"); ok {
		e.BuildTimeoutSec = s
	}
	e.DockerImage, _ = r.str(t, p, "docker_image")
	e.CPUs, _ = r.number(t, p, "cpus")
	e.MemoryMB = r.sizeMB(t, p, "memory")
	e.StorageMB = r.sizeMB(t, p, "storage")
	e.GPUs, _ = r.integer(t, p, "gpus")
	e.GPUTypes, _ = r.strList(t, p, "gpu_types")
	e.Env = r.envMap(t, p, "env")
	if wd, ok := r.str(t, p, "workdir"); ok {
		// Harbor passes it as `docker exec -w`, which takes only an
		// absolute directory.
		if !path.IsAbs(wd) {
			r.fail(joinKey(p, "workdir"), "must be an absolute directory, got %q", wd)
		} else {
			e.Workdir = path.Clean(wd)
		}
	}
	e.Healthcheck = r.healthcheck(t, p)
	fallback := NetworkPublic
	if allow, ok := r.boolean(t, p, "allow_internet"); ok && !allow {
		fallback = NetworkNone // deprecated spelling of network_mode = "no-network"
	}
	e.NetworkMode, e.AllowedHosts = r.networkPolicy(t, p, fallback)
	return e
}

// sizeMB reads `<name>_mb`, or migrates the deprecated `<name> = "2G"` form.
// Both present and disagreeing is an error, as in Harbor.
func (r *fieldReader) sizeMB(t map[string]any, p, name string) int {
	mb, hasMB := r.integer(t, p, name+"_mb")
	legacy, hasLegacy := r.str(t, p, name)
	if !hasLegacy {
		return mb
	}
	migrated, err := parseSizeMB(legacy)
	if err != nil {
		r.fail(p+"."+name, "%v", err)
		return mb
	}
	if hasMB && mb != migrated {
		r.fail(p+"."+name, "%q (%d MB) conflicts with %s_mb = %d", legacy, migrated, name, mb)
	}
	return migrated
}

// parseSizeMB converts Harbor's deprecated size strings ("2G", "512M",
// "1048576K") to megabytes, rounding down as Harbor does.
func parseSizeMB(s string) (int, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if u == "" {
		return 0, fmt.Errorf("invalid size %q: want a number with unit G, M or K, e.g. \"2G\"", s)
	}
	var scale float64
	switch u[len(u)-1] {
	case 'G':
		scale = 1024
	case 'M':
		scale = 1
	case 'K':
		scale = 1.0 / 1024
	default:
		return 0, fmt.Errorf("invalid size %q: want a number with unit G, M or K, e.g. \"2G\"", s)
	}
	n, err := strconv.ParseFloat(u[:len(u)-1], 64)
	if err != nil || n < 0 || n > 1<<30 {
		return 0, fmt.Errorf("invalid size %q: want a number with unit G, M or K, e.g. \"2G\"", s)
	}
	return int(n * scale), nil
}

// networkPolicy reads network_mode and allowed_hosts of one section. fallback
// is the mode when the section sets none ("" = inherit). Hosts given without a
// mode imply allowlist; hosts with another mode are an error.
func (r *fieldReader) networkPolicy(t map[string]any, prefix, fallback string) (string, []string) {
	mode, hasMode := r.str(t, prefix, "network_mode")
	hosts, _ := r.strList(t, prefix, "allowed_hosts")
	if hasMode {
		switch mode {
		case NetworkPublic, NetworkNone, NetworkAllowlist:
		default:
			r.fail(prefix+".network_mode", "must be %q, %q or %q, got %q", NetworkPublic, NetworkNone, NetworkAllowlist, mode)
			return fallback, nil
		}
	}
	switch {
	case len(hosts) > 0 && !hasMode:
		mode = NetworkAllowlist
	case len(hosts) > 0 && mode != NetworkAllowlist:
		r.fail(prefix+".allowed_hosts", "is only valid with network_mode = %q", NetworkAllowlist)
	case !hasMode:
		mode = fallback
	}
	return mode, hosts
}
