package stacks_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/infra/functions"
	"github.com/gauntlet-bench/gauntlet/infra/infratest"
)

var (
	logActions  = []string{"logs:CreateLogStream", "logs:PutLogEvents"}
	xrayActions = []string{"xray:PutTelemetryRecords", "xray:PutTraceSegments"}
	// The table port's actions only (infra/table): no Scan, no batches, no
	// DescribeTable, no stream reads besides the leaderboard's event source.
	tableRead    = []string{"dynamodb:GetItem", "dynamodb:Query"}
	tableWrite   = []string{"dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
	sqsSend      = []string{"sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"}
	sqsConsume   = []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}
	streamRead   = []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"}
	secretManage = []string{"secretsmanager:CreateSecret", "secretsmanager:DeleteSecret", "secretsmanager:DescribeSecret", "secretsmanager:PutSecretValue", "kms:Encrypt", "kms:GenerateDataKey"}
	secretRead   = []string{"secretsmanager:GetSecretValue", "kms:Decrypt"}
	ecsLaunch    = []string{"ecs:DescribeTaskDefinition", "ecs:DescribeTasks", "ecs:ListTasks", "ecs:RegisterTaskDefinition", "ecs:RunTask", "ecs:StopTask", "ecs:TagResource", "iam:PassRole"}
	imageResolve = []string{"ecr:GetAuthorizationToken", "ecr:DescribeImages", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer",
		"ecr:BatchImportUpstreamImage", "ecr:CreateRepository"}
	imageBuild = []string{"codebuild:StartBuild", "codebuild:BatchGetBuilds", "codebuild:StopBuild"}
	imageCopy  = []string{"ecr:BatchCheckLayerAvailability", "ecr:InitiateLayerUpload", "ecr:UploadLayerPart", "ecr:CompleteLayerUpload", "ecr:PutImage"}
	ecsWatch   = []string{"ecs:DescribeTasks", "ecs:ListTasks", "ecs:StopTask"}
)

func union(lists ...[]string) []string {
	var all []infratest.Statement
	for _, l := range lists {
		all = append(all, infratest.Statement{Actions: l})
	}
	return infratest.Actions(all)
}

// TestFunctionPermissions pins every action each function role may take.
func TestFunctionPermissions(t *testing.T) {
	synthesized(t)
	base := union(logActions, xrayActions)
	want := map[string][]string{
		"api":          union(base, tableRead, tableWrite, sqsSend, secretManage, []string{"s3:GetObject", "s3:PutObject"}),
		"planner":      union(base, tableRead, tableWrite, sqsSend, sqsConsume, ecsWatch),
		"dispatcher":   union(base, tableRead, tableWrite, sqsSend, sqsConsume, secretRead, ecsLaunch, []string{"s3:GetObject", "s3:PutObject", "kms:GenerateDataKey"}),
		"grader":       union(base, tableRead, sqsSend, sqsConsume, []string{"s3:GetObject"}),
		"ingester":     union(base, tableRead, tableWrite, sqsSend, sqsConsume),
		"leaderboard":  union(base, tableRead, tableWrite, streamRead, sqsSend),
		"registrysync": union(base, tableRead, tableWrite, sqsConsume, sqsSend, secretRead, []string{"s3:PutObject"}, imageResolve, imageBuild, imageCopy),
		"watchdog":     union(base, tableRead, tableWrite, sqsSend, ecsWatch),
	}
	for _, name := range functions.Names {
		got := infratest.Actions(infratest.RoleStatements(statelessJSON, title(name)+"FunctionRole"))
		if diff := cmp.Diff(want[name], got); diff != "" {
			t.Errorf("%s role actions (-want +got):\n%s", name, diff)
		}
	}
}

// TestNoWildcardActions: no statement of any role grants "*" or "service:*".
func TestNoWildcardActions(t *testing.T) {
	synthesized(t)
	for id := range infratest.Resources(statelessJSON, "AWS::IAM::Role") {
		for _, s := range infratest.RoleStatements(statelessJSON, id) {
			for _, a := range s.Actions {
				if a == "*" || strings.HasSuffix(a, ":*") {
					t.Errorf("role %s grants wildcard action %q on %v", id, a, s.Resources)
				}
			}
		}
	}
}

// TestScopedResources checks where the sensitive actions point.
func TestScopedResources(t *testing.T) {
	synthesized(t)
	type check struct {
		function, action string
		resource         func(string) bool
		condition        string
	}
	contains := func(sub string) func(string) bool { return func(r string) bool { return strings.Contains(r, sub) } }
	checks := []check{
		{"api", "secretsmanager:CreateSecret", contains(":secret:gauntlet/dev/*"), ""},
		{"api", "kms:GenerateDataKey", contains("SecretsKey"), "kms:ViaService"},
		{"api", "s3:PutObject", contains("/downloads/*"), ""},
		{"dispatcher", "secretsmanager:GetSecretValue", contains(":secret:gauntlet/dev/*"), ""},
		{"dispatcher", "kms:Decrypt", contains("SecretsKey"), "kms:ViaService"},
		{"dispatcher", "kms:GenerateDataKey", contains("SandboxKey"), `"kms:EncryptionContextKeys":["gauntlet:launch"]`},
		{"dispatcher", "ecs:RunTask", contains(":task-definition/gauntlet-dev-sandbox*:*"), "ecs:cluster"},
		{"dispatcher", "ecs:RegisterTaskDefinition", contains(":task-definition/gauntlet-dev-sandbox*:*"), ""},
		{"dispatcher", "ecs:StopTask", contains(":task/"), "ecs:cluster"},
		{"dispatcher", "ecs:ListTasks", func(r string) bool { return r == "*" }, "ecs:cluster"},
		{"dispatcher", "s3:PutObject", func(r string) bool {
			return strings.Contains(r, "/runs/*") || strings.Contains(r, "/launches/*")
		}, ""},
		{"planner", "ecs:StopTask", contains(":task/"), "ecs:cluster"},
		{"registrysync", "s3:PutObject", func(r string) bool {
			return strings.Contains(r, "/tasks/*") || strings.Contains(r, "/builds/*")
		}, ""},
		{"registrysync", "secretsmanager:GetSecretValue", contains(":secret:gauntlet/dev/*"), ""}, // registry credentials
		{"registrysync", "kms:Decrypt", contains("SecretsKey"), "kms:ViaService"},
		{"registrysync", "ecr:GetAuthorizationToken", func(r string) bool { return r == "*" }, ""},
		{"registrysync", "ecr:BatchGetImage", func(r string) bool {
			return strings.Contains(r, "TaskImages") || strings.Contains(r, ":repository/gauntlet-dev-")
		}, ""},
		{"registrysync", "ecr:CreateRepository", contains(":repository/gauntlet-dev-"), ""},
		{"registrysync", "ecr:PutImage", contains("TaskImages"), ""}, // copies of images only a workspace login opens
		{"registrysync", "codebuild:StartBuild", contains(":project/gauntlet-dev-image-builds"), ""},
		{"watchdog", "ecs:StopTask", contains(":task/"), "ecs:cluster"},
	}
	for _, c := range checks {
		for _, s := range infratest.RoleStatements(statelessJSON, title(c.function)+"FunctionRole") {
			if !containsString(s.Actions, c.action) {
				continue
			}
			for _, r := range s.Resources {
				if !c.resource(r) {
					t.Errorf("%s: %s on unexpected resource %s", c.function, c.action, r)
				}
			}
			if !strings.Contains(s.Condition, c.condition) {
				t.Errorf("%s: %s condition %q lacks %q", c.function, c.action, s.Condition, c.condition)
			}
		}
	}
	for _, s := range infratest.RoleStatements(statelessJSON, "DispatcherFunctionRole") {
		if !containsString(s.Actions, "iam:PassRole") {
			continue
		}
		if len(s.Resources) != 2 || !strings.Contains(strings.Join(s.Resources, " "), "SandboxTaskRole") ||
			!strings.Contains(strings.Join(s.Resources, " "), "SandboxExecutionRole") {
			t.Errorf("dispatcher may pass %v, want exactly the sandbox task and execution roles", s.Resources)
		}
		if !strings.Contains(s.Condition, `"iam:PassedToService":"ecs-tasks.amazonaws.com"`) {
			t.Errorf("dispatcher iam:PassRole condition = %s, want iam:PassedToService ecs-tasks", s.Condition)
		}
	}
	for _, s := range infratest.RoleStatements(statelessJSON, "ApiFunctionRole") {
		if containsString(s.Actions, "secretsmanager:GetSecretValue") || containsString(s.Actions, "kms:Decrypt") {
			t.Errorf("api can read secret values: %v", s.Actions)
		}
		for _, a := range s.Actions {
			if strings.HasPrefix(a, "ecs:") {
				t.Errorf("api may call %s: it builds no stage that lists, stops or launches sandboxes", a)
			}
		}
	}
}

// TestSandboxTaskRoleMayOnlyDecryptLaunchKeys: code inside a sandbox holds
// no platform credentials, and the runner's task role may do one thing:
// kms:Decrypt on the sandbox key, with the launch encryption context
// required. Nothing names the table, the queues, the bucket or the secrets.
func TestSandboxTaskRoleMayOnlyDecryptLaunchKeys(t *testing.T) {
	synthesized(t)
	statements := infratest.RoleStatements(statelessJSON, "SandboxTaskRole")
	if len(statements) != 1 {
		t.Fatalf("sandbox task role has statements %v, want exactly one", statements)
	}
	s := statements[0]
	if diff := cmp.Diff([]string{"kms:Decrypt"}, s.Actions); diff != "" {
		t.Errorf("sandbox task role actions (-want +got):\n%s", diff)
	}
	if len(s.Resources) != 1 || !strings.Contains(s.Resources[0], "SandboxKey") {
		t.Errorf("sandbox task role may decrypt with %v, want only the sandbox key", s.Resources)
	}
	for _, want := range []string{
		`"ForAllValues:StringEquals":{"kms:EncryptionContextKeys":["gauntlet:launch"]}`,
		`"Null":{"kms:EncryptionContext:gauntlet:launch":"false"}`,
	} {
		if !strings.Contains(s.Condition, want) {
			t.Errorf("sandbox task role condition %s lacks %s", s.Condition, want)
		}
	}
	forbiddenActions := []string{"dynamodb:", "sqs:", "secretsmanager:", "s3:", "ecs:", "iam:", "kms:GenerateDataKey", "kms:Encrypt"}
	forbiddenResources := []string{"DataTable", "Queue", "ArtifactsBucket", "SecretsKey", ":secret:", "*"}
	for _, a := range s.Actions {
		for _, f := range forbiddenActions {
			if strings.HasPrefix(a, f) {
				t.Errorf("sandbox task role may %s", a)
			}
		}
	}
	for _, r := range s.Resources {
		for _, f := range forbiddenResources {
			if strings.Contains(r, f) {
				t.Errorf("sandbox task role names %s", r)
			}
		}
	}
	// The execution role pulls images, writes logs and reads the hosted
	// key's secret (TestHostedKeySecretReadOnlyByTheExecutionRole), nothing else.
	for _, a := range infratest.Actions(infratest.RoleStatements(statelessJSON, "SandboxExecutionRole")) {
		if !strings.HasPrefix(a, "ecr:") && !strings.HasPrefix(a, "logs:") && !strings.HasPrefix(a, "secretsmanager:") {
			t.Errorf("sandbox execution role may %s, want only ecr:, logs: and the hosted key's secretsmanager: actions", a)
		}
	}
	// No other role may use the sandbox key.
	for id := range infratest.Resources(statelessJSON, "AWS::IAM::Role") {
		if strings.HasPrefix(id, "SandboxTaskRole") || strings.HasPrefix(id, "DispatcherFunctionRole") {
			continue
		}
		for _, st := range infratest.RoleStatements(statelessJSON, id) {
			for _, r := range st.Resources {
				if strings.Contains(r, "SandboxKey") {
					t.Errorf("role %s may %v with the sandbox key", id, st.Actions)
				}
			}
		}
	}
}

// TestHostedKeySecretReadOnlyByTheExecutionRole: the secret holding the
// hosted endpoint's key (context hostedKeySecretArn) is readable by the
// sandbox execution role, which ECS uses to inject it into the runner, on
// that one ARN; no other role (the task role, which code in the task could
// reach, or a function) names it.
func TestHostedKeySecretReadOnlyByTheExecutionRole(t *testing.T) {
	synthesized(t)
	var actions []string
	for _, s := range infratest.RoleStatements(statelessJSON, "SandboxExecutionRole") {
		var sm []string
		for _, a := range s.Actions {
			if strings.HasPrefix(a, "secretsmanager:") {
				sm = append(sm, a)
			}
		}
		if len(sm) == 0 {
			continue
		}
		actions = append(actions, sm...)
		if diff := cmp.Diff([]string{testHostedKeySecret}, s.Resources); diff != "" {
			t.Errorf("execution role %v on (-want +got):\n%s", sm, diff)
		}
	}
	if !containsString(actions, "secretsmanager:GetSecretValue") {
		t.Errorf("execution role secretsmanager actions %v, want secretsmanager:GetSecretValue on the hosted key's secret", actions)
	}
	for id := range infratest.Resources(statelessJSON, "AWS::IAM::Role") {
		if strings.HasPrefix(id, "SandboxExecutionRole") {
			continue
		}
		for _, st := range infratest.RoleStatements(statelessJSON, id) {
			for _, r := range st.Resources {
				if r == testHostedKeySecret {
					t.Errorf("role %s may %v on the hosted key's secret", id, st.Actions)
				}
			}
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
