package stacks_test

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/infra/config"
	"github.com/gauntlet-bench/gauntlet/infra/functions"
	"github.com/gauntlet-bench/gauntlet/infra/infratest"
	"github.com/gauntlet-bench/gauntlet/infra/stacks"
)

func title(name string) string { return strings.ToUpper(name[:1]) + name[1:] }

// function returns the Lambda function resource of a gauntlet function and its logical id.
func function(t *testing.T, name string) (string, map[string]any) {
	t.Helper()
	for id, fn := range infratest.Resources(statelessJSON, "AWS::Lambda::Function") {
		if strings.HasPrefix(id, title(name)+"Function") && !strings.Contains(id, "Logs") {
			return id, infratest.Props(fn)
		}
	}
	t.Fatalf("no function %s in the stateless template", name)
	return "", nil
}

// stackOutput matches an import of an export of the stateful stack whose
// name mentions the construct: cross-stack references are plain
// CloudFormation exports and imports (Fn::GetStackOutput is not understood
// everywhere CloudFormation templates are deployed, moto for one).
func stackOutput(construct string) assertions.Matcher {
	return assertions.Match_ObjectEquals(&map[string]any{
		"Fn::ImportValue": assertions.Match_StringLikeRegexp(jsii.String("^Gauntlet-Dev-Stateful:ExportsOutput.*" + construct)),
	})
}

// TestCrossStackReferencesAreExports: no Fn::GetStackOutput in either
// template, and every import of the stateless stack names an export of the
// stateful one.
func TestCrossStackReferencesAreExports(t *testing.T) {
	synthesized(t)
	exports := map[string]bool{}
	for _, o := range statefulJSON["Outputs"].(map[string]any) {
		if e, ok := o.(map[string]any)["Export"].(map[string]any); ok {
			exports[e["Name"].(string)] = true
		}
	}
	for name, tmpl := range map[string]map[string]any{"stateful": statefulJSON, "stateless": statelessJSON} {
		data, err := json.Marshal(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "Fn::GetStackOutput") {
			t.Errorf("the %s template uses Fn::GetStackOutput; want exports and Fn::ImportValue", name)
		}
	}
	imports := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if name, ok := v["Fn::ImportValue"].(string); ok {
				imports++
				if !exports[name] {
					t.Errorf("the stateless stack imports %s, which the stateful stack does not export", name)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(statelessJSON)
	if imports == 0 {
		t.Error("the stateless stack imports nothing from the stateful one")
	}
}

func TestFunctions(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	for _, name := range functions.Names {
		statelessTemplate.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Runtime":       "provided.al2023",
			"Architectures": []any{"arm64"},
			"Handler":       "bootstrap",
			"TracingConfig": map[string]any{"Mode": "Active"},
			"Timeout":       stacks.Timeouts[name].Seconds(),
			"Description":   assertions.Match_StringLikeRegexp(jsii.String("^gauntlet " + name + ": ")),
			"LoggingConfig": map[string]any{"LogGroup": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^" + title(name) + "FunctionLogs"))}},
		})
	}
	statelessTemplate.AllResourcesProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{"RetentionInDays": 30})
	// Scheduled singletons reserve one execution; nothing else reserves any.
	for _, name := range functions.Names {
		_, fn := function(t, name)
		got := fn["ReservedConcurrentExecutions"]
		want := any(nil)
		if name == "watchdog" || name == "registrysync" {
			want = float64(1)
		}
		if got != want {
			t.Errorf("%s ReservedConcurrentExecutions = %v, want %v", name, got, want)
		}
	}
}

// TestEnvironment pins which variables each function receives: only those it uses.
func TestEnvironment(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	common := []string{"GAUNTLET_STAGE", "GAUNTLET_TABLE", "LOG_LEVEL"}
	sandbox := []string{"GAUNTLET_CLUSTER", "GAUNTLET_SUBNETS", "GAUNTLET_SECURITY_GROUPS", "GAUNTLET_SANDBOX_TASK_ROLE_ARN",
		"GAUNTLET_SANDBOX_EXECUTION_ROLE_ARN", "GAUNTLET_SANDBOX_LOG_GROUP", "GAUNTLET_RUNNER_IMAGE", "GAUNTLET_SANDBOX_TASK_FAMILY",
		"GAUNTLET_SANDBOX_AGENTS_IMAGE", "GAUNTLET_SANDBOX_MIRRORS"}
	want := map[string][]string{
		"api": {"GAUNTLET_PLAN_QUEUE_URL", "GAUNTLET_SYNC_QUEUE_URL", "GAUNTLET_BUCKET", "GAUNTLET_SECRETS_PREFIX",
			"GAUNTLET_SECRETS_KMS_KEY", "GAUNTLET_CONSOLE_ORIGIN", "GAUNTLET_JWT_ISSUER", "GAUNTLET_JWT_AUDIENCE", "GAUNTLET_MODEL_GATEWAY_CONFIG"},
		"planner": append([]string{"GAUNTLET_SLOTS_QUEUE_URL", "GAUNTLET_PLAN_QUEUE_URL"}, sandbox...),
		"dispatcher": append([]string{"GAUNTLET_SLOTS_QUEUE_URL", "GAUNTLET_COMPLETIONS_QUEUE_URL", "GAUNTLET_RESULTS_QUEUE_URL", "GAUNTLET_BUCKET",
			"GAUNTLET_SECRETS_PREFIX", "GAUNTLET_SECRETS_KMS_KEY", "GAUNTLET_MAX_SANDBOXES", "GAUNTLET_SANDBOX_KMS_KEY",
			"GAUNTLET_MODEL_GATEWAY_CONFIG", "GAUNTLET_MODEL_GATEWAY_KEY_SECRET_ARN"}, sandbox...),
		"grader":      {"GAUNTLET_RESULTS_QUEUE_URL", "GAUNTLET_BUCKET"},
		"ingester":    {"GAUNTLET_SLOTS_QUEUE_URL"},
		"leaderboard": nil,
		"registrysync": {"GAUNTLET_SYNC_QUEUE_URL", "GAUNTLET_BUCKET", "GAUNTLET_SECRETS_PREFIX", "GAUNTLET_SECRETS_KMS_KEY", "GAUNTLET_IMAGE_BUILD_PROJECT", "GAUNTLET_TASK_IMAGES_REPOSITORY",
			"GAUNTLET_TASK_IMAGES_REPOSITORY_URI", "GAUNTLET_SANDBOX_MIRRORS", "GAUNTLET_SANDBOX_DEFAULT_IMAGE"},
		"watchdog": append([]string{"GAUNTLET_PLAN_QUEUE_URL", "GAUNTLET_SLOTS_QUEUE_URL", "GAUNTLET_COMPLETIONS_QUEUE_URL"}, sandbox...),
	}
	for _, name := range functions.Names {
		_, fn := function(t, name)
		vars := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
		var got []string
		for k := range vars {
			got = append(got, k)
		}
		wantKeys := append(slices.Clone(common), want[name]...)
		sort.Strings(got)
		sort.Strings(wantKeys)
		if diff := cmp.Diff(wantKeys, got); diff != "" {
			t.Errorf("%s environment keys (-want +got):\n%s", name, diff)
		}
		if vars["GAUNTLET_STAGE"] != "dev" || vars["LOG_LEVEL"] != "info" {
			t.Errorf("%s GAUNTLET_STAGE=%v LOG_LEVEL=%v, want dev, info", name, vars["GAUNTLET_STAGE"], vars["LOG_LEVEL"])
		}
		// The default image is a tag the sync resolves (and records per
		// task); the launcher, which runs digests only, is not given it.
		if img, ok := vars["GAUNTLET_SANDBOX_DEFAULT_IMAGE"]; ok && (name != "registrysync" || img != config.DefaultTaskImage) {
			t.Errorf("%s GAUNTLET_SANDBOX_DEFAULT_IMAGE = %v, want it only on registrysync, = %s", name, img, config.DefaultTaskImage)
		}
		if p, ok := vars["GAUNTLET_SECRETS_PREFIX"]; ok && p != "gauntlet/dev/" {
			t.Errorf("%s GAUNTLET_SECRETS_PREFIX = %v, want gauntlet/dev/", name, p)
		}
		if c, ok := vars["GAUNTLET_MODEL_GATEWAY_CONFIG"]; ok && c != testGatewayConfig {
			t.Errorf("%s GAUNTLET_MODEL_GATEWAY_CONFIG = %q, want the operator's file %q", name, c, testGatewayConfig)
		}
		if a, ok := vars["GAUNTLET_MODEL_GATEWAY_KEY_SECRET_ARN"]; ok && a != testHostedKeySecret {
			t.Errorf("%s GAUNTLET_MODEL_GATEWAY_KEY_SECRET_ARN = %v, want %s", name, a, testHostedKeySecret)
		}
	}
}

func TestEventSources(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	sources := []struct {
		function, queue       string
		batch, maxConcurrency float64
	}{
		{"planner", "PlanQueue", 1, 5},
		{"dispatcher", "SlotsQueue", 10, float64(cfg.DispatcherConcurrency)},
		{"ingester", "ResultsQueue", 10, 10},
		{"registrysync", "SyncQueue", 1, 2},
		{"grader", "CompletionsQueue", 10, 10},
	}
	for _, s := range sources {
		id, _ := function(t, s.function)
		statelessTemplate.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
			"FunctionName":          map[string]any{"Ref": id},
			"EventSourceArn":        stackOutput(s.queue),
			"BatchSize":             s.batch,
			"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
			"ScalingConfig":         map[string]any{"MaximumConcurrency": s.maxConcurrency},
		})
	}
	leaderboard, _ := function(t, "leaderboard")
	statelessTemplate.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"FunctionName":               map[string]any{"Ref": leaderboard},
		"StartingPosition":           "TRIM_HORIZON",
		"BisectBatchOnFunctionError": true,
		"MaximumRetryAttempts":       5,
		"FunctionResponseTypes":      []any{"ReportBatchItemFailures"},
		"DestinationConfig": map[string]any{"OnFailure": map[string]any{
			"Destination": stackOutput("LeaderboardStreamFailures"),
		}},
		// Only changes to runs and results invoke the recompute.
		"FilterCriteria": map[string]any{"Filters": []any{
			map[string]any{"Pattern": `{"dynamodb":{"Keys":{"sk":{"S":["RUN",{"prefix":"RESULT#"}]}}}}`},
		}},
	})
	statelessTemplate.ResourceCountIs(jsii.String("AWS::Lambda::EventSourceMapping"), jsii.Number(6))
}

func TestTriggers(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	statelessTemplate.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"EventPattern": map[string]any{
			"source":      []any{"aws.ecs"},
			"detail-type": []any{"ECS Task State Change"},
			"detail": map[string]any{
				"clusterArn": []any{map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^SandboxCluster")), "Arn"}}},
				"lastStatus": []any{"STOPPED"},
			},
		},
		"Targets": []any{assertions.Match_ObjectLike(&map[string]any{
			"Arn":              stackOutput("CompletionsQueue"),
			"DeadLetterConfig": assertions.Match_AnyValue(),
			"RetryPolicy":      assertions.Match_AnyValue(),
		})},
	})
	for _, s := range []struct{ function, expression string }{
		{"registrysync", "rate(1 hour)"},
		{"watchdog", "rate(1 minute)"},
	} {
		id, _ := function(t, s.function)
		statelessTemplate.HasResourceProperties(jsii.String("AWS::Scheduler::Schedule"), map[string]any{
			"ScheduleExpression": s.expression,
			"State":              "ENABLED",
			"Target": assertions.Match_ObjectLike(&map[string]any{
				"Arn":              map[string]any{"Fn::GetAtt": []any{id, "Arn"}},
				"DeadLetterConfig": assertions.Match_AnyValue(),
			}),
		})
	}
	// Asynchronous failures of the event-driven functions land in a queue.
	statelessTemplate.ResourceCountIs(jsii.String("AWS::Lambda::EventInvokeConfig"), jsii.Number(2))
	statelessTemplate.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(1))
}

func TestAPI(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	statelessTemplate.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Api"), map[string]any{
		"ProtocolType": "HTTP",
		"CorsConfiguration": map[string]any{
			"AllowOrigins": []any{assertions.Match_AnyValue()},
		},
	})
	routes := map[string]string{"ANY /v1/{proxy+}": "JWT", "GET /v1/openapi.json": "NONE", "GET /healthz": "NONE", "GET /v1/health": "NONE"}
	for key, auth := range routes {
		statelessTemplate.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]any{
			"RouteKey":          key,
			"AuthorizationType": auth,
		})
	}
	statelessTemplate.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Route"), jsii.Number(len(routes)))
	statelessTemplate.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Integration"), map[string]any{
		"IntegrationType": "AWS_PROXY", "PayloadFormatVersion": "2.0",
	})
	pool := assertions.NewCapture(nil)
	statelessTemplate.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Authorizer"), map[string]any{
		"AuthorizerType": "JWT",
		"JwtConfiguration": map[string]any{
			"Issuer":   map[string]any{"Fn::GetAtt": []any{pool, "ProviderURL"}},
			"Audience": []any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^ApiUserPoolClient"))}},
		},
	})
	if !strings.HasPrefix(*pool.AsString(), "ApiUserPool") {
		t.Errorf("authorizer issuer names %q, want the stack's Cognito user pool", *pool.AsString())
	}
	statelessTemplate.HasResourceProperties(jsii.String("AWS::Cognito::UserPool"), map[string]any{
		"MfaConfiguration":      "ON",
		"AdminCreateUserConfig": map[string]any{"AllowAdminCreateUserOnly": true},
	})
	statelessTemplate.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), map[string]any{
		"StageName":  "$default",
		"AutoDeploy": true,
		"DefaultRouteSettings": map[string]any{
			"ThrottlingRateLimit":  float64(cfg.ThrottleRate),
			"ThrottlingBurstLimit": float64(cfg.ThrottleBurst),
		},
		"AccessLogSettings": map[string]any{
			"DestinationArn": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^ApiAccessLogs")), "Arn"}},
			"Format":         assertions.Match_StringLikeRegexp(jsii.String(`"routeKey":"\$context.routeKey"`)),
		},
	})
}

func TestSandboxNetworkAndCluster(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	statelessTemplate.ResourceCountIs(jsii.String("AWS::EC2::NatGateway"), jsii.Number(cfg.NATGateways))
	statelessTemplate.ResourceCountIs(jsii.String("AWS::EC2::Subnet"), jsii.Number(4)) // public + sandboxes, two AZs
	statelessTemplate.HasResourceProperties(jsii.String("AWS::EC2::FlowLog"), map[string]any{"TrafficType": "ALL"})
	statelessTemplate.ResourceCountIs(jsii.String("AWS::EC2::SecurityGroup"), jsii.Number(1))
	statelessTemplate.HasResourceProperties(jsii.String("AWS::EC2::SecurityGroup"), map[string]any{
		"SecurityGroupEgress":  []any{map[string]any{"CidrIp": "0.0.0.0/0", "IpProtocol": "-1", "Description": "Allow all outbound traffic by default"}},
		"SecurityGroupIngress": assertions.Match_Absent(),
	})
	statelessTemplate.ResourceCountIs(jsii.String("AWS::EC2::SecurityGroupIngress"), jsii.Number(0))
	statelessTemplate.HasResourceProperties(jsii.String("AWS::ECS::Cluster"), map[string]any{
		"ClusterSettings": []any{map[string]any{"Name": "containerInsights", "Value": "enabled"}},
	})
	statelessTemplate.HasResourceProperties(jsii.String("AWS::ECS::TaskDefinition"), map[string]any{
		"Family":                  "gauntlet-dev-sandbox",
		"RequiresCompatibilities": []any{"FARGATE"},
		"NetworkMode":             "awsvpc",
		"RuntimePlatform":         map[string]any{"CpuArchitecture": "X86_64", "OperatingSystemFamily": "LINUX"},
		"TaskRoleArn":             map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^SandboxTaskRole")), "Arn"}},
		"ExecutionRoleArn":        map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^SandboxExecutionRole")), "Arn"}},
		"ContainerDefinitions": []any{assertions.Match_ObjectLike(&map[string]any{
			"Name":             "runner",
			"LogConfiguration": map[string]any{"LogDriver": "awslogs", "Options": assertions.Match_AnyValue()},
			"Environment":      assertions.Match_Absent(),
		})},
	})
}

func TestConsoleHosting(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	statelessTemplate.ResourceCountIs(jsii.String("AWS::CloudFront::OriginAccessControl"), jsii.Number(1))
	statelessTemplate.HasResourceProperties(jsii.String("AWS::CloudFront::Distribution"), map[string]any{
		"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{
			"DefaultRootObject": "index.html",
			"Origins": []any{assertions.Match_ObjectLike(&map[string]any{
				"OriginAccessControlId": assertions.Match_AnyValue(),
			})},
			"DefaultCacheBehavior": assertions.Match_ObjectLike(&map[string]any{"ViewerProtocolPolicy": "redirect-to-https"}),
			"Logging":              assertions.Match_AnyValue(),
		}),
	})
	// No console/ directory exists in the fixture: nothing is uploaded.
	statelessTemplate.ResourceCountIs(jsii.String("Custom::CDKBucketDeployment"), jsii.Number(0))
}
