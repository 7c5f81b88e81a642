package sandbox

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecr"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// AgentsDockerfile is the agent-bundles image's Dockerfile, relative to the
// build context (the repository root).
const AgentsDockerfile = "infra/agents/Dockerfile"

// agentsContextExcludes keep the agents image's context down to what its
// Dockerfile copies (the gauntlet binary prepares the bundles).
var agentsContextExcludes = []string{"*", "!go.mod", "!go.sum", "!agents", "!cmd", "!console", "!pkg", "!infra", "infra/*", "!infra/agents"}

// Upstream is a registry an ECR pull-through cache rule fronts.
type Upstream struct {
	// Host is the registry as image references name it ("docker.io").
	Host string
	// URL is the upstream registry ECR pulls from ("registry-1.docker.io").
	URL string
	// Kind is ECR's upstreamRegistry value ("docker-hub").
	Kind string
	// Suffix names the rule's repository prefix: gauntlet-<stage>-<suffix>.
	Suffix string
}

// Upstreams are the registries whose images sandboxes pull through ECR,
// so attempts never meet Docker Hub's or GHCR's rate limits. Both need
// credentials (ECR refuses an anonymous rule for them).
var Upstreams = []Upstream{
	{Host: "docker.io", URL: "registry-1.docker.io", Kind: "docker-hub", Suffix: "dockerhub"},
	{Host: "ghcr.io", URL: "ghcr.io", Kind: "github-container-registry", Suffix: "ghcr"},
}

// ecrPrefix is ECR's rule for a repository prefix.
var ecrPrefix = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*$`)

// Mirror is one pull-through cache rule and the secret holding its
// upstream credentials.
type Mirror struct {
	Upstream
	// Prefix is the ECR repository prefix of the cached repositories.
	Prefix string
	// Credentials is the Secrets Manager secret ECR signs in to the
	// upstream with ({"username": …, "accessToken": …}); the operator puts
	// the token in after the first deploy.
	Credentials awssecretsmanager.Secret
	Rule        awsecr.CfnPullThroughCacheRule
}

// newImages creates the repository built task images are pushed to, the
// pull-through cache rules with their credential secrets, and the agent
// bundles image, and lets the execution role pull all of them.
func (s *Sandbox) newImages(c constructs.Construct, props Props) error {
	s.TaskImages = awsecr.NewRepository(c, jsii.String("TaskImages"), &awsecr.RepositoryProps{
		// Named: ECR accepts only lower-case names, and the name
		// CloudFormation would derive from the stack's is not.
		RepositoryName: jsii.String(TaskImagesRepository(props.Stage)),
		// Tags are build keys: a tag never moves, so a redelivered sync
		// finds the image its build key names instead of building again.
		ImageTagMutability: awsecr.TagMutability_IMMUTABLE,
		ImageScanOnPush:    jsii.Bool(true),
		Encryption:         awsecr.RepositoryEncryption_KMS(),
		// Manifest versions pin these digests; deleting the stack must not
		// break the runs that name them.
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	s.TaskImages.GrantPull(s.ExecutionRole)
	for _, up := range Upstreams {
		prefix := fmt.Sprintf("gauntlet-%s-%s", strings.ToLower(props.Stage), up.Suffix)
		if len(prefix) > 30 || !ecrPrefix.MatchString(prefix) {
			return fmt.Errorf("sandbox: ECR pull-through prefix %q (from stage %q) must be 2-30 characters of [a-z0-9._-]; choose a shorter stage name", prefix, props.Stage)
		}
		id := titleWord(up.Suffix)
		secret := awssecretsmanager.NewSecret(c, jsii.String(id+"Credentials"), &awssecretsmanager.SecretProps{
			// ECR only reads secrets under this prefix.
			SecretName:  jsii.String("ecr-pullthroughcache/" + prefix),
			Description: jsii.String(fmt.Sprintf("gauntlet %s: %s credentials ECR's pull-through cache signs in with; set {\"username\",\"accessToken\"} after deploying", props.Stage, up.Host)),
			GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
				SecretStringTemplate: jsii.String(`{"username":"set-me"}`),
				GenerateStringKey:    jsii.String("accessToken"),
			},
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		cdknag.NagSuppressions_AddResourceSuppressions(secret, &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("AwsSolutions-SMG4"),
			Reason: jsii.String("The value is a token issued by " + up.Host + ", which AWS cannot rotate; the operator replaces it."),
		}}, jsii.Bool(false))
		rule := awsecr.NewCfnPullThroughCacheRule(c, jsii.String(id+"PullThrough"), &awsecr.CfnPullThroughCacheRuleProps{
			EcrRepositoryPrefix: jsii.String(prefix),
			UpstreamRegistry:    jsii.String(up.Kind),
			UpstreamRegistryUrl: jsii.String(up.URL),
			CredentialArn:       secret.SecretArn(),
		})
		s.Mirrors = append(s.Mirrors, Mirror{Upstream: up, Prefix: prefix, Credentials: secret, Rule: rule})
	}
	for _, repos := range s.mirrorRepositories() {
		s.ExecutionRole.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(mirrorPullActions...),
			Resources: &[]*string{repos},
		}))
	}
	cdknag.NagSuppressions_AddResourceSuppressions(s.ExecutionRole, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("ECR creates a pull-through cache's repositories on first pull, so their names are only known as the rule's prefix; the statement names that prefix."),
		AppliesTo: &[]any{&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::arn:<AWS::Partition>:ecr:<AWS::Region>:<AWS::AccountId>:repository\/gauntlet-.*\/\*$/g`)}},
	}}, jsii.Bool(true))
	var err error
	if s.AgentsImage, err = newImage(c, "AgentsImage", props.AgentsImage, props.RunnerContext, AgentsDockerfile, agentsContextExcludes); err != nil {
		return err
	}
	s.AgentsImage.GrantPull(s.ExecutionRole)
	return nil
}

// TaskImagesRepository is the name of a stage's task-images repository.
func TaskImagesRepository(stage string) string {
	return fmt.Sprintf("gauntlet-%s/task-images", strings.ToLower(stage))
}

// mirrorPullActions pull through a pull-through cache: pulling a digest that
// is not cached yet makes ECR create the repository and import the image as
// the pulling principal.
var mirrorPullActions = []string{"ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability",
	"ecr:BatchImportUpstreamImage", "ecr:CreateRepository"}

// mirrorRepositories are the ARNs of the repositories each pull-through
// rule creates (its prefix followed by the upstream path).
func (s *Sandbox) mirrorRepositories() []*string {
	stack := awscdk.Stack_Of(s.Construct)
	var out []*string
	for _, m := range s.Mirrors {
		out = append(out, stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("ecr"), Resource: jsii.String("repository"), ResourceName: jsii.String(m.Prefix + "/*"),
		}))
	}
	return out
}

// MirrorsSetting is GAUNTLET_SANDBOX_MIRRORS: each upstream host mapped to
// its pull-through prefix in this account's registry.
func (s *Sandbox) MirrorsSetting() *string {
	var pairs []string
	for _, m := range s.Mirrors {
		pairs = append(pairs, m.Host+"=${AWS::AccountId}.dkr.ecr.${AWS::Region}.${AWS::URLSuffix}/"+m.Prefix)
	}
	return awscdk.Fn_Sub(jsii.String(strings.Join(pairs, ",")), nil)
}

func titleWord(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// taskImagesPush are the actions of pushing an image to a repository.
var taskImagesPush = []string{"ecr:BatchCheckLayerAvailability", "ecr:InitiateLayerUpload", "ecr:UploadLayerPart",
	"ecr:CompleteLayerUpload", "ecr:PutImage"}

// GrantResolve lets grantee (the sync) pin image references to digests the
// way the sandboxes will pull them: an ECR token for the account's
// registry, reading manifests and blobs of the task-images repository and
// of the pull-through prefixes, and pushing to the task-images repository
// (copies of images that only a workspace's login opens). A tag the cache has not seen yet makes
// ECR create the repository and import the image as the caller, so the
// prefixes also allow that (the sync resolves before any sandbox pulls).
func (s *Sandbox) GrantResolve(grantee awsiam.IRole) {
	read := []string{"ecr:DescribeImages", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"}
	s.allow(grantee, []string{"ecr:GetAuthorizationToken"}, []*string{jsii.String("*")}, nil)
	s.allow(grantee, read, []*string{s.TaskImages.RepositoryArn()}, nil)
	// An image only a workspace's own login opens is copied by the sync
	// into the task-images repository, which the sandboxes and builds pull.
	s.allow(grantee, taskImagesPush, []*string{s.TaskImages.RepositoryArn()}, nil)
	if prefixes := s.mirrorRepositories(); len(prefixes) > 0 {
		s.allow(grantee, append(read, "ecr:BatchImportUpstreamImage", "ecr:CreateRepository"), prefixes, nil)
	}
	cdknag.NagSuppressions_AddResourceSuppressions(grantee, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-IAM5"),
		Reason: jsii.String("ecr:GetAuthorizationToken supports no resource-level permissions; ECR creates a pull-through cache's " +
			"repositories on first pull, so their names are only known as the rule's prefix."),
		AppliesTo: &[]any{"Resource::*",
			&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::arn:<AWS::Partition>:ecr:<AWS::Region>:<AWS::AccountId>:repository\/gauntlet-.*\/\*$/g`)}},
	}}, jsii.Bool(true))
}
