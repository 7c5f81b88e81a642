// Package artifacts provisions the S3 bucket for run artifacts, task files and
// downloads, with a separate bucket that receives its server access logs.
package artifacts

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
)

// LaunchesExpireDays is how long sealed secrets stay in the bucket.
const LaunchesExpireDays = 1

// DownloadsExpireDays is how long a generated download stays in the bucket.
const DownloadsExpireDays = 7

// Props configures the buckets.
type Props struct {
	// Retain keeps both buckets when the stack is deleted.
	Retain bool
	// Versioned turns on object versioning of the artifacts bucket.
	Versioned bool
}

// Artifacts is the artifacts bucket and its access-log bucket.
type Artifacts struct {
	constructs.Construct
	Bucket     awss3.Bucket
	AccessLogs awss3.Bucket
}

// New creates the buckets under scope.
func New(scope constructs.Construct, id string, props Props) *Artifacts {
	c := constructs.NewConstruct(scope, jsii.String(id))
	removal := awscdk.RemovalPolicy_DESTROY
	if props.Retain {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	logs := awss3.NewBucket(c, jsii.String("AccessLogs"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:         jsii.String("expire-access-logs"),
			Expiration: awscdk.Duration_Days(jsii.Number(365)),
		}},
		RemovalPolicy: removal,
	})
	cdknag.NagSuppressions_AddResourceSuppressions(logs, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-S1"),
		Reason: jsii.String("This bucket is the server access log destination; logging it into itself would loop and another log bucket would only move the finding."),
	}}, jsii.Bool(false))
	bucket := awss3.NewBucket(c, jsii.String("Bucket"), &awss3.BucketProps{
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:             jsii.Bool(true),
		ObjectOwnership:        awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:              jsii.Bool(props.Versioned),
		ServerAccessLogsBucket: logs,
		ServerAccessLogsPrefix: jsii.String("artifacts/"),
		LifecycleRules: &[]*awss3.LifecycleRule{
			{
				Id:         jsii.String("expire-downloads"),
				Prefix:     jsii.String(blob.DownloadsPrefix),
				Expiration: awscdk.Duration_Days(jsii.Number(DownloadsExpireDays)),
			},
			{
				Id:         jsii.String("expire-sealed-secrets"),
				Prefix:     jsii.String(blob.LaunchesPrefix),
				Expiration: awscdk.Duration_Days(jsii.Number(LaunchesExpireDays)),
			},
			{
				Id:                                  jsii.String("abort-incomplete-uploads"),
				AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
			},
		},
		RemovalPolicy: removal,
	})
	return &Artifacts{Construct: c, Bucket: bucket, AccessLogs: logs}
}

// ObjectsARN is the ARN pattern of every object under prefix, for policy statements.
func (a *Artifacts) ObjectsARN(prefix string) *string {
	return a.Bucket.ArnForObjects(jsii.String(prefix + "*"))
}

// GrantGet lets grantee read objects under the given prefixes (and presign GETs for them).
func (a *Artifacts) GrantGet(grantee awsiam.IRole, prefixes ...string) {
	a.grant(grantee, "s3:GetObject", prefixes)
}

// GrantPut lets grantee write objects under the given prefixes (and presign PUTs for them).
func (a *Artifacts) GrantPut(grantee awsiam.IRole, prefixes ...string) {
	a.grant(grantee, "s3:PutObject", prefixes)
}

func (a *Artifacts) grant(grantee awsiam.IRole, action string, prefixes []string) {
	resources := make([]*string, 0, len(prefixes))
	for _, p := range prefixes {
		resources = append(resources, a.ObjectsARN(p))
	}
	grantee.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(action),
		Resources: &resources,
	}))
	cdknag.NagSuppressions_AddResourceSuppressions(grantee, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-IAM5"),
		Reason: jsii.String("Object keys contain run, task and download ids minted at run time; the grant names one action and ends the wildcard inside the runs/, tasks/, downloads/, launches/ or builds/ prefix."),
		AppliesTo: &[]any{&cdknag.RegexAppliesTo{
			Regex: jsii.String(`/^Resource::.*Bucket.*\/(runs|tasks|downloads|launches|builds)\/\*$/`),
		}},
	}}, jsii.Bool(true))
}
