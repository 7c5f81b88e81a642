// Package compose reads a Harbor task's environment/docker-compose.yaml with
// the compose specification's own Go loader (compose-go): the services
// beside the task's main container, their images, commands, environments,
// start order and healthchecks, and every attribute of the file gauntlet
// does not implement, named, so a task that uses one is made unavailable
// instead of running without it.
//
// The file is read as Harbor reads it: merged over Harbor's own definition
// of the `main` service (the task's image, which gauntlet builds or pulls
// itself), so a task's file may override `main` only in what Harbor lets
// it (depends_on, environment) and need not name `main` at all. Variables
// are interpolated from an empty environment: nothing of the host reaches
// a task's services.
package compose

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/tree"
	"github.com/compose-spec/compose-go/v2/types"
)

// FileName is the compose file Harbor reads in a task's environment/
// directory (Harbor reads no other name).
const FileName = "docker-compose.yaml"

// MainService is the service name of the task's own container, where the
// agent and the verifier run.
const MainService = "main"

// MaxFileBytes bounds the compose file read.
const MaxFileBytes = 1 << 20

// Dependency conditions a service's depends_on may wait for.
const (
	ConditionStarted = types.ServiceConditionStarted
	ConditionHealthy = types.ServiceConditionHealthy
)

// Docker's healthcheck defaults, which compose's apply when a field is
// unset.
const (
	DefaultInterval      = 30 * time.Second
	DefaultTimeout       = 30 * time.Second
	DefaultStartInterval = 5 * time.Second
	DefaultRetries       = 3
)

// Project is a task's compose file, read and checked.
type Project struct {
	// Main is the `main` service's overrides (its image is the task's).
	Main Service
	// Sidecars are the other services, in start order: every service
	// after the services it depends on, ties by name.
	Sidecars []Service
	// Volumes are the file's named volumes (top-level `volumes`), by name:
	// each an empty directory of the trial's, shared by the services that
	// mount it.
	Volumes []string
	// Unsupported names each attribute of the file gauntlet does not
	// implement, with the service and what it is; a task with any is
	// unavailable.
	Unsupported []string
}

// Service is one service of a compose file.
type Service struct {
	Name string
	// Image is `image`, as written; empty when the service is built.
	Image string
	// Build is `build`; nil when the service names an image.
	Build *Build
	// Environment is `environment`; a variable listed without a value is
	// unset in the service, as compose reads it from an empty host.
	Environment map[string]string
	// Entrypoint and Command replace the image's; nil keeps the image's.
	Entrypoint []string
	Command    []string
	WorkingDir string
	User       string
	// DependsOn are the services started (or healthy) before this one.
	DependsOn []Dependency
	// Healthcheck is `healthcheck`; nil when the service has none (or
	// disables its image's).
	Healthcheck *Healthcheck
	// Volumes are the named volumes it mounts, in the file's order.
	Volumes []VolumeMount
}

// VolumeMount is one entry of a service's `volumes`: a named volume
// mounted at Target.
type VolumeMount struct {
	// Volume names a volume of the file's top-level `volumes`; "" is an
	// anonymous volume, the service's own.
	Volume string
	// Target is the absolute path in the service's filesystem.
	Target string
	// ReadOnly: `:ro` / read_only.
	ReadOnly bool
	// NoCopy: volume.nocopy, which keeps Docker from copying the image's
	// content at Target into the empty volume.
	NoCopy bool
}

// Build is a service's `build`: a Dockerfile in a directory of the task's
// environment/.
type Build struct {
	// Context is the build context, slash-separated and relative to the
	// environment directory ("." for itself).
	Context string
	// Dockerfile is the Dockerfile's path relative to Context.
	Dockerfile string
}

// Dependency is one entry of depends_on.
type Dependency struct {
	Service   string
	Condition string // ConditionStarted or ConditionHealthy
}

// Healthcheck is a service's compose healthcheck, with Docker's defaults
// applied.
type Healthcheck struct {
	// Test is the command: argv for the CMD form, ["sh", "-c", cmd] for
	// CMD-SHELL.
	Test          []string
	Interval      time.Duration
	Timeout       time.Duration
	StartPeriod   time.Duration
	StartInterval time.Duration
	Retries       int
}

// Error is a compose file that cannot be read: which file and what is
// wrong, naming the field when the loader does.
type Error struct {
	File   string
	Reason string
}

// Error implements error.
func (e *Error) Error() string { return e.File + ": " + e.Reason }

// Harbor's service name rule (config.py's compose service name pattern).
var serviceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// mainPlaceholder stands for the task's image in Harbor's definition of
// `main`, which the task's file is merged over.
const mainPlaceholder = "gauntlet.invalid/task-main-image"

// supported are the attributes gauntlet implements for a service; any
// other attribute of the file is reported (compose-go's allowlist check,
// fail-closed: an attribute the specification gains later is reported
// until gauntlet implements it).
var supported = []tree.Path{
	"services.*.image",
	"services.*.build.context",
	"services.*.build.dockerfile",
	"services.*.environment",
	"services.*.environment.*",
	"services.*.entrypoint",
	"services.*.command",
	"services.*.working_dir",
	"services.*.user",
	"services.*.depends_on.*.condition",
	"services.*.depends_on.*.required",
	"services.*.depends_on.[]",
	"services.*.healthcheck.test",
	"services.*.healthcheck.interval",
	"services.*.healthcheck.timeout",
	"services.*.healthcheck.retries",
	"services.*.healthcheck.start_period",
	"services.*.healthcheck.start_interval",
	"services.*.healthcheck.disable",
	// Documentation of the ports a service listens on: every service
	// shares one network namespace, so they are reachable as they are.
	"services.*.expose",
	"services.*.labels",
	"services.*.labels.*",
	// Named volumes (long syntax, which compose-go turns the short one
	// into); the type is checked by mainDenied's volume rule, the source
	// when the service is converted.
	"services.*.volumes.[].type",
	"services.*.volumes.[].source",
	"services.*.volumes.[].target",
	"services.*.volumes.[].read_only",
	"services.*.volumes.[].volume.nocopy",
	// What compose-go adds to a short-syntax bind mount, whose type is
	// reported already.
	"services.*.volumes.[].bind.create_host_path",
	// A named volume with no option: an empty directory of the trial's.
	"volumes.*",
	"version",
	"name",
}

// mainDenied are the attributes of `main` a task's file may not set
// although a sidecar may (main is the task's own image, run by gauntlet),
// and the depends_on settings gauntlet does not implement for any service.
var mainDenied = []loader.UnsupportedAttributePattern{
	{Path: "services.main.image", Detect: func(v any) bool { return v != mainPlaceholder }},
	{Path: "services.main.build"},
	{Path: "services.main.entrypoint"},
	{Path: "services.main.command"},
	{Path: "services.main.working_dir"},
	{Path: "services.main.user"},
	{Path: "services.main.healthcheck"},
	// depends_on conditions compose defines and gauntlet does not wait for.
	{Path: "services.*.depends_on.*.condition", Detect: func(v any) bool {
		return v != ConditionStarted && v != ConditionHealthy
	}},
	{Path: "services.*.depends_on.*.restart"},
	// Only named volumes: bind mounts of host paths, tmpfs and the other
	// mount types are not run.
	{Path: "services.*.volumes.[].type", Detect: func(v any) bool { return v != types.VolumeTypeVolume }},
}

// what says what an attribute of the file is, for the reasons of an
// unavailable task.
var what = map[string]string{
	"privileged":     "privileged containers",
	"volumes":        "volumes",
	"network_mode":   "network modes (host networking)",
	"networks":       "networks of their own",
	"ports":          "ports published on the host",
	"devices":        "host devices",
	"cap_add":        "added capabilities",
	"security_opt":   "security options",
	"pid":            "shared PID namespaces",
	"ipc":            "shared IPC namespaces",
	"env_file":       "environment files",
	"extends":        "extended services",
	"include":        "included compose files",
	"secrets":        "secrets",
	"configs":        "configs",
	"restart":        "restart policies",
	"deploy":         "deploy settings (replicas, resource limits)",
	"profiles":       "profiles",
	"tmpfs":          "tmpfs mounts",
	"sysctls":        "sysctls",
	"ulimits":        "ulimits",
	"extra_hosts":    "extra hosts",
	"dns":            "DNS settings",
	"cpus":           "per-service CPU limits",
	"mem_limit":      "per-service memory limits",
	"gpus":           "GPUs",
	"runtime":        "container runtimes",
	"userns_mode":    "user namespace modes",
	"cgroup_parent":  "cgroup parents",
	"init":           "an init process",
	"platform":       "platforms",
	"condition":      "a depends_on condition other than service_started and service_healthy",
	"container_name": "container names",
	"hostname":       "hostnames",
	"links":          "links",
	"stop_signal":    "stop signals",
	"build":          "build options other than context and dockerfile",
}

// whatMain says what an attribute of `main` is that a sidecar may have.
var whatMain = map[string]string{
	"image":       "an image for main other than the task's",
	"build":       "a build for main other than the task's",
	"entrypoint":  "an entrypoint for main (the agent's container runs gauntlet's)",
	"command":     "a command for main (the agent's container runs gauntlet's)",
	"working_dir": "a working directory for main (use [environment].workdir)",
	"user":        "a user for main (use [agent].user and [verifier].user)",
	"healthcheck": "a compose healthcheck on main (use [environment.healthcheck])",
}

// Load reads envDir/docker-compose.yaml. file names it in errors and
// reasons (e.g. "environment/docker-compose.yaml"). A file that cannot be
// read, has no services, a dependency cycle or a dependency on no service
// is an *Error; attributes gauntlet does not implement are listed in
// Project.Unsupported.
func Load(ctx context.Context, envDir, file string) (*Project, error) {
	fail := func(format string, args ...any) error {
		return &Error{File: file, Reason: fmt.Sprintf(format, args...)}
	}
	full := filepath.Join(envDir, FileName)
	info, err := os.Lstat(full)
	if err != nil {
		return nil, fail("%v", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fail("must be a regular file, not a symlink or special file")
	}
	if info.Size() > MaxFileBytes {
		return nil, fail("larger than %d bytes", MaxFileBytes)
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return nil, fail("%v", err)
	}
	var findings []loader.UnsupportedAttribute
	report := func(f []loader.UnsupportedAttribute) { findings = f }
	base := fmt.Sprintf("services:\n  %s:\n    image: %s\n", MainService, mainPlaceholder)
	details := types.ConfigDetails{
		WorkingDir: envDir,
		ConfigFiles: []types.ConfigFile{
			{Filename: "harbor-main.yaml", Content: []byte(base)},
			{Filename: full, Content: data},
		},
		Environment: types.Mapping{},
	}
	proj, err := loader.LoadWithContext(ctx, details,
		func(o *loader.Options) {
			o.SetProjectName("task", true)
			// An unset variable is blank, as compose makes it, without
			// compose-go's warning on the process's stderr (the runner's
			// log stream).
			o.Interpolate.Substitute = func(s string, m template.Mapping) (string, error) {
				return template.SubstituteWithOptions(s, m, template.WithoutLogging)
			}
			o.ResolvePaths = false
			// include and extends read other files: reported, never read.
			o.SkipInclude = true
			o.SkipExtends = true
		},
		loader.WithSupportedAttributes(supported, report),
		loader.WithUnsupportedAttributesCheck(mainDenied, report),
	)
	if err != nil {
		return nil, fail("%s", strings.ReplaceAll(err.Error(), full, file))
	}
	p := &Project{Unsupported: reasons(findings), Volumes: slices.Sorted(maps.Keys(proj.Volumes))}
	names := slices.Sorted(maps.Keys(proj.Services))
	for _, name := range names {
		if !serviceName.MatchString(name) {
			return nil, fail("services.%s: a service name must start with a letter or digit and hold only letters, digits, '_', '.' and '-'", name)
		}
		s, err := service(proj.Services[name], envDir)
		if err != nil {
			return nil, fail("services.%s.%v", name, err)
		}
		if name == MainService {
			p.Main = s
			continue
		}
		p.Sidecars = append(p.Sidecars, s)
	}
	for _, s := range append([]Service{p.Main}, p.Sidecars...) {
		for _, d := range s.DependsOn {
			if d.Condition == ConditionHealthy && d.Service != MainService && healthcheckOf(p, d.Service) == nil {
				p.Unsupported = append(p.Unsupported, fmt.Sprintf("%s: services.%s.depends_on.%s: service_healthy on a service with no compose healthcheck (an image's own HEALTHCHECK is not read)", file, s.Name, d.Service))
			}
			if d.Service == MainService {
				p.Unsupported = append(p.Unsupported, fmt.Sprintf("%s: services.%s.depends_on.main: a service that waits for main (main starts last)", file, s.Name))
			}
		}
	}
	order, err := startOrder(p.Sidecars)
	if err != nil {
		return nil, fail("%v", err)
	}
	p.Sidecars = order
	for i, u := range p.Unsupported {
		if !strings.HasPrefix(u, file+": ") {
			p.Unsupported[i] = file + ": " + u
		}
	}
	sort.Strings(p.Unsupported)
	p.Unsupported = slices.Compact(p.Unsupported)
	return p, nil
}

// healthcheckOf is the healthcheck of the sidecar named name.
func healthcheckOf(p *Project, name string) *Healthcheck {
	for _, s := range p.Sidecars {
		if s.Name == name {
			return s.Healthcheck
		}
	}
	return nil
}

// reasons turns the loader's findings into one reason per attribute: the
// path as written and what it is.
func reasons(findings []loader.UnsupportedAttribute) []string {
	var out []string
	for _, f := range findings {
		parts := f.Path.Parts()
		key := parts[len(parts)-1]
		if len(parts) >= 3 && parts[0] == "services" {
			key = parts[2]
			if parts[2] == "depends_on" && len(parts) >= 5 {
				key = parts[4]
			}
		} else if len(parts) >= 1 {
			key = parts[0]
		}
		desc := what[key]
		if len(parts) == 3 && parts[1] == MainService && whatMain[key] != "" {
			desc = whatMain[key]
		}
		switch {
		case len(parts) >= 4 && parts[0] == "services" && parts[2] == "volumes" && parts[len(parts)-1] == "type":
			desc = fmt.Sprintf("%v mounts: only named volumes are run", f.Value)
		case len(parts) >= 4 && parts[0] == "services" && parts[2] == "volumes":
			desc = "volume options: only type, source, target, read_only and volume.nocopy are run"
		case len(parts) >= 3 && parts[0] == "volumes":
			desc = "volume options (drivers, external volumes, labels): a named volume is an empty directory of the trial's"
		}
		if desc == "" {
			desc = "not implemented by gauntlet"
		}
		out = append(out, fmt.Sprintf("%s (%s)", strings.ReplaceAll(string(f.Path), "👻", "."), desc))
	}
	return out
}

// service converts one loaded service; its errors start with the field.
func service(sc types.ServiceConfig, envDir string) (Service, error) {
	s := Service{
		Name: sc.Name, Image: sc.Image, WorkingDir: sc.WorkingDir, User: sc.User,
		Environment: map[string]string{},
	}
	if s.Name == MainService {
		s.Image = ""
	}
	for k, v := range sc.Environment {
		if v != nil {
			s.Environment[k] = *v
		}
	}
	if sc.Entrypoint != nil {
		s.Entrypoint = []string(sc.Entrypoint)
	}
	if sc.Command != nil {
		s.Command = []string(sc.Command)
	}
	if sc.Build != nil && s.Name != MainService {
		b, err := build(sc.Build, envDir)
		if err != nil {
			return s, err
		}
		s.Build = b
	}
	if s.Name != MainService && s.Image == "" && s.Build == nil {
		return s, errors.New("image: a service needs an image or a build")
	}
	for _, dep := range slices.Sorted(maps.Keys(sc.DependsOn)) {
		cond := sc.DependsOn[dep].Condition
		if cond == "" {
			cond = ConditionStarted
		}
		s.DependsOn = append(s.DependsOn, Dependency{Service: dep, Condition: cond})
	}
	for i, v := range sc.Volumes {
		if v.Type != types.VolumeTypeVolume {
			continue // reported by the type rule
		}
		if !path.IsAbs(v.Target) {
			return s, fmt.Errorf("volumes[%d].target: %q must be an absolute path", i, v.Target)
		}
		m := VolumeMount{Volume: v.Source, Target: path.Clean(v.Target), ReadOnly: v.ReadOnly}
		if v.Volume != nil {
			m.NoCopy = v.Volume.NoCopy
		}
		s.Volumes = append(s.Volumes, m)
	}
	if hc := sc.HealthCheck; hc != nil && !hc.Disable {
		h, err := healthcheck(hc)
		if err != nil {
			return s, err
		}
		s.Healthcheck = h
	}
	return s, nil
}

// build checks a build context: a directory of the task's environment/,
// never a path outside it, a URL or a git repository.
func build(b *types.BuildConfig, envDir string) (*Build, error) {
	ctxDir := b.Context
	if ctxDir == "" {
		ctxDir = "."
	}
	if strings.Contains(ctxDir, "://") || strings.HasPrefix(ctxDir, "git@") {
		return nil, fmt.Errorf("build.context: %q: only a directory of the task's environment/ can be built (no URL or git repository)", ctxDir)
	}
	clean := path.Clean(filepath.ToSlash(ctxDir))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return nil, fmt.Errorf("build.context: %q is outside the task's environment/ directory", ctxDir)
	}
	root, err := filepath.EvalSymlinks(envDir)
	if err != nil {
		return nil, fmt.Errorf("build.context: %w", err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(clean)))
	if err != nil {
		return nil, fmt.Errorf("build.context: %q: %w", ctxDir, err)
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("build.context: %q leads outside the task's environment/ directory", ctxDir)
	}
	if info, err := os.Stat(real); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("build.context: %q is not a directory", ctxDir)
	}
	dockerfile := b.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	df := path.Clean(filepath.ToSlash(dockerfile))
	if path.IsAbs(df) || df == ".." || strings.HasPrefix(df, "../") {
		return nil, fmt.Errorf("build.dockerfile: %q is outside the build context", dockerfile)
	}
	if info, err := os.Lstat(filepath.Join(real, filepath.FromSlash(df))); err != nil || !info.Mode().IsRegular() {
		return nil, fmt.Errorf("build.dockerfile: %q is not a regular file of the build context %q", dockerfile, ctxDir)
	}
	return &Build{Context: clean, Dockerfile: df}, nil
}

// healthcheck converts a compose healthcheck, with Docker's defaults.
func healthcheck(hc *types.HealthCheckConfig) (*Healthcheck, error) {
	h := &Healthcheck{Interval: DefaultInterval, Timeout: DefaultTimeout, StartInterval: DefaultStartInterval, Retries: DefaultRetries}
	test := []string(hc.Test)
	switch {
	case len(test) == 0:
		return nil, errors.New("healthcheck.test: is required (an image's own HEALTHCHECK is not read)")
	case test[0] == "NONE":
		return nil, nil
	case test[0] == "CMD" && len(test) > 1:
		h.Test = test[1:]
	case test[0] == "CMD-SHELL" && len(test) == 2:
		h.Test = []string{"sh", "-c", test[1]}
	default:
		return nil, fmt.Errorf("healthcheck.test: %q: want [\"CMD\", args...], [\"CMD-SHELL\", command] or a string", test)
	}
	for _, d := range []struct {
		v   *types.Duration
		dst *time.Duration
	}{{hc.Interval, &h.Interval}, {hc.Timeout, &h.Timeout}, {hc.StartPeriod, &h.StartPeriod}, {hc.StartInterval, &h.StartInterval}} {
		if d.v != nil {
			*d.dst = time.Duration(*d.v)
		}
	}
	if h.Timeout <= 0 {
		return nil, errors.New("healthcheck.timeout: must be greater than 0")
	}
	if hc.Retries != nil {
		if *hc.Retries > 1<<20 {
			return nil, fmt.Errorf("healthcheck.retries: %d is too many", *hc.Retries)
		}
		h.Retries = int(*hc.Retries)
	}
	return h, nil
}

// startOrder sorts services so each comes after those it depends on (ties
// by name); a cycle is an error naming it. main is started last whatever
// it depends on, so its dependencies are not edges here.
func startOrder(services []Service) ([]Service, error) {
	byName := map[string]Service{}
	for _, s := range services {
		byName[s.Name] = s
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	var order []Service
	var stack []string
	var visit func(name string) error
	visit = func(name string) error {
		switch state[name] {
		case done:
			return nil
		case visiting:
			i := slices.Index(stack, name)
			return fmt.Errorf("depends_on: dependency cycle: %s -> %s", strings.Join(stack[i:], " -> "), name)
		}
		state[name] = visiting
		stack = append(stack, name)
		for _, d := range byName[name].DependsOn {
			if _, ok := byName[d.Service]; !ok {
				continue // main, reported where it applies
			}
			if err := visit(d.Service); err != nil {
				return err
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
		order = append(order, byName[name])
		return nil
	}
	for _, s := range services {
		if err := visit(s.Name); err != nil {
			return nil, err
		}
	}
	return order, nil
}
