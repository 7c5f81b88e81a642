// Package config owns the settings of the gauntlet CDK app: every value the
// stacks read from CDK context (`-c key=value` or the "context" block of
// cdk.json), with its default and its validation.
package config

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// Context keys read by the app. cdk.json carries a default for each.
const (
	KeyStage                 = "stage"
	KeyLambdaAssets          = "lambdaAssets"
	KeyNATGateways           = "natGateways"
	KeySyncSchedule          = "syncSchedule"
	KeyWatchdogSchedule      = "watchdogSchedule"
	KeyJWTIssuer             = "jwtIssuer"
	KeyJWTAudience           = "jwtAudience"
	KeyConsoleOrigin         = "consoleOrigin"
	KeyConsoleDir            = "consoleDir"
	KeyLogRetentionDays      = "logRetentionDays"
	KeyThrottleRate          = "throttleRate"
	KeyThrottleBurst         = "throttleBurst"
	KeyMaxSandboxes          = "maxSandboxes"
	KeyDispatcherConcurrency = "dispatcherConcurrency"
	KeyReservedConcurrency   = "reservedConcurrency"
	KeyLogLevel              = "logLevel"
	KeyRegistry              = "registry"
	KeyPackageRegistry       = "packageRegistry"
	KeyPackageRegistryKey    = "packageRegistryKey"
	KeyDefaultImage          = "defaultImage"
	KeyModelGatewayConfig    = "modelGatewayConfig"
	KeyHostedKeySecretARN    = "hostedKeySecretArn"
	KeyRunnerImage           = "runnerImage"
	KeyAgentsImage           = "agentsImage"
	KeyRestrictDefaultSG     = "restrictDefaultSecurityGroup"
	KeyConsoleHosting        = "consoleHosting"
)

// Config is the validated configuration of one stage of the platform.
type Config struct {
	// Stage names the deployment ("dev", "prod", …); it prefixes stack names
	// and secret names. Stages other than "dev" retain stateful resources.
	Stage string
	// LambdaAssets is the directory holding <function>/bootstrap, built by `make lambdas`.
	LambdaAssets string
	// NATGateways is the number of NAT gateways of the sandbox VPC (≥ 1: sandboxes need egress).
	NATGateways int
	// SyncSchedule is the EventBridge Scheduler expression of the registry sync.
	SyncSchedule string
	// WatchdogSchedule is the EventBridge Scheduler expression of the watchdog.
	WatchdogSchedule string
	// JWTIssuer and JWTAudience configure the API's JWT authorizer; when both
	// are empty the stack creates a Cognito user pool and app client instead.
	JWTIssuer   string
	JWTAudience string
	// ConsoleOrigin is the browser origin allowed by the API's CORS policy;
	// empty means the console's CloudFront URL.
	ConsoleOrigin string
	// ConsoleDir is the console's static site; "<dir>/dist" is preferred when
	// present, and nothing is deployed when neither exists.
	ConsoleDir string
	// LogRetentionDays is the retention of every log group the app creates.
	LogRetentionDays int
	// ThrottleRate (requests/second) and ThrottleBurst are the API's default stage limits.
	ThrottleRate  int
	ThrottleBurst int
	// MaxSandboxes is the global cap on concurrently running sandboxes.
	MaxSandboxes int
	// DispatcherConcurrency caps concurrent dispatcher invocations (event-source maximum concurrency).
	DispatcherConcurrency int
	// ReservedConcurrency reserves concurrency for the scheduled singletons
	// (watchdog, registry sync). Turn it off in accounts whose concurrency
	// quota is too small to reserve any.
	ReservedConcurrency bool
	// LogLevel is passed to every function as LOG_LEVEL.
	LogLevel string
	// Registry is the benchmark registry the API and the registry sync read
	// (GAUNTLET_REGISTRY); empty leaves the functions' built-in default.
	Registry string
	// PackageRegistry and PackageRegistryKey locate the Harbor package
	// registry org/name datasets come from (GAUNTLET_PACKAGE_REGISTRY,
	// GAUNTLET_PACKAGE_REGISTRY_KEY); empty is Harbor's own.
	PackageRegistry, PackageRegistryKey string
	// DefaultImage is the operator's default task image
	// (GAUNTLET_SANDBOX_DEFAULT_IMAGE): tasks that name no docker_image and
	// ship no Dockerfile run in it. A tag is resolved at every sync through
	// the pull-through cache and the digest recorded per task in the
	// manifest version, so runs pin it all the same; a digest reference pins
	// it for every sync (and is the dispatcher's fallback for manifests
	// synced without environments).
	DefaultImage string
	// ModelGatewayConfigFile is the path of the operator's model gateway
	// TOML (gateway.ParseOperatorConfig's format), read at synth; "" keeps
	// the default provider table and hosts no models.
	ModelGatewayConfigFile string
	// ModelGatewayConfig is that file's content (Load reads it): the API
	// and the dispatcher get it as GAUNTLET_MODEL_GATEWAY_CONFIG, and the
	// dispatcher hands it to every sandbox task's runner.
	ModelGatewayConfig string
	// HostedKeySecretARN is the complete ARN of the Secrets Manager secret
	// holding the hosted endpoint's key; ECS injects it into the sandbox
	// task's runner under the variable the config's hosted.api_key_env
	// names, and the sandbox execution role may read it (and nothing else
	// of Secrets Manager). Set exactly when the config has api_key_env.
	HostedKeySecretARN string
	// RunnerImage and AgentsImage are prebuilt sandbox-runner and
	// agent-bundles images (references ECS pulls; an ECR one in the
	// account is granted to the sandbox execution role). Empty builds each
	// from its Dockerfile at deploy, which needs Docker and a registry
	// login; a reference needs neither (CI-built images, the emulator
	// deploy).
	RunnerImage string
	AgentsImage string
	// RestrictDefaultSecurityGroup removes every rule of the sandbox VPC's
	// default security group through a Lambda-backed custom resource.
	// Sandboxes never use that group; turning it off leaves the group as
	// EC2 creates it (for an emulator that cannot run the custom
	// resource's function).
	RestrictDefaultSecurityGroup bool
	// ConsoleHosting creates the console's bucket and CloudFront
	// distribution; off, the stage serves the API alone and ConsoleOrigin
	// names where the console is hosted instead.
	ConsoleHosting bool
}

// MaxModelGatewayConfig bounds the config's size: it travels in the API's
// and the dispatcher's Lambda environment, which holds 4 KB in all.
const MaxModelGatewayConfig = 2048

// DefaultTaskImage is DefaultImage's default: Terminal-Bench 2's base
// image, the environment Harbor tasks' Python verifiers expect.
const DefaultTaskImage = "docker.io/library/python:3.13-slim-bookworm"

// Defaults returns the configuration used for every key the context leaves unset.
func Defaults() Config {
	return Config{
		Stage:                        "dev",
		LambdaAssets:                 "build/lambda",
		NATGateways:                  1,
		SyncSchedule:                 "rate(1 hour)",
		WatchdogSchedule:             "rate(1 minute)",
		ConsoleDir:                   "console",
		RestrictDefaultSecurityGroup: true,
		ConsoleHosting:               true,
		LogRetentionDays:             30,
		ThrottleRate:                 50,
		ThrottleBurst:                100,
		MaxSandboxes:                 50,
		DispatcherConcurrency:        5,
		ReservedConcurrency:          true,
		LogLevel:                     "info",
		DefaultImage:                 DefaultTaskImage,
	}
}

// IsDev reports whether the stage is the disposable development stage, whose
// stateful resources are destroyed with the stack.
func (c Config) IsDev() bool { return c.Stage == "dev" }

// DefaultImagePinned reports whether DefaultImage names a digest (then the
// dispatcher, too, can run it without a sync having resolved it).
func (c Config) DefaultImagePinned() bool {
	_, digest, ok := strings.Cut(c.DefaultImage, "@sha256:")
	return ok && len(digest) == 64
}

// Lookup returns the context value of a key, or nil when it is unset;
// (awscdk.App).Node().TryGetContext has this shape.
type Lookup func(key string) any

var (
	stagePattern    = regexp.MustCompile(`^[a-z][a-z0-9-]{0,15}$`)
	schedulePattern = regexp.MustCompile(`^(rate|cron|at)\(.+\)$`)
	// imageRefPattern is a registry reference as Docker spells one:
	// lowercase path components, an optional tag, an optional digest.
	imageRefPattern = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$`)
	logLevels       = []string{"debug", "info", "warn", "error"}
	// secretARNPattern is a complete secret ARN: the name and the six
	// characters Secrets Manager appends to it.
	secretARNPattern = regexp.MustCompile(`^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$`)
	retentionChoices = []int{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)

// Load reads every key through lookup, applies defaults and validates the result.
func Load(lookup Lookup) (Config, error) {
	c := Defaults()
	r := reader{lookup: lookup}
	r.str(KeyStage, &c.Stage)
	r.str(KeyLambdaAssets, &c.LambdaAssets)
	r.integer(KeyNATGateways, &c.NATGateways)
	r.str(KeySyncSchedule, &c.SyncSchedule)
	r.str(KeyWatchdogSchedule, &c.WatchdogSchedule)
	r.str(KeyJWTIssuer, &c.JWTIssuer)
	r.str(KeyJWTAudience, &c.JWTAudience)
	r.str(KeyConsoleOrigin, &c.ConsoleOrigin)
	r.str(KeyConsoleDir, &c.ConsoleDir)
	r.integer(KeyLogRetentionDays, &c.LogRetentionDays)
	r.integer(KeyThrottleRate, &c.ThrottleRate)
	r.integer(KeyThrottleBurst, &c.ThrottleBurst)
	r.integer(KeyMaxSandboxes, &c.MaxSandboxes)
	r.integer(KeyDispatcherConcurrency, &c.DispatcherConcurrency)
	r.boolean(KeyReservedConcurrency, &c.ReservedConcurrency)
	r.str(KeyLogLevel, &c.LogLevel)
	r.str(KeyRegistry, &c.Registry)
	r.str(KeyPackageRegistry, &c.PackageRegistry)
	r.str(KeyPackageRegistryKey, &c.PackageRegistryKey)
	r.str(KeyDefaultImage, &c.DefaultImage)
	r.str(KeyModelGatewayConfig, &c.ModelGatewayConfigFile)
	r.str(KeyHostedKeySecretARN, &c.HostedKeySecretARN)
	r.str(KeyRunnerImage, &c.RunnerImage)
	r.str(KeyAgentsImage, &c.AgentsImage)
	r.boolean(KeyRestrictDefaultSG, &c.RestrictDefaultSecurityGroup)
	r.boolean(KeyConsoleHosting, &c.ConsoleHosting)
	if r.err != nil {
		return Config{}, r.err
	}
	if c.ModelGatewayConfigFile != "" {
		data, err := os.ReadFile(c.ModelGatewayConfigFile)
		if err != nil {
			return Config{}, fmt.Errorf("context %q: %w", KeyModelGatewayConfig, err)
		}
		c.ModelGatewayConfig = string(data)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate reports the first setting that cannot be deployed, naming its context key.
func (c Config) Validate() error {
	checks := []struct {
		ok     bool
		key    string
		reason string
	}{
		{stagePattern.MatchString(c.Stage), KeyStage, "must match " + stagePattern.String()},
		{c.LambdaAssets != "", KeyLambdaAssets, "must name a directory"},
		{c.NATGateways >= 1 && c.NATGateways <= 3, KeyNATGateways, "must be 1..3 (sandboxes need egress)"},
		{schedulePattern.MatchString(c.SyncSchedule), KeySyncSchedule, "must be rate(…), cron(…) or at(…)"},
		{schedulePattern.MatchString(c.WatchdogSchedule), KeyWatchdogSchedule, "must be rate(…), cron(…) or at(…)"},
		{(c.JWTIssuer == "") == (c.JWTAudience == ""), KeyJWTIssuer, "and " + KeyJWTAudience + " must be set together"},
		{c.JWTIssuer == "" || strings.HasPrefix(c.JWTIssuer, "https://"), KeyJWTIssuer, "must be an https:// URL"},
		{c.ConsoleOrigin == "" || strings.HasPrefix(c.ConsoleOrigin, "https://") || strings.HasPrefix(c.ConsoleOrigin, "http://localhost"), KeyConsoleOrigin, "must be an https:// origin"},
		{c.ConsoleHosting || c.ConsoleOrigin != "", KeyConsoleOrigin, "must name the console's origin when " + KeyConsoleHosting + " is false"},
		{slices.Contains(retentionChoices, c.LogRetentionDays), KeyLogRetentionDays, fmt.Sprintf("must be one of %v", retentionChoices)},
		{c.ThrottleRate > 0, KeyThrottleRate, "must be positive"},
		{c.ThrottleBurst > 0, KeyThrottleBurst, "must be positive"},
		{c.MaxSandboxes > 0, KeyMaxSandboxes, "must be positive"},
		{c.DispatcherConcurrency >= 2 && c.DispatcherConcurrency <= 1000, KeyDispatcherConcurrency, "must be 2..1000 (the SQS event-source limits)"},
		{slices.Contains(logLevels, c.LogLevel), KeyLogLevel, fmt.Sprintf("must be one of %v", logLevels)},
		{imageRefPattern.MatchString(c.DefaultImage), KeyDefaultImage, "must be an image reference, host/repository:tag or host/repository@sha256:<64 hex>"},
		{c.RunnerImage == "" || imageRefPattern.MatchString(c.RunnerImage), KeyRunnerImage, "must be empty (build infra/runner/Dockerfile) or an image reference, host/repository:tag or host/repository@sha256:<64 hex>"},
		{c.AgentsImage == "" || imageRefPattern.MatchString(c.AgentsImage), KeyAgentsImage, "must be empty (build infra/agents/Dockerfile) or an image reference, host/repository:tag or host/repository@sha256:<64 hex>"},
	}
	for _, ch := range checks {
		if !ch.ok {
			return fmt.Errorf("context %q: %s", ch.key, ch.reason)
		}
	}
	return c.validateModelGateway()
}

// validateModelGateway checks the operator's gateway config as the cloud
// uses it: it parses (the error names the field), its hosted key comes from
// a secret (a sandbox task has no operator files), and the secret's ARN is
// given exactly when hosted.api_key_env names a variable to put it in.
func (c Config) validateModelGateway() error {
	if !secretARNPattern.MatchString(c.HostedKeySecretARN) && c.HostedKeySecretARN != "" {
		return fmt.Errorf("context %q: %q is not a complete Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters>)", KeyHostedKeySecretARN, c.HostedKeySecretARN)
	}
	if c.ModelGatewayConfig == "" {
		if c.HostedKeySecretARN != "" {
			return fmt.Errorf("context %q: is set, but no %s configures a hosted endpoint to use it", KeyHostedKeySecretARN, KeyModelGatewayConfig)
		}
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("context %q (%s): %s", KeyModelGatewayConfig, c.ModelGatewayConfigFile, fmt.Sprintf(format, args...))
	}
	if len(c.ModelGatewayConfig) > MaxModelGatewayConfig {
		return bad("%d bytes, at most %d (it travels in the functions' Lambda environment, 4 KB in all)", len(c.ModelGatewayConfig), MaxModelGatewayConfig)
	}
	models, err := gateway.ParseOperatorConfigWith([]byte(c.ModelGatewayConfig), gateway.ParseOptions{WithoutKeys: true})
	if err != nil {
		return bad("%v", err)
	}
	var keyEnv string
	if h := models.Hosted; h != nil {
		if h.APIKeyFile != "" {
			return bad("hosted.api_key_file: a sandbox task has no operator files; store the key in Secrets Manager, set %s to the secret's ARN and name its variable with hosted.api_key_env (%sNAME)", KeyHostedKeySecretARN, sandbox.GatewayKeyEnvPrefix)
		}
		keyEnv = h.APIKeyEnv
	}
	switch {
	case keyEnv != "" && c.HostedKeySecretARN == "":
		return bad("hosted.api_key_env: needs context %q, the secret holding the key", KeyHostedKeySecretARN)
	case keyEnv == "" && c.HostedKeySecretARN != "":
		return fmt.Errorf("context %q: is set, but %s names no hosted.api_key_env to put the key in", KeyHostedKeySecretARN, KeyModelGatewayConfig)
	}
	return nil
}

// reader converts context values, which are strings when given with `-c` and
// JSON values when given in cdk.json, and keeps the first error.
type reader struct {
	lookup Lookup
	err    error
}

func (r *reader) raw(key string) (string, bool) {
	if r.err != nil {
		return "", false
	}
	v := r.lookup(key)
	if v == nil {
		return "", false
	}
	switch t := v.(type) {
	case string:
		return t, true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	case int:
		return strconv.Itoa(t), true
	case bool:
		return strconv.FormatBool(t), true
	default:
		r.err = fmt.Errorf("context %q: unsupported value %v (%T)", key, v, v)
		return "", false
	}
}

func (r *reader) str(key string, dst *string) {
	if s, ok := r.raw(key); ok {
		*dst = s
	}
}

func (r *reader) integer(key string, dst *int) {
	s, ok := r.raw(key)
	if !ok {
		return
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		r.err = fmt.Errorf("context %q: %q is not an integer", key, s)
		return
	}
	*dst = n
}

func (r *reader) boolean(key string, dst *bool) {
	s, ok := r.raw(key)
	if !ok {
		return
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		r.err = fmt.Errorf("context %q: %q is not a boolean", key, s)
		return
	}
	*dst = b
}

// ReadCDKJSON returns the "context" block of a cdk.json file: the defaults
// and feature flags the CDK CLI passes to the app, so that running the app
// without the CLI (`go run ./infra`) synthesizes the same templates.
func ReadCDKJSON(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read cdk settings: %w", err)
	}
	var file struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return file.Context, nil
}
