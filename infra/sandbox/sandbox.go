// Package sandbox provisions where agent attempts run: a VPC whose private
// subnets reach the internet only through NAT, an egress-only security group,
// an ECS cluster for Fargate, the sandbox log group, the roles a sandbox runs
// with (an execution role that pulls images and writes logs, and a task role
// whose one permission, granted by the stack, is to decrypt its launch's
// data key with the sandbox KMS key) and the base task definition of the
// runner; and the images sandboxes run: the repository built task images
// are pushed to, ECR pull-through cache rules fronting Docker Hub and GHCR,
// and the agent-bundles image.
package sandbox

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscodebuild"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecr"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// RunnerDockerfile is the runner image's Dockerfile, relative to the build context.
const RunnerDockerfile = "infra/runner/Dockerfile"

// runnerContextExcludes keep the runner's Docker context (the repository
// root) down to what the Dockerfile copies.
var runnerContextExcludes = []string{"*", "!go.mod", "!go.sum", "!cmd", "!pkg", "!infra", "infra/*", "!infra/runner"}

// Props configures the sandbox environment.
type Props struct {
	// Stage names the deployment; task definition families start with "gauntlet-<stage>-sandbox".
	Stage string
	// NATGateways is the number of NAT gateways (at least one: sandboxes need egress).
	NATGateways int
	// LogRetention applies to the sandbox and VPC flow-log groups.
	LogRetention awslogs.RetentionDays
	// RunnerContext is the Docker build context of the runner and agents
	// images: the repository root, holding RunnerDockerfile and
	// AgentsDockerfile. Unused for an image given by reference.
	RunnerContext string
	// RunnerImage and AgentsImage name prebuilt images (context
	// runnerImage, agentsImage); empty builds them from their Dockerfiles
	// at deploy.
	RunnerImage, AgentsImage string
	// RestrictDefaultSecurityGroup strips every rule from the VPC's default
	// security group (a Lambda-backed custom resource; sandboxes use their
	// own group either way).
	RestrictDefaultSecurityGroup bool
}

// Sandbox is the network, cluster, roles and base task definition sandboxes run with.
type Sandbox struct {
	constructs.Construct
	Vpc            awsec2.Vpc
	SecurityGroup  awsec2.SecurityGroup
	Cluster        awsecs.Cluster
	LogGroup       awslogs.LogGroup
	ExecutionRole  awsiam.Role
	TaskRole       awsiam.Role
	TaskDefinition awsecs.FargateTaskDefinition
	RunnerImage    Image
	// AgentsImage holds the agent bundles the agents-init container copies
	// into every sandbox task (mounted read-only at /installed-agent).
	AgentsImage Image
	// TaskImages is the repository Dockerfile tasks built at sync are
	// pushed to, tagged by build key.
	TaskImages awsecr.Repository
	// Mirrors are the ECR pull-through cache rules fronting Docker Hub and
	// GHCR.
	Mirrors []Mirror
	// ImageBuilds is the CodeBuild project building Dockerfile tasks
	// (AddImageBuilds; nil until the stack adds it).
	ImageBuilds awscodebuild.Project
	// imageBuildsName is ImageBuilds' name (ImageBuildsProject).
	imageBuildsName string
	// Family is the family of the base task definition and the prefix of
	// every per-image family the dispatcher registers.
	Family string
}

// New creates the sandbox environment under scope.
func New(scope constructs.Construct, id string, props Props) (*Sandbox, error) {
	if props.NATGateways < 1 {
		return nil, fmt.Errorf("sandbox: nat gateways = %d, want at least 1 (sandboxes need egress)", props.NATGateways)
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	s := &Sandbox{Construct: c, Family: fmt.Sprintf("gauntlet-%s-sandbox", props.Stage)}
	s.Vpc = newVPC(c, props)
	s.SecurityGroup = awsec2.NewSecurityGroup(c, jsii.String("SecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              s.Vpc,
		Description:      jsii.String("gauntlet sandboxes: no inbound traffic, all outbound (model APIs, package installs)"),
		AllowAllOutbound: jsii.Bool(true),
	})
	s.Cluster = awsecs.NewCluster(c, jsii.String("Cluster"), &awsecs.ClusterProps{
		Vpc:                            s.Vpc,
		ContainerInsightsV2:            awsecs.ContainerInsights_ENABLED,
		EnableFargateCapacityProviders: jsii.Bool(true),
	})
	s.LogGroup = awslogs.NewLogGroup(c, jsii.String("Logs"), &awslogs.LogGroupProps{
		Retention:     props.LogRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	s.ExecutionRole = awsiam.NewRole(c, jsii.String("ExecutionRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("ecs-tasks.amazonaws.com"), nil),
		Description: jsii.String("gauntlet sandbox task execution: pull the runner and task images, write sandbox logs"),
	})
	s.TaskRole = awsiam.NewRole(c, jsii.String("TaskRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("ecs-tasks.amazonaws.com"), nil),
		Description: jsii.String("gauntlet sandbox task role: only kms:Decrypt of its launch's data key (sandbox key, gauntlet:launch context); only the runner, never the agent's uid, reaches these credentials"),
	})
	var err error
	if s.RunnerImage, err = newImage(c, "RunnerImage", props.RunnerImage, props.RunnerContext, RunnerDockerfile, runnerContextExcludes); err != nil {
		return nil, err
	}
	s.TaskDefinition = awsecs.NewFargateTaskDefinition(c, jsii.String("TaskDefinition"), &awsecs.FargateTaskDefinitionProps{
		Family:         jsii.String(s.Family),
		Cpu:            jsii.Number(1024),
		MemoryLimitMiB: jsii.Number(2048),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture:       awsecs.CpuArchitecture_X86_64(),
			OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
		ExecutionRole: s.ExecutionRole,
		TaskRole:      s.TaskRole,
	})
	// The base task definition runs the runner alone; the dispatcher registers
	// one per task image (runner as init container, X86_64 like this one).
	// Binding the image here also grants the execution role its ECR pull.
	s.TaskDefinition.AddContainer(jsii.String("runner"), &awsecs.ContainerDefinitionOptions{
		Image:     s.RunnerImage.Container,
		Essential: jsii.Bool(true),
		Logging: awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{
			LogGroup:     s.LogGroup,
			StreamPrefix: jsii.String("sandbox"),
		}),
		ReadonlyRootFilesystem: jsii.Bool(false),
	})
	if err := s.newImages(c, props); err != nil {
		return nil, err
	}
	cdknag.NagSuppressions_AddResourceSuppressions(s.ExecutionRole, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("ecr:GetAuthorizationToken supports no resource-level permissions; every other statement of the execution role names its repository or log group."),
		AppliesTo: &[]any{"Resource::*"},
	}}, jsii.Bool(true))
	return s, nil
}

func newVPC(scope constructs.Construct, props Props) awsec2.Vpc {
	flowLogs := awslogs.NewLogGroup(scope, jsii.String("FlowLogs"), &awslogs.LogGroupProps{
		Retention:     props.LogRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	return awsec2.NewVpc(scope, jsii.String("Vpc"), &awsec2.VpcProps{
		MaxAzs:                       jsii.Number(2),
		RestrictDefaultSecurityGroup: jsii.Bool(props.RestrictDefaultSecurityGroup),
		NatGateways:                  jsii.Number(float64(props.NATGateways)),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{
			{Name: jsii.String("public"), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(24)},
			{Name: jsii.String("sandboxes"), SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS, CidrMask: jsii.Number(20)},
		},
		FlowLogs: &map[string]*awsec2.FlowLogOptions{
			"all": {
				Destination: awsec2.FlowLogDestination_ToCloudWatchLogs(flowLogs, nil),
				TrafficType: awsec2.FlowLogTrafficType_ALL,
			},
		},
	})
}

// SubnetIDs returns the private sandbox subnets as one comma-separated value.
func (s *Sandbox) SubnetIDs() *string {
	ids := s.Vpc.SelectSubnets(&awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}).SubnetIds
	return awscdk.Fn_Join(jsii.String(","), ids)
}

func (s *Sandbox) arn(resource, name string) *string {
	return awscdk.Stack_Of(s.Construct).FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("ecs"),
		Resource:     jsii.String(resource),
		ResourceName: jsii.String(name),
	})
}

// tasksARN matches every task of the sandbox cluster.
func (s *Sandbox) tasksARN() *string {
	return s.arn("task", *s.Cluster.ClusterName()+"/*")
}

// familiesARN matches every revision of the base family and of the per-image families.
func (s *Sandbox) familiesARN() *string { return s.arn("task-definition", s.Family+"*:*") }

func (s *Sandbox) clusterCondition() *map[string]any {
	return &map[string]any{"ArnEquals": map[string]any{"ecs:cluster": s.Cluster.ClusterArn()}}
}

func (s *Sandbox) allow(grantee awsiam.IRole, actions []string, resources []*string, conditions *map[string]any) {
	grantee.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings(actions...),
		Resources:  &resources,
		Conditions: conditions,
	}))
}

// GrantLaunch lets grantee register per-image task definitions in the
// sandbox family, run them in the sandbox cluster with the sandbox roles
// (and no others), tag them, and stop, list and describe them.
func (s *Sandbox) GrantLaunch(grantee awsiam.IRole) {
	s.allow(grantee, []string{"ecs:RegisterTaskDefinition"}, []*string{s.familiesARN()}, nil)
	s.allow(grantee, []string{"ecs:DescribeTaskDefinition"}, []*string{jsii.String("*")}, nil)
	s.allow(grantee, []string{"ecs:RunTask"}, []*string{s.familiesARN()}, s.clusterCondition())
	s.allow(grantee, []string{"ecs:TagResource"}, []*string{s.tasksARN(), s.familiesARN()}, &map[string]any{
		"StringEquals": map[string]any{"ecs:CreateAction": []string{"RunTask", "RegisterTaskDefinition"}},
	})
	s.GrantWatch(grantee)
	s.allow(grantee, []string{"iam:PassRole"}, []*string{s.TaskRole.RoleArn(), s.ExecutionRole.RoleArn()}, &map[string]any{
		"StringEquals": map[string]any{"iam:PassedToService": "ecs-tasks.amazonaws.com"},
	})
	suppress(grantee, "ecs:DescribeTaskDefinition and ecs:ListTasks support no resource-level permissions (ListTasks is conditioned on the sandbox cluster); task and family ARNs end in a wildcard because task ids and revisions are minted at run time.")
}

// GrantStop lets grantee stop tasks of the sandbox cluster.
func (s *Sandbox) GrantStop(grantee awsiam.IRole) {
	s.allow(grantee, []string{"ecs:StopTask"}, []*string{s.tasksARN()}, s.clusterCondition())
	suppress(grantee, "Task ARNs end in a wildcard because task ids are minted at run time; the statement is limited to the sandbox cluster.")
}

// GrantWatch lets grantee list, describe and stop tasks of the sandbox cluster.
func (s *Sandbox) GrantWatch(grantee awsiam.IRole) {
	s.allow(grantee, []string{"ecs:StopTask", "ecs:DescribeTasks"}, []*string{s.tasksARN()}, s.clusterCondition())
	s.allow(grantee, []string{"ecs:ListTasks"}, []*string{jsii.String("*")}, s.clusterCondition())
	suppress(grantee, "ecs:ListTasks supports no resource-level permissions and is conditioned on the sandbox cluster; task ARNs end in a wildcard because task ids are minted at run time.")
}

// Environment returns the variables a function needs to launch sandboxes.
func (s *Sandbox) Environment() map[string]*string {
	return map[string]*string{
		"GAUNTLET_CLUSTER":                    s.Cluster.ClusterArn(),
		"GAUNTLET_SUBNETS":                    s.SubnetIDs(),
		"GAUNTLET_SECURITY_GROUPS":            s.SecurityGroup.SecurityGroupId(),
		"GAUNTLET_SANDBOX_TASK_ROLE_ARN":      s.TaskRole.RoleArn(),
		"GAUNTLET_SANDBOX_EXECUTION_ROLE_ARN": s.ExecutionRole.RoleArn(),
		"GAUNTLET_SANDBOX_LOG_GROUP":          s.LogGroup.LogGroupName(),
		"GAUNTLET_RUNNER_IMAGE":               s.RunnerImage.URI,
		"GAUNTLET_SANDBOX_TASK_FAMILY":        jsii.String(s.Family),
		"GAUNTLET_SANDBOX_AGENTS_IMAGE":       s.AgentsImage.URI,
		"GAUNTLET_SANDBOX_MIRRORS":            s.MirrorsSetting(),
	}
}

// suppress records why the wildcard resources of the ECS statements are
// needed on the grantee's policy (cdk-nag AwsSolutions-IAM5).
func suppress(role awsiam.IRole, reason string) {
	cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-IAM5"),
		Reason: jsii.String(reason),
		AppliesTo: &[]any{
			"Resource::*",
			&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task(-definition)?\/.*\*.*$/g`)},
		},
	}}, jsii.Bool(true))
}
