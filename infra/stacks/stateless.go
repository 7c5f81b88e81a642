package stacks

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/gauntlet-bench/gauntlet/infra/api"
	"github.com/gauntlet-bench/gauntlet/infra/config"
	"github.com/gauntlet-bench/gauntlet/infra/console"
	"github.com/gauntlet-bench/gauntlet/infra/functions"
	"github.com/gauntlet-bench/gauntlet/infra/queues"
	"github.com/gauntlet-bench/gauntlet/infra/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/fnspec"
	sandboxport "github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// StatelessProps configures the stateless stack.
type StatelessProps struct {
	// StackProps carries the environment (account, region) of the stage.
	StackProps awscdk.StackProps
	// Stateful is the stage's stateful stack.
	Stateful *Stateful
	// RunnerContext is the Docker build context of the sandbox-runner image (the repository root).
	RunnerContext string
	// ConsoleSite is the built console to upload; empty uploads nothing.
	ConsoleSite string
}

// Stateless is the stack of compute, triggers and edges.
type Stateless struct {
	// Stack is the CloudFormation stack the constructs are in; a field, not
	// embedded, so the stack's own API is not also Stateless's.
	Stack     awscdk.Stack
	Functions map[string]*functions.Function
	Sandbox   *sandbox.Sandbox
	API       *api.API
	// Console is nil when the stage hosts no console (context consoleHosting).
	Console *console.Console
	// EventFailures receives events that EventBridge, the Scheduler or an
	// asynchronous invocation could not deliver or process.
	EventFailures *queues.DeadLetter
}

// NewStateless creates the stateless stack of cfg's stage.
func NewStateless(scope constructs.Construct, cfg config.Config, props StatelessProps) (*Stateless, error) {
	sp := props.StackProps
	name := StackName(cfg.Stage, "Stateless")
	sp.StackName = jsii.String(name)
	sp.Description = jsii.String(fmt.Sprintf("gauntlet %s: functions, API, sandboxes, schedules, console", cfg.Stage))
	stack := awscdk.NewStack(scope, jsii.String(name), &sp)
	s := &Stateless{Stack: stack, Functions: map[string]*functions.Function{}}
	retention, err := retentionDays(cfg.LogRetentionDays)
	if err != nil {
		return nil, err
	}
	s.Sandbox, err = sandbox.New(stack, "Sandbox", sandbox.Props{
		Stage: cfg.Stage, NATGateways: cfg.NATGateways, LogRetention: retention, RunnerContext: props.RunnerContext,
		RunnerImage: cfg.RunnerImage, AgentsImage: cfg.AgentsImage, RestrictDefaultSecurityGroup: cfg.RestrictDefaultSecurityGroup,
	})
	if err != nil {
		return nil, err
	}
	// The image build job reads its contexts from the artifacts bucket;
	// GrantBuild and BuildEnvironment give the sync what it needs to start it.
	s.Sandbox.AddImageBuilds(props.Stateful.Artifacts.Bucket, cfg.Stage)
	if cfg.ConsoleHosting {
		s.Console = console.New(stack, "Console", console.Props{SiteDir: props.ConsoleSite, LogRetention: retention})
	}
	s.EventFailures = queues.NewDeadLetter(stack, "EventFailures", false)

	env := s.environment(cfg, props.Stateful)
	for _, f := range fnspec.Functions {
		reserved := 0
		if cfg.ReservedConcurrency && f.Singleton {
			reserved = 1
		}
		fn, err := functions.New(stack, titleCase(f.Name)+"Function", functions.Props{
			Name:                f.Name,
			AssetRoot:           cfg.LambdaAssets,
			Description:         "gauntlet " + f.Name + ": " + f.Description,
			Timeout:             f.Timeout,
			MemoryMB:            f.MemoryMB,
			Environment:         env[f.Name],
			LogRetention:        retention,
			ReservedConcurrency: reserved,
		})
		if err != nil {
			return nil, err
		}
		if f.Reads(fnspec.Images) {
			// Its environment names the build project without a reference.
			fn.Function.Node().AddDependency(s.Sandbox.ImageBuilds)
		}
		s.Functions[f.Name] = fn
	}
	s.API, err = api.New(stack, "Api", api.Props{
		Handler:       s.Functions[fnspec.APIFunction.Name].Function,
		JWTIssuer:     cfg.JWTIssuer,
		JWTAudience:   cfg.JWTAudience,
		CORSOrigin:    s.consoleOrigin(cfg),
		ThrottleRate:  cfg.ThrottleRate,
		ThrottleBurst: cfg.ThrottleBurst,
		LogRetention:  retention,
		Retain:        !cfg.IsDev(),
	})
	if err != nil {
		return nil, err
	}
	s.Functions[fnspec.APIFunction.Name].Function.AddEnvironment(jsii.String("GAUNTLET_JWT_ISSUER"), s.API.Issuer, nil)
	s.Functions[fnspec.APIFunction.Name].Function.AddEnvironment(jsii.String("GAUNTLET_JWT_AUDIENCE"), s.API.Audience, nil)

	s.grant(props.Stateful)
	s.grantHostedKey(cfg)
	if err := s.trigger(cfg, props.Stateful); err != nil {
		return nil, err
	}
	s.outputs()
	return s, nil
}

// consoleOrigin is the configured origin or the console's CloudFront URL.
func (s *Stateless) consoleOrigin(cfg config.Config) *string {
	if cfg.ConsoleOrigin != "" {
		return jsii.String(cfg.ConsoleOrigin)
	}
	return s.Console.URL()
}

// environment returns each function's variables: only those for the ports
// and settings the function table gives it (what pkg/awsx/cloud loads for
// it).
func (s *Stateless) environment(cfg config.Config, st *Stateful) map[string]map[string]*string {
	out := map[string]map[string]*string{}
	for _, f := range fnspec.Functions {
		env := map[string]*string{
			"GAUNTLET_STAGE": jsii.String(cfg.Stage),
			"GAUNTLET_TABLE": st.Table.Table.TableName(),
			"LOG_LEVEL":      jsii.String(cfg.LogLevel),
		}
		set := func(vars map[string]*string) {
			for k, v := range vars {
				env[k] = v
			}
		}
		for _, q := range fnspec.Queues {
			if f.Access(q)&fnspec.Write != 0 {
				env["GAUNTLET_"+strings.ToUpper(string(q))+"_QUEUE_URL"] = st.queue(q).Queue.QueueUrl()
			}
		}
		if f.Access(fnspec.Blobs) != 0 {
			env["GAUNTLET_BUCKET"] = st.Artifacts.Bucket.BucketName()
		}
		if f.Access(fnspec.Secrets) != 0 {
			env["GAUNTLET_SECRETS_PREFIX"] = jsii.String(st.Secrets.Prefix)
			env["GAUNTLET_SECRETS_KMS_KEY"] = st.Secrets.Key.KeyArn()
		}
		if f.Access(fnspec.Sandboxes) != 0 {
			set(s.Sandbox.Environment())
		}
		if f.Access(fnspec.SandboxKey) != 0 {
			env["GAUNTLET_SANDBOX_KMS_KEY"] = st.SandboxKey.Key.KeyArn()
		}
		if f.Reads(fnspec.Images) {
			set(s.Sandbox.BuildEnvironment())
			env["GAUNTLET_SANDBOX_MIRRORS"] = s.Sandbox.MirrorsSetting()
			// The sync resolves the default image (a tag at every sync) and
			// records its digest per task, so runs pin it.
			env["GAUNTLET_SANDBOX_DEFAULT_IMAGE"] = jsii.String(cfg.DefaultImage)
		}
		if f.Access(fnspec.Sandboxes)&fnspec.Write != 0 && cfg.DefaultImagePinned() {
			// The launcher's fallback for a manifest synced without
			// environments; it runs digests only, so a tag is left to the sync.
			env["GAUNTLET_SANDBOX_DEFAULT_IMAGE"] = jsii.String(cfg.DefaultImage)
		}
		if f.Reads(fnspec.MaxSandboxes) {
			env["GAUNTLET_MAX_SANDBOXES"] = jsii.String(fmt.Sprint(cfg.MaxSandboxes))
		}
		if f.Reads(fnspec.Registry) && cfg.Registry != "" {
			env["GAUNTLET_REGISTRY"] = jsii.String(cfg.Registry)
		}
		if f.Reads(fnspec.Registry) && cfg.PackageRegistry != "" {
			env["GAUNTLET_PACKAGE_REGISTRY"] = jsii.String(cfg.PackageRegistry)
		}
		if f.Reads(fnspec.Registry) && cfg.PackageRegistryKey != "" {
			env["GAUNTLET_PACKAGE_REGISTRY_KEY"] = jsii.String(cfg.PackageRegistryKey)
		}
		if f.Reads(fnspec.ConsoleOrigin) {
			env["GAUNTLET_CONSOLE_ORIGIN"] = s.consoleOrigin(cfg)
		}
		if f.Reads(fnspec.ModelGateway) && cfg.ModelGatewayConfig != "" {
			// Submit checks models against it; the dispatcher hands it to
			// the sandbox tasks' runners.
			env[sandboxport.GatewayConfigEnv] = jsii.String(cfg.ModelGatewayConfig)
		}
		if f.Reads(fnspec.ModelGateway) && f.Access(fnspec.Sandboxes)&fnspec.Write != 0 && cfg.HostedKeySecretARN != "" {
			// Only the ARN: ECS injects the value into the task's runner.
			env["GAUNTLET_MODEL_GATEWAY_KEY_SECRET_ARN"] = jsii.String(cfg.HostedKeySecretARN)
		}
		out[f.Name] = env
	}
	return out
}

func (s *Stateless) outputs() {
	out := func(id string, value *string, description string) {
		awscdk.NewCfnOutput(s.Stack, jsii.String(id), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(description)})
	}
	out("ApiUrl", s.API.URL(), "Base URL of the gauntlet API (GAUNTLET_API_URL for the CLI)")
	if s.Console != nil {
		out("ConsoleUrl", s.Console.URL(), "URL of the web console")
	}
	if s.API.UserPool != nil {
		out("UserPoolId", s.API.UserPool.UserPoolId(), "Cognito user pool that issues API tokens")
		out("UserPoolClientId", s.API.UserPoolClient.UserPoolClientId(), "Cognito app client id (the JWT audience)")
	}
}

// titleCase turns a function name into a construct id ("registrysync" → "Registrysync").
func titleCase(name string) string {
	if name == "" {
		return name
	}
	return string(name[0]-'a'+'A') + name[1:]
}

// retentions maps the day counts config accepts to CloudWatch's retention settings.
var retentions = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 120: awslogs.RetentionDays_FOUR_MONTHS,
	150: awslogs.RetentionDays_FIVE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS, 731: awslogs.RetentionDays_TWO_YEARS,
	1096: awslogs.RetentionDays_THREE_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
	2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS, 3288: awslogs.RetentionDays_NINE_YEARS,
	3653: awslogs.RetentionDays_TEN_YEARS,
}

func retentionDays(days int) (awslogs.RetentionDays, error) {
	r, ok := retentions[days]
	if !ok {
		return "", fmt.Errorf("log retention of %d days is not a CloudWatch Logs setting", days)
	}
	return r, nil
}
