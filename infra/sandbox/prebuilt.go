package sandbox

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecr"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Image is an image the sandbox tasks run: built from its Dockerfile at
// deploy (a CDK image asset, which needs Docker and a registry login), or
// prebuilt and named by reference (context runnerImage / agentsImage), which
// needs neither.
type Image struct {
	// URI is the reference ECS pulls.
	URI *string
	// Asset is the image asset when the image is built at deploy, else nil.
	Asset awsecrassets.DockerImageAsset
	// Container is the image as a container definition takes it; binding
	// it to a task definition grants that definition's execution role the
	// pull.
	Container awsecs.ContainerImage
	// repository is the ECR repository the image is pulled from (the
	// asset's, or the prebuilt reference's when it is an ECR one); nil for
	// another registry, which needs no grant.
	repository awsecr.IRepository
}

// GrantPull lets grantee pull the image.
func (i Image) GrantPull(grantee awsiam.IGrantable) {
	if i.repository != nil {
		i.repository.GrantPull(grantee)
	}
}

// ecrReference is an image in a private ECR registry:
// <account>.dkr.ecr.<region>.amazonaws.com[.cn]/<repository>[:tag][@digest].
var ecrReference = regexp.MustCompile(`^([0-9]{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?/([a-z0-9][a-z0-9._/-]*?)(?::([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(sha256:[0-9a-f]{64}))?$`)

// ECRReference splits a private ECR image reference into its account,
// region, repository and tag or digest (the digest when both are given, as
// ECR pulls by it); ok is false for any other registry.
func ECRReference(ref string) (account, region, repository, version string, ok bool) {
	m := ecrReference.FindStringSubmatch(ref)
	if m == nil {
		return "", "", "", "", false
	}
	version = m[5]
	if m[6] != "" {
		version = m[6]
	}
	if version == "" {
		version = "latest"
	}
	return m[1], m[2], m[4], version, true
}

// newImage returns the image named ref, or, when ref is empty, the image
// built from dockerfile in the context directory.
func newImage(scope constructs.Construct, id, ref, context, dockerfile string, excludes []string) (Image, error) {
	if ref == "" {
		if context == "" {
			return Image{}, fmt.Errorf("sandbox: %s: neither a prebuilt image nor a Docker build context", id)
		}
		asset := awsecrassets.NewDockerImageAsset(scope, jsii.String(id), &awsecrassets.DockerImageAssetProps{
			Directory:  jsii.String(context),
			File:       jsii.String(dockerfile),
			Platform:   awsecrassets.Platform_LINUX_AMD64(),
			IgnoreMode: awscdk.IgnoreMode_DOCKER,
			Exclude:    jsii.Strings(excludes...),
		})
		return Image{URI: asset.ImageUri(), Asset: asset, Container: awsecs.ContainerImage_FromDockerImageAsset(asset), repository: asset.Repository()}, nil
	}
	account, region, name, version, ok := ECRReference(ref)
	if !ok {
		return Image{URI: jsii.String(ref), Container: awsecs.ContainerImage_FromRegistry(jsii.String(ref), nil)}, nil
	}
	partition := "aws"
	if strings.HasPrefix(region, "cn-") {
		partition = "aws-cn"
	}
	repo := awsecr.Repository_FromRepositoryAttributes(scope, jsii.String(id+"Repository"), &awsecr.RepositoryAttributes{
		RepositoryName: jsii.String(name),
		RepositoryArn:  jsii.String(fmt.Sprintf("arn:%s:ecr:%s:%s:repository/%s", partition, region, account, name)),
	})
	return Image{URI: jsii.String(ref), Container: awsecs.ContainerImage_FromEcrRepository(repo, jsii.String(version)), repository: repo}, nil
}
