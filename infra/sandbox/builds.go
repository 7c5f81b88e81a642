package sandbox

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscodebuild"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// BuildContextsPrefix is where the image builder (pkg/awsx/codebuild)
// stores zipped build contexts in the artifacts bucket.
const BuildContextsPrefix = "builds/"

// AddImageBuilds creates the CodeBuild project that builds Dockerfile tasks
// at sync and pushes them to TaskImages tagged with their build key
// (pkg/awsx/codebuild starts it with the context's S3 location and
// IMAGE_TAG). Its role may read only the build contexts and push only to
// TaskImages.
func (s *Sandbox) AddImageBuilds(contexts awss3.IBucket, stage string) awscodebuild.Project {
	key := awskms.NewKey(s.Construct, jsii.String("ImageBuildsKey"), &awskms.KeyProps{
		Description:       jsii.String("gauntlet " + stage + ": encrypts the image build project's artifacts and logs"),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
	})
	s.imageBuildsName = ImageBuildsProject(stage)
	project := awscodebuild.NewProject(s.Construct, jsii.String("ImageBuilds"), &awscodebuild.ProjectProps{
		ProjectName:   jsii.String(s.imageBuildsName),
		Description:   jsii.String("gauntlet " + stage + ": builds a task's environment/Dockerfile at sync and pushes it to the task-images repository"),
		EncryptionKey: key,
		Environment: &awscodebuild.BuildEnvironment{
			BuildImage:  awscodebuild.LinuxBuildImage_STANDARD_7_0(),
			ComputeType: awscodebuild.ComputeType_MEDIUM,
			// docker build needs the daemon CodeBuild runs only in
			// privileged mode; the build holds no platform credential but
			// its role's push to one repository.
			Privileged: jsii.Bool(true),
		},
		EnvironmentVariables: &map[string]*awscodebuild.BuildEnvironmentVariable{
			"REPOSITORY_URI": {Value: s.TaskImages.RepositoryUri()},
		},
		// One build per key at a time is all a sync asks; the default
		// timeout bounds a runaway build (the sync's own timeout stops it
		// earlier).
		Timeout: awscdk.Duration_Minutes(jsii.Number(60)),
		BuildSpec: awscodebuild.BuildSpec_FromObject(&map[string]any{
			"version": "0.2",
			"phases": map[string]any{
				"pre_build": map[string]any{"commands": []string{
					`aws ecr get-login-password --region "$AWS_REGION" | docker login --username AWS --password-stdin "${REPOSITORY_URI%%/*}"`,
				}},
				"build": map[string]any{"commands": []string{
					`test -n "$IMAGE_TAG"`,
					`docker build --platform linux/amd64 -t "$REPOSITORY_URI:$IMAGE_TAG" .`,
					`docker push "$REPOSITORY_URI:$IMAGE_TAG"`,
				}},
			},
		}),
	})
	s.TaskImages.GrantPullPush(project)
	// The build's FROM names each base through its registry's
	// pull-through prefix (pkg/awsx/codebuild BaseRef), so the build
	// pulls from this account's ECR and never from Docker Hub or GHCR.
	if repos := s.mirrorRepositories(); len(repos) > 0 {
		project.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(mirrorPullActions...),
			Resources: &repos,
		}))
	}
	contexts.GrantRead(project, jsii.String(BuildContextsPrefix+"*"))
	cdknag.NagSuppressions_AddResourceSuppressions(project, &[]*cdknag.NagPackSuppression{
		{Id: jsii.String("AwsSolutions-CB3"), Reason: jsii.String("docker build needs CodeBuild's privileged mode; the build's role may only read build contexts and push to the task-images repository.")},
		{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String("ecr:GetAuthorizationToken supports no resource-level permissions; build contexts are read under the builds/ prefix only; CodeBuild's own log and report resources end in the build id."),
			AppliesTo: &[]any{"Resource::*",
				&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::.*(builds\/\*|:repository\/gauntlet-.*\/\*|:log-group:.*|:report-group\/.*|kms:GenerateDataKey\*|kms:ReEncrypt\*|Action::s3:.*\*)$/g`)},
				&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Action::(s3|kms):.*\*$/g`)},
			}},
	}, jsii.Bool(true))
	s.ImageBuilds = project
	return project
}

// ImageBuildsProject is the name of a stage's image build project.
func ImageBuildsProject(stage string) string { return "gauntlet-" + stage + "-image-builds" }

// imageBuildsARN is the build project's ARN spelled from its name: the
// grant and the sync's environment name the project without reading its
// attributes, which an emulator without a CodeBuild model (moto) cannot
// give; the stack makes the function depend on the project instead.
func (s *Sandbox) imageBuildsARN() *string {
	return awscdk.Stack_Of(s.Construct).FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("codebuild"), Resource: jsii.String("project"), ResourceName: jsii.String(s.imageBuildsName),
	})
}

// GrantBuild lets grantee (the sync) start, watch and stop image builds
// and look up pushed images by build key. Writing the contexts (under
// BuildContextsPrefix) is the blob grant of the function table, which
// names s3:PutObject alone.
func (s *Sandbox) GrantBuild(grantee awsiam.IRole) {
	grantee.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("codebuild:StartBuild", "codebuild:BatchGetBuilds", "codebuild:StopBuild"),
		Resources: &[]*string{s.imageBuildsARN()},
	}))
	grantee.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("ecr:DescribeImages"),
		Resources: &[]*string{s.TaskImages.RepositoryArn()},
	}))
}

// BuildEnvironment returns the variables the sync needs to build images;
// a function given them must also depend on ImageBuilds (they name it
// without referencing it).
func (s *Sandbox) BuildEnvironment() map[string]*string {
	return map[string]*string{
		"GAUNTLET_IMAGE_BUILD_PROJECT":        jsii.String(s.imageBuildsName),
		"GAUNTLET_TASK_IMAGES_REPOSITORY":     s.TaskImages.RepositoryName(),
		"GAUNTLET_TASK_IMAGES_REPOSITORY_URI": s.TaskImages.RepositoryUri(),
	}
}
