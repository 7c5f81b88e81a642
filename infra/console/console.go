// Package console provisions the web console's static hosting: a private S3
// bucket served only through CloudFront with origin access control, access
// logs for both, and the upload of the built site when it exists.
package console

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3deployment"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Props configures the console hosting.
type Props struct {
	// SiteDir holds the built site (index.html at its root); empty deploys nothing.
	SiteDir string
	// LogRetention applies to the log group of the upload's handler.
	LogRetention awslogs.RetentionDays
}

// Console is the site bucket, its distribution and the log bucket.
type Console struct {
	constructs.Construct
	Bucket       awss3.Bucket
	Logs         awss3.Bucket
	Distribution awscloudfront.Distribution
	// Deployment uploads SiteDir; nil when no site was given.
	Deployment awss3deployment.BucketDeployment
}

// SiteDir returns the directory to deploy from a console directory: its
// dist/ build output when present, else the directory itself, else "" (the
// console has not been written yet, or consoleDir is empty: nothing is
// deployed).
func SiteDir(consoleDir string) (string, error) {
	if consoleDir == "" {
		return "", nil // no console: the bucket stays empty
	}
	for _, dir := range []string{filepath.Join(consoleDir, "dist"), consoleDir} {
		info, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return "", fmt.Errorf("console site %s: %w", dir, err)
		case info.IsDir():
			return dir, nil
		}
	}
	return "", nil
}

// New creates the console hosting under scope.
func New(scope constructs.Construct, id string, props Props) *Console {
	c := constructs.NewConstruct(scope, jsii.String(id))
	k := &Console{Construct: c}
	// CloudFront standard logging writes with ACLs, so this bucket keeps
	// object-writer ownership; it also receives the site bucket's access logs.
	k.Logs = awss3.NewBucket(c, jsii.String("Logs"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_OBJECT_WRITER,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:         jsii.String("expire-logs"),
			Expiration: awscdk.Duration_Days(jsii.Number(365)),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	cdknag.NagSuppressions_AddResourceSuppressions(k.Logs, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-S1"),
		Reason: jsii.String("This bucket is the access-log destination of the console; logging it into itself would loop."),
	}}, jsii.Bool(false))
	k.Bucket = awss3.NewBucket(c, jsii.String("Site"), &awss3.BucketProps{
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:             jsii.Bool(true),
		ObjectOwnership:        awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		ServerAccessLogsBucket: k.Logs,
		ServerAccessLogsPrefix: jsii.String("site/"),
		RemovalPolicy:          awscdk.RemovalPolicy_DESTROY,
	})
	k.Distribution = awscloudfront.NewDistribution(c, jsii.String("Distribution"), &awscloudfront.DistributionProps{
		Comment: jsii.String("gauntlet console"),
		DefaultBehavior: &awscloudfront.BehaviorOptions{
			Origin:                awscloudfrontorigins.S3BucketOrigin_WithOriginAccessControl(k.Bucket, nil),
			ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			CachePolicy:           awscloudfront.CachePolicy_CACHING_OPTIMIZED(),
			ResponseHeadersPolicy: awscloudfront.ResponseHeadersPolicy_SECURITY_HEADERS(),
		},
		DefaultRootObject: jsii.String("index.html"),
		// The console routes in the browser: unknown paths serve index.html.
		ErrorResponses: &[]*awscloudfront.ErrorResponse{
			{HttpStatus: jsii.Number(403), ResponseHttpStatus: jsii.Number(200), ResponsePagePath: jsii.String("/index.html"), Ttl: awscdk.Duration_Seconds(jsii.Number(0))},
			{HttpStatus: jsii.Number(404), ResponseHttpStatus: jsii.Number(200), ResponsePagePath: jsii.String("/index.html"), Ttl: awscdk.Duration_Seconds(jsii.Number(0))},
		},
		PriceClass:    awscloudfront.PriceClass_PRICE_CLASS_100,
		EnableLogging: jsii.Bool(true),
		LogBucket:     k.Logs,
		LogFilePrefix: jsii.String("cloudfront/"),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(k.Distribution, &[]*cdknag.NagPackSuppression{
		{Id: jsii.String("AwsSolutions-CFR1"), Reason: jsii.String("The console is static assets for a global audience; authorization happens at the API, so geo restriction adds nothing.")},
		{Id: jsii.String("AwsSolutions-CFR2"), Reason: jsii.String("The distribution serves only static files from a private bucket; the API (the only dynamic surface) is throttled at API Gateway. Attach a WAF web ACL per account if required.")},
		{Id: jsii.String("AwsSolutions-CFR4"), Reason: jsii.String("Without a custom domain CloudFront serves its default *.cloudfront.net certificate, whose TLS policy cannot be chosen; set a certificate and TLSv1.2_2021 when the console gets a domain.")},
	}, jsii.Bool(false))
	if props.SiteDir != "" {
		k.Deployment = awss3deployment.NewBucketDeployment(c, jsii.String("Deploy"), &awss3deployment.BucketDeploymentProps{
			Sources:           &[]awss3deployment.ISource{awss3deployment.Source_Asset(jsii.String(props.SiteDir), nil)},
			DestinationBucket: k.Bucket,
			Distribution:      k.Distribution,
			DistributionPaths: jsii.Strings("/*"),
			// A log group of its own, created before the handler: the
			// default one is named /aws/lambda/<handler> and created after
			// it, so an invocation in between (the upload is invoked during
			// the deploy) makes Lambda create that name first and the
			// stack's create fail.
			LogGroup: awslogs.NewLogGroup(c, jsii.String("DeployLogs"), &awslogs.LogGroupProps{
				Retention:     props.LogRetention,
				RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
			}),
		})
		suppressDeploymentHandler(awscdk.Stack_Of(c))
	}
	return k
}

// URL is the console's https URL.
func (k *Console) URL() *string {
	return jsii.String("https://" + *k.Distribution.DistributionDomainName())
}

// suppressDeploymentHandler records why the CDK-provided upload function
// (one per stack) is acceptable: it runs only during deployment.
func suppressDeploymentHandler(stack awscdk.Stack) {
	for _, child := range *stack.Node().Children() {
		if !strings.HasPrefix(*child.Node().Id(), "Custom::CDKBucketDeployment") {
			continue
		}
		cdknag.NagSuppressions_AddResourceSuppressions(child, &[]*cdknag.NagPackSuppression{
			{Id: jsii.String("AwsSolutions-IAM4"), Reason: jsii.String("CDK's BucketDeployment handler uses AWSLambdaBasicExecutionRole for its own logs; it runs only during deployment."), AppliesTo: &[]any{"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"}},
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String("CDK's BucketDeployment handler copies every object of the asset into the console bucket, so its grants cover all keys of both buckets.")},
			{Id: jsii.String("AwsSolutions-L1"), Reason: jsii.String("The BucketDeployment handler's runtime is chosen and updated by the CDK library, not by this app.")},
		}, jsii.Bool(true))
	}
}
