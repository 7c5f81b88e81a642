package benchmark

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/tomldoc"

	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// Catalog is the operator's list of managed benchmarks: the ones every
// workspace sees and none can remove.
type Catalog struct {
	Benchmarks []CatalogEntry
}

// CatalogEntry is one managed benchmark as the operator describes it. Its task
// list comes from its source when the platform syncs it; Manifest combines the
// two.
type CatalogEntry struct {
	Key         string
	Name        string
	Description string
	// SourceURL links to the upstream project.
	SourceURL string
	// Source is a registry spec "name@version"; empty when Dir is set.
	Source string
	// Registry is the registry.json (path or URL) Source resolves against; ""
	// means the platform's configured registry.
	Registry string
	// Dir is a local Harbor dataset directory; empty when Source is set.
	Dir                string
	HarnessRequirement HarnessRequirement
	DefaultHarness     string
	Judge              Judge
	PassThreshold      float64
	RequiredSecrets    []string
	TaskSets           map[string]TaskSet
}

// Lookup returns the entry whose key is key.
func (c Catalog) Lookup(key string) (CatalogEntry, bool) {
	for _, e := range c.Benchmarks {
		if e.Key == key {
			return e, true
		}
	}
	return CatalogEntry{}, false
}

// Ref returns the entry's source reference: the registry spec, else the directory.
func (e CatalogEntry) Ref() string {
	if e.Source != "" {
		return e.Source
	}
	return e.Dir
}

// Manifest builds the entry's manifest from the task list its source resolved
// to at version, computing the digest, and validates it (task sets must name
// existing tasks).
func (e CatalogEntry) Manifest(version string, tasks []Task) (Manifest, error) {
	m := Manifest{
		Key:                e.Key,
		Name:               e.Name,
		Description:        e.Description,
		Source:             Source{Type: Managed, Ref: e.Ref(), URL: e.SourceURL},
		Version:            version,
		Digest:             ComputeDigest(tasks),
		Tasks:              tasks,
		TaskSets:           e.TaskSets,
		HarnessRequirement: e.HarnessRequirement,
		DefaultHarness:     e.DefaultHarness,
		Judge:              e.Judge,
		PassThreshold:      e.PassThreshold,
		RequiredSecrets:    e.RequiredSecrets,
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// HarborManifest builds the manifest of a benchmark added from the Harbor
// registry, with the defaults such benchmarks get: harness optional, no
// default harness, no judge, pass threshold 1.0. The key is KeyFor(name, version).
func HarborManifest(name, version, description string, tasks []Task) (Manifest, error) {
	m := Manifest{
		Key:                KeyFor(name, version),
		Name:               name,
		Description:        description,
		Source:             Source{Type: Harbor, Ref: name + "@" + version},
		Version:            version,
		Digest:             ComputeDigest(tasks),
		Tasks:              tasks,
		HarnessRequirement: HarnessOptional,
		PassThreshold:      DefaultPassThreshold,
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// CatalogProblem is one problem in a catalog file, at a key path such as
// "benchmarks[1].pass_threshold".
type CatalogProblem struct {
	Key     string
	Message string
}

// CatalogError lists every problem ParseCatalog found in a file.
type CatalogError struct {
	File     string
	Problems []CatalogProblem
}

// Error implements error.
func (e *CatalogError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "catalog %s: ", e.File)
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		if p.Key != "" {
			b.WriteString(p.Key + ": ")
		}
		b.WriteString(p.Message)
	}
	return b.String()
}

type catalogFile struct {
	Benchmarks []catalogBenchmark `toml:"benchmarks"`
}

type catalogBenchmark struct {
	Key                string           `toml:"key"`
	Name               string           `toml:"name"`
	Description        string           `toml:"description"`
	SourceURL          string           `toml:"source_url"`
	Source             string           `toml:"source"`
	Registry           string           `toml:"registry"`
	Dir                string           `toml:"dir"`
	HarnessRequirement string           `toml:"harness_requirement"`
	DefaultHarness     string           `toml:"default_harness"`
	JudgeRequired      bool             `toml:"judge_required"`
	JudgeModel         string           `toml:"judge_model"`
	JudgeModelPinned   bool             `toml:"judge_model_pinned"`
	PassThreshold      *float64         `toml:"pass_threshold"`
	RequiredSecrets    []string         `toml:"required_secrets"`
	TaskSets           []catalogTaskSet `toml:"task_sets"`
}

type catalogTaskSet struct {
	Name        string   `toml:"name"`
	Description string   `toml:"description"`
	Recommended bool     `toml:"recommended"`
	Tasks       []string `toml:"tasks"`
}

var (
	taskSetNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	harnessNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
)

// ValidHarnessName reports whether name is a valid harness name: lowercase
// letters, digits, '.', '_' and '-', starting with a letter or digit, at most
// 63 bytes.
func ValidHarnessName(name string) bool { return harnessNameRE.MatchString(name) }

// ValidTaskSetName reports whether name is a valid task set name (same shape
// as a harness name).
func ValidTaskSetName(name string) bool { return taskSetNameRE.MatchString(name) }

// ParseCatalog parses the operator's catalog of managed benchmarks. file names
// the catalog in errors, and relative registry and dir paths are taken
// relative to its directory. Parsing is strict: unknown keys, wrong types,
// missing or invalid values are errors; every problem found is reported in
// one *CatalogError naming the file and the key.
//
// A catalog lists benchmarks as [[benchmarks]] tables:
//
//	[[benchmarks]]
//	key = "terminal-bench-2-0"          # optional; default KeyFor(source name, source version)
//	name = "Terminal-Bench 2.0"         # required
//	description = "Hard, realistic terminal tasks."
//	source_url = "https://www.tbench.ai"
//	source = "terminal-bench@2.0"       # a registry spec name@version …
//	# registry = "registry.json"        # … resolved against this registry.json (path or URL);
//	                                    #   default: the platform's configured registry
//	# dir = "datasets/terminal-bench"   # or a local Harbor dataset directory instead of source
//	harness_requirement = "official-only"  # required | optional (default) | official-only
//	default_harness = "terminus-2"      # required for official-only
//	judge_required = false              # default false
//	judge_model = "openai/gpt-5.2"      # default judge model, optional
//	judge_model_pinned = false          # the grader fixes its model: runs give only the key
//	pass_threshold = 1.0                # in (0, 1]; default 1.0
//	required_secrets = ["HF_TOKEN"]     # secret record names the benchmark itself needs
//
//	[[benchmarks.task_sets]]
//	name = "parity"                     # ^[a-z0-9][a-z0-9._-]{0,62}$
//	description = "The sample the published scores were measured on."
//	recommended = true
//	tasks = ["git-multibranch", "fix-permissions"]
//
// Task sets can only be checked against the task list once the source is
// synced: CatalogEntry.Manifest does that.
func ParseCatalog(data []byte, file string) (Catalog, error) {
	var raw catalogFile
	md, err := tomldoc.Decode(data, &raw)
	if err != nil {
		return Catalog{}, &CatalogError{File: file, Problems: []CatalogProblem{{Message: tomlMessage(err)}}}
	}
	var p catalogParser
	for _, k := range md.Undecoded() {
		p.add(k.String(), "unknown key")
	}
	if len(raw.Benchmarks) == 0 {
		p.add("benchmarks", "the catalog lists no benchmarks ([[benchmarks]])")
	}
	base := ""
	if file != "" {
		base = filepath.Dir(file)
	}
	var cat Catalog
	keys := map[string]int{}
	for i, b := range raw.Benchmarks {
		e := p.entry(fmt.Sprintf("benchmarks[%d]", i), b, base)
		if j, dup := keys[e.Key]; dup && e.Key != "" {
			p.add(fmt.Sprintf("benchmarks[%d].key", i), fmt.Sprintf("key %q is already used by benchmarks[%d]", e.Key, j))
		}
		keys[e.Key] = i
		cat.Benchmarks = append(cat.Benchmarks, e)
	}
	if len(p.problems) > 0 {
		return Catalog{}, &CatalogError{File: file, Problems: p.problems}
	}
	return cat, nil
}

func tomlMessage(err error) string {
	var se *tomldoc.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("line %d: %s", se.Line, se.Message)
	}
	return err.Error()
}

type catalogParser struct{ problems []CatalogProblem }

func (p *catalogParser) add(key, msg string) {
	p.problems = append(p.problems, CatalogProblem{Key: key, Message: msg})
}

func (p *catalogParser) entry(path string, b catalogBenchmark, base string) CatalogEntry {
	e := CatalogEntry{
		Key: b.Key, Name: b.Name, Description: b.Description, SourceURL: b.SourceURL,
		Source: b.Source, Registry: localPath(base, b.Registry), Dir: localPath(base, b.Dir),
		HarnessRequirement: HarnessRequirement(b.HarnessRequirement), DefaultHarness: b.DefaultHarness,
		Judge:         Judge{Required: b.JudgeRequired, DefaultModel: b.JudgeModel, ModelPinned: b.JudgeModelPinned},
		PassThreshold: DefaultPassThreshold, RequiredSecrets: b.RequiredSecrets,
	}
	if b.Name == "" {
		p.add(path+".name", "is required")
	}
	p.source(path, b)
	if e.Key == "" {
		e.Key = KeyFor(SplitRef(b.Source))
		if b.Source == "" {
			e.Key = KeyFor(b.Name, "")
		}
	}
	if !ValidKey(e.Key) {
		p.add(path+".key", fmt.Sprintf("%q must match %s", e.Key, keyPattern))
	}
	if e.HarnessRequirement == "" {
		e.HarnessRequirement = HarnessOptional
	}
	if !e.HarnessRequirement.Valid() {
		p.add(path+".harness_requirement", fmt.Sprintf("%q must be one of %s", b.HarnessRequirement, joinRequirements()))
	}
	switch {
	case b.DefaultHarness != "" && !ValidHarnessName(b.DefaultHarness):
		p.add(path+".default_harness", fmt.Sprintf("%q must match %s", b.DefaultHarness, harnessNameRE))
	case b.DefaultHarness == "" && e.HarnessRequirement == HarnessOfficialOnly:
		p.add(path+".default_harness", "is required when harness_requirement is official-only")
	}
	if b.PassThreshold != nil {
		e.PassThreshold = *b.PassThreshold
		if !(e.PassThreshold > 0 && e.PassThreshold <= 1) {
			p.add(path+".pass_threshold", fmt.Sprintf("%v must be in (0, 1]", e.PassThreshold))
		}
	}
	if b.JudgeModelPinned && !b.JudgeRequired {
		p.add(path+".judge_model_pinned", "is only allowed with judge_required = true")
	}
	for i, name := range b.RequiredSecrets {
		switch {
		case !secret.ValidName(name):
			p.add(fmt.Sprintf("%s.required_secrets[%d]", path, i), "must be a secret record name matching "+secret.NamePattern)
		case secret.ReservedPrefix(name) != "":
			p.add(fmt.Sprintf("%s.required_secrets[%d]", path, i), "names a reserved secret: names starting with "+secret.ReservedPrefix(name)+" are set by the platform's runner")
		}
	}
	e.TaskSets = p.taskSets(path, b.TaskSets)
	return e
}

func (p *catalogParser) source(path string, b catalogBenchmark) {
	switch {
	case b.Source == "" && b.Dir == "":
		p.add(path+".source", "set source (a registry spec name@version) or dir (a local dataset directory)")
	case b.Source != "" && b.Dir != "":
		p.add(path+".dir", "set either source or dir, not both")
	case b.Source != "":
		name, version := SplitRef(b.Source)
		if name == "" || version == "" || !strings.Contains(b.Source, "@") {
			p.add(path+".source", fmt.Sprintf("%q must be a registry spec name@version", b.Source))
		}
	case b.Registry != "":
		p.add(path+".registry", "is only used with source, not with dir")
	}
}

func (p *catalogParser) taskSets(path string, sets []catalogTaskSet) map[string]TaskSet {
	if len(sets) == 0 {
		return nil
	}
	out := make(map[string]TaskSet, len(sets))
	for i, s := range sets {
		at := fmt.Sprintf("%s.task_sets[%d]", path, i)
		if !ValidTaskSetName(s.Name) {
			p.add(at+".name", fmt.Sprintf("%q must match %s", s.Name, taskSetNameRE))
		}
		if _, dup := out[s.Name]; dup {
			p.add(at+".name", fmt.Sprintf("task set %q is defined twice", s.Name))
		}
		if len(s.Tasks) == 0 {
			p.add(at+".tasks", "must list at least one task")
		}
		out[s.Name] = TaskSet(s)
	}
	return out
}

// localPath makes a relative filesystem path relative to base; URLs and
// absolute paths are returned unchanged.
func localPath(base, path string) string {
	if path == "" || base == "" || filepath.IsAbs(path) || strings.Contains(path, "://") {
		return path
	}
	return filepath.Join(base, path)
}
