package cloud

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	gcrname "github.com/google/go-containerregistry/pkg/name"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/fnspec"
	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// Environment variables the CDK stack sets (infra/stacks).
const (
	EnvStage                = "GAUNTLET_STAGE"
	EnvTable                = "GAUNTLET_TABLE"
	EnvPlanQueueURL         = "GAUNTLET_PLAN_QUEUE_URL"
	EnvSlotsQueueURL        = "GAUNTLET_SLOTS_QUEUE_URL"
	EnvResultsQueueURL      = "GAUNTLET_RESULTS_QUEUE_URL"
	EnvSyncQueueURL         = "GAUNTLET_SYNC_QUEUE_URL"
	EnvCompletionsQueueURL  = "GAUNTLET_COMPLETIONS_QUEUE_URL"
	EnvBucket               = "GAUNTLET_BUCKET"
	EnvSecretsPrefix        = "GAUNTLET_SECRETS_PREFIX"
	EnvSecretsKMSKey        = "GAUNTLET_SECRETS_KMS_KEY"
	EnvCluster              = "GAUNTLET_CLUSTER"
	EnvSubnets              = "GAUNTLET_SUBNETS"
	EnvSecurityGroups       = "GAUNTLET_SECURITY_GROUPS"
	EnvSandboxTaskRoleARN   = "GAUNTLET_SANDBOX_TASK_ROLE_ARN"
	EnvSandboxExecutionRole = "GAUNTLET_SANDBOX_EXECUTION_ROLE_ARN"
	EnvSandboxLogGroup      = "GAUNTLET_SANDBOX_LOG_GROUP"
	EnvSandboxTaskFamily    = "GAUNTLET_SANDBOX_TASK_FAMILY"
	EnvSandboxDefaultImage  = "GAUNTLET_SANDBOX_DEFAULT_IMAGE"
	EnvSandboxKMSKey        = "GAUNTLET_SANDBOX_KMS_KEY"
	EnvSandboxAgentsImage   = "GAUNTLET_SANDBOX_AGENTS_IMAGE"
	EnvSandboxMirrors       = "GAUNTLET_SANDBOX_MIRRORS"
	EnvRunnerImage          = "GAUNTLET_RUNNER_IMAGE"
	EnvImageBuildProject    = "GAUNTLET_IMAGE_BUILD_PROJECT"
	EnvTaskImagesRepository = "GAUNTLET_TASK_IMAGES_REPOSITORY"
	EnvTaskImagesURI        = "GAUNTLET_TASK_IMAGES_REPOSITORY_URI"
	EnvJWTIssuer            = "GAUNTLET_JWT_ISSUER"
	EnvJWTAudience          = "GAUNTLET_JWT_AUDIENCE"
	EnvJWKSURL              = "GAUNTLET_JWKS_URL"
	EnvAdminClaim           = "GAUNTLET_ADMIN_CLAIM"
	EnvAdminGroup           = "GAUNTLET_ADMIN_GROUP"
	EnvConsoleOrigin        = "GAUNTLET_CONSOLE_ORIGIN"
	EnvMaxSandboxes         = "GAUNTLET_MAX_SANDBOXES"
	EnvRegistry             = "GAUNTLET_REGISTRY"
	EnvPackageRegistry      = "GAUNTLET_PACKAGE_REGISTRY"
	EnvPackageRegistryKey   = "GAUNTLET_PACKAGE_REGISTRY_KEY"
	EnvSyncRefreshAfter     = "GAUNTLET_SYNC_REFRESH_AFTER"
	EnvSyncResumeAfter      = "GAUNTLET_SYNC_RESUME_AFTER"
	EnvLogLevel             = "LOG_LEVEL"
	// EnvModelGatewayConfig holds the operator's model gateway TOML itself
	// (cdk context modelGatewayConfig).
	EnvModelGatewayConfig = sandbox.GatewayConfigEnv
	// EnvModelGatewayKeySecret is the ARN of the Secrets Manager secret
	// holding the hosted endpoint's key (cdk context hostedKeySecretArn),
	// which ECS injects into the sandbox task's runner.
	EnvModelGatewayKeySecret = "GAUNTLET_MODEL_GATEWAY_KEY_SECRET_ARN"
)

// Needs lists the ports a function wires, derived from its row of the
// function table. The table is always wired; a port left out is not
// configured (nil), and building a stage that takes it fails with an error
// wrapping ErrNotWired that names the variable to set.
type Needs struct {
	Plan, Slots, Completions, Results, Sync bool // queues
	Blobs, Secrets, Sandboxes               bool
	// JWT reads the issuer and audience of the API's tokens.
	JWT bool
	// MaxSandboxes reads the global sandbox cap (the dispatcher's gate).
	MaxSandboxes bool
	// Registry reads the registry location benchmarks are added from.
	Registry bool
	// Refresh reads how old a benchmark's last sync must be for the
	// scheduled refresh to re-sync it.
	Refresh bool
	// SandboxKey reads the KMS key launch data keys come from (the
	// dispatcher seals each launch's secrets under one).
	SandboxKey bool
	// Images reads how the sync pins and builds task images.
	Images bool
	// ModelGateway reads the operator's model gateway config (submit's
	// model checks; with Sandboxes, what the sandbox tasks get).
	ModelGateway bool
}

// NeedsOf returns the ports and settings function f of the function table
// wires: the queues it sends to, and every other port it uses at all.
func NeedsOf(f fnspec.Function) Needs {
	return Needs{
		Plan: f.Access(fnspec.PlanQueue) != 0, Slots: f.Access(fnspec.SlotsQueue) != 0,
		Completions: f.Access(fnspec.CompletionsQueue) != 0, Results: f.Access(fnspec.ResultsQueue) != 0,
		Sync:  f.Access(fnspec.SyncQueue) != 0,
		Blobs: f.Access(fnspec.Blobs) != 0, Secrets: f.Access(fnspec.Secrets) != 0,
		Sandboxes: f.Access(fnspec.Sandboxes) != 0, SandboxKey: f.Access(fnspec.SandboxKey) != 0,
		JWT: f.Reads(fnspec.JWT), MaxSandboxes: f.Reads(fnspec.MaxSandboxes), Registry: f.Reads(fnspec.Registry),
		Refresh: f.Reads(fnspec.Refresh), Images: f.Reads(fnspec.Images), ModelGateway: f.Reads(fnspec.ModelGateway),
	}
}

// The needs of each function, from the function table.
var (
	API          = NeedsOf(fnspec.APIFunction)
	Planner      = NeedsOf(fnspec.Planner)
	Dispatcher   = NeedsOf(fnspec.Dispatcher)
	Grader       = NeedsOf(fnspec.Grader)
	Ingester     = NeedsOf(fnspec.Ingester)
	Leaderboard  = NeedsOf(fnspec.Leaderboard)
	RegistrySync = NeedsOf(fnspec.RegistrySync)
	Watchdog     = NeedsOf(fnspec.Watchdog)
)

// Config is what a function read from its environment.
type Config struct {
	Stage string
	Table string
	// Queue URLs; "" when the function does not wire the queue.
	PlanQueueURL, SlotsQueueURL, CompletionsQueueURL, ResultsQueueURL, SyncQueueURL string
	Bucket                                                                          string
	SecretsPrefix, SecretsKMSKey                                                    string
	// Sandbox configures the ECS driver (Region is filled from the AWS config).
	Sandbox      ecssandbox.Config
	JWTIssuer    string
	JWTAudience  string
	JWKSURL      string
	MaxSandboxes int
	Registry     string
	// PackageRegistry and PackageRegistryKey locate the Harbor package
	// registry ("" = Harbor's).
	PackageRegistry, PackageRegistryKey string
	// SyncRefreshAfter is the age of a last sync that makes the scheduled
	// refresh re-sync a benchmark (DefaultSyncRefreshAfter when unset).
	SyncRefreshAfter time.Duration
	LogLevel         slog.Level
	// AdminClaim and AdminGroup say which token claim value makes a caller
	// a platform operator; empty = jwtauth's defaults (cognito:groups,
	// gauntlet-admins).
	AdminClaim, AdminGroup string
	// Images configures the sync's image preparation (zero when the
	// function does not read it).
	Images ImagesConfig
	// ModelGateway is the operator's model gateway TOML ("" = the default
	// provider table, no hosted models); Models parses it.
	ModelGateway string
}

// Models returns the resolver submit checks models with: the operator's
// model gateway config, or the default provider table without one. It
// reads no key (submit never calls a model); the runners read theirs.
func (c Config) Models() (*gateway.Resolver, error) {
	if c.ModelGateway == "" {
		return gateway.NewResolver(), nil
	}
	r, err := gateway.ParseOperatorConfigWith([]byte(c.ModelGateway), gateway.ParseOptions{WithoutKeys: true})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvModelGatewayConfig, err)
	}
	return r, nil
}

// ImagesConfig is how the sync pins task images to digests and builds
// Dockerfile tasks in the cloud.
type ImagesConfig struct {
	// BuildProject is the CodeBuild project that builds Dockerfile tasks.
	BuildProject string
	// Repository and RepositoryURI name the task-images ECR repository
	// the builds push to.
	Repository, RepositoryURI string
	// Mirrors maps registry hosts to the ECR pull-through prefixes that
	// front them (GAUNTLET_SANDBOX_MIRRORS, as the sandboxes pull).
	Mirrors map[string]string
	// ResumeAfter is how long a sync parked on running CodeBuild builds
	// waits before its resume message is delivered (GAUNTLET_SYNC_RESUME_AFTER,
	// default benchsync.DefaultResumeAfter; at most SQS's 15 minutes).
	ResumeAfter time.Duration
	// DefaultImage runs tasks that name no image and ship no Dockerfile:
	// a tag (resolved at every sync, its digest recorded per task) or a
	// digest reference; "" for none.
	DefaultImage string
}

// DefaultSyncRefreshAfter is a little under the hourly refresh schedule, so
// a benchmark synced a few minutes after one tick is due at the next.
const DefaultSyncRefreshAfter = 50 * time.Minute

// Load reads the variables the needs call for from getenv (os.Getenv in a
// Lambda). Every missing or malformed variable is reported in one error.
func Load(n Needs, getenv func(string) string) (Config, error) {
	e := env{get: getenv}
	c := Config{
		Stage:    e.required(EnvStage),
		Table:    e.required(EnvTable),
		LogLevel: e.logLevel(),
	}
	e.queue(n.Plan, EnvPlanQueueURL, &c.PlanQueueURL)
	e.queue(n.Slots, EnvSlotsQueueURL, &c.SlotsQueueURL)
	e.queue(n.Completions, EnvCompletionsQueueURL, &c.CompletionsQueueURL)
	e.queue(n.Results, EnvResultsQueueURL, &c.ResultsQueueURL)
	e.queue(n.Sync, EnvSyncQueueURL, &c.SyncQueueURL)
	if n.Blobs {
		c.Bucket = e.required(EnvBucket)
	}
	if n.Secrets {
		c.SecretsPrefix = e.required(EnvSecretsPrefix)
		c.SecretsKMSKey = getenv(EnvSecretsKMSKey) // empty: the AWS managed key
	}
	if n.Sandboxes {
		c.Sandbox = ecssandbox.Config{
			Cluster:          e.required(EnvCluster),
			Subnets:          e.list(EnvSubnets, true),
			SecurityGroups:   e.list(EnvSecurityGroups, false),
			TaskRoleARN:      e.required(EnvSandboxTaskRoleARN),
			ExecutionRoleARN: e.required(EnvSandboxExecutionRole),
			LogGroup:         e.required(EnvSandboxLogGroup),
			RunnerImage:      e.required(EnvRunnerImage),
			Family:           getenv(EnvSandboxTaskFamily),
			DefaultImage:     getenv(EnvSandboxDefaultImage),
			AgentsImage:      getenv(EnvSandboxAgentsImage),
			Mirrors:          e.mirrors(EnvSandboxMirrors),
		}
		if n.SandboxKey {
			c.Sandbox.KMSKey = e.required(EnvSandboxKMSKey)
		}
	}
	if n.JWT {
		c.JWTIssuer = e.required(EnvJWTIssuer)
		c.JWTAudience = e.required(EnvJWTAudience)
		c.JWKSURL = getenv(EnvJWKSURL)
		c.AdminClaim, c.AdminGroup = strings.TrimSpace(getenv(EnvAdminClaim)), strings.TrimSpace(getenv(EnvAdminGroup))
	}
	if n.Images {
		c.Images = ImagesConfig{
			BuildProject:  e.required(EnvImageBuildProject),
			Repository:    e.required(EnvTaskImagesRepository),
			RepositoryURI: e.required(EnvTaskImagesURI),
			Mirrors:       e.mirrors(EnvSandboxMirrors),
			DefaultImage:  e.imageRef(EnvSandboxDefaultImage),
			ResumeAfter:   e.duration(EnvSyncResumeAfter, benchsync.DefaultResumeAfter),
		}
		if d := c.Images.ResumeAfter; d <= 0 || d > 15*time.Minute {
			e.problems = append(e.problems, fmt.Sprintf("%s=%s must be over 0 and at most 15m (SQS's longest delay)", EnvSyncResumeAfter, d))
		}
	}
	if n.MaxSandboxes {
		c.MaxSandboxes = e.count(EnvMaxSandboxes)
	}
	if n.Registry {
		c.Registry = getenv(EnvRegistry)
		c.PackageRegistry, c.PackageRegistryKey = getenv(EnvPackageRegistry), getenv(EnvPackageRegistryKey)
	}
	if n.Refresh {
		c.SyncRefreshAfter = e.duration(EnvSyncRefreshAfter, DefaultSyncRefreshAfter)
	}
	if n.ModelGateway {
		e.modelGateway(&c, n.Sandboxes)
	}
	return c, e.err()
}

// modelGateway reads the operator's gateway config and, for a function that
// launches sandboxes, what their tasks get: the config and the hosted key's
// secret under the variable hosted.api_key_env names.
func (e *env) modelGateway(c *Config, sandboxes bool) {
	c.ModelGateway = e.get(EnvModelGatewayConfig)
	models, err := c.Models()
	if err != nil {
		e.problems = append(e.problems, err.Error())
		return
	}
	var keyEnv string
	if h := models.Hosted; h != nil {
		if h.APIKeyFile != "" {
			e.problems = append(e.problems, fmt.Sprintf("%s: hosted.api_key_file: a sandbox task has no operator files; put the key in Secrets Manager and name its variable with hosted.api_key_env", EnvModelGatewayConfig))
		}
		keyEnv = h.APIKeyEnv
	}
	if !sandboxes {
		return
	}
	c.Sandbox.ModelGatewayConfig = c.ModelGateway
	arn := strings.TrimSpace(e.get(EnvModelGatewayKeySecret))
	switch {
	case keyEnv != "" && arn == "":
		e.problems = append(e.problems, fmt.Sprintf("%s is not set, and %s's hosted.api_key_env needs the secret holding the key", EnvModelGatewayKeySecret, EnvModelGatewayConfig))
	case keyEnv == "" && arn != "":
		e.problems = append(e.problems, fmt.Sprintf("%s is set, but %s names no hosted.api_key_env to put the key in", EnvModelGatewayKeySecret, EnvModelGatewayConfig))
	case arn != "":
		c.Sandbox.ModelGatewaySecrets = map[string]string{keyEnv: arn}
	}
}

// env reads variables and collects every problem.
type env struct {
	get      func(string) string
	problems []string
}

func (e *env) required(name string) string {
	v := strings.TrimSpace(e.get(name))
	if v == "" {
		e.problems = append(e.problems, name+" is not set")
	}
	return v
}

func (e *env) queue(need bool, name string, dst *string) {
	if !need {
		return
	}
	v := e.required(name)
	if v != "" && !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
		e.problems = append(e.problems, fmt.Sprintf("%s=%q is not a queue URL", name, v))
	}
	*dst = v
}

// list reads a comma-separated list (the CDK stack joins subnet ids so).
func (e *env) list(name string, required bool) []string {
	raw := e.get(name)
	if required {
		raw = e.required(name)
	}
	var out []string
	for _, s := range strings.Split(raw, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// mirrors reads "host=prefix,host=prefix" (the CDK stack maps docker.io and
// ghcr.io to its ECR pull-through cache prefixes so); unset means none.
func (e *env) mirrors(name string) map[string]string {
	var out map[string]string
	for _, pair := range e.list(name, false) {
		host, prefix, ok := strings.Cut(pair, "=")
		host, prefix = strings.TrimSpace(host), strings.TrimSpace(prefix)
		if !ok || host == "" || prefix == "" || strings.Contains(host, "/") {
			e.problems = append(e.problems, fmt.Sprintf("%s: %q is not registry-host=repository-prefix", name, pair))
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[host] = prefix
	}
	return out
}

// imageRef reads an image reference, a tag or a digest one: the sync
// resolves a tag at every sync and records the digest per task.
func (e *env) imageRef(name string) string {
	v := strings.TrimSpace(e.get(name))
	if v == "" {
		return ""
	}
	if _, err := gcrname.ParseReference(v); err != nil {
		e.problems = append(e.problems, fmt.Sprintf("%s=%q is not an image reference (host/repository:tag or host/repository@sha256:…): %v", name, v, err))
	}
	return v
}

// count reads a non-negative integer; unset means 0.
func (e *env) count(name string) int {
	raw := strings.TrimSpace(e.get(name))
	if raw == "" {
		return 0
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		e.problems = append(e.problems, fmt.Sprintf("%s=%q is not a whole number ≥ 0", name, raw))
	}
	return n
}

// duration reads a Go duration ≥ 0 ("50m", "1h30m"); unset means def.
func (e *env) duration(name string, def time.Duration) time.Duration {
	raw := strings.TrimSpace(e.get(name))
	if raw == "" {
		return def
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		e.problems = append(e.problems, fmt.Sprintf("%s=%q is not a duration ≥ 0 such as 50m or 2h", name, raw))
	}
	return d
}

func (e *env) logLevel() slog.Level {
	raw := strings.TrimSpace(e.get(EnvLogLevel))
	if raw == "" {
		return slog.LevelInfo
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(raw)); err != nil {
		e.problems = append(e.problems, fmt.Sprintf("%s=%q is not debug, info, warn or error", EnvLogLevel, raw))
	}
	return l
}

func (e *env) err() error {
	if len(e.problems) == 0 {
		return nil
	}
	return errors.New("environment: " + strings.Join(e.problems, "; "))
}
