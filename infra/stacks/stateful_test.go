package stacks_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/gauntlet-bench/gauntlet/infra/infratest"
	"github.com/gauntlet-bench/gauntlet/infra/queues"
	"github.com/gauntlet-bench/gauntlet/infra/stacks"
)

func TestStackNames(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	for _, tt := range []struct{ got, want string }{
		{*stage.Stateful.Stack.StackName(), "Gauntlet-Dev-Stateful"},
		{*stage.Stateless.Stack.StackName(), "Gauntlet-Dev-Stateless"},
		{stacks.StackName("prod-eu", "Stateful"), "Gauntlet-Prod-eu-Stateful"},
	} {
		if tt.got != tt.want {
			t.Errorf("stack name = %q, want %q", tt.got, tt.want)
		}
	}
}

// TestTemplatesWithinLimits keeps both templates under CloudFormation's
// quotas: 500 resources and a 1 MB template body (deployed from S3).
func TestTemplatesWithinLimits(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	for name, tmpl := range map[string]map[string]any{"stateful": statefulJSON, "stateless": statelessJSON} {
		resources := tmpl["Resources"].(map[string]any)
		if len(resources) > 500 {
			t.Errorf("%s template has %d resources, CloudFormation allows 500", name, len(resources))
		}
		body, err := json.Marshal(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if len(body) > 1_000_000 {
			t.Errorf("%s template is %d bytes, CloudFormation allows 1 MB", name, len(body))
		}
	}
}

func TestTable(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	statefulTemplate.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1))
	gsi := func(n string) map[string]any {
		return map[string]any{
			"IndexName": n,
			"KeySchema": []any{
				map[string]any{"AttributeName": n + "pk", "KeyType": "HASH"},
				map[string]any{"AttributeName": n + "sk", "KeyType": "RANGE"},
			},
			"Projection": map[string]any{"ProjectionType": "ALL"},
		}
	}
	statefulTemplate.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"KeySchema": []any{
			map[string]any{"AttributeName": "pk", "KeyType": "HASH"},
			map[string]any{"AttributeName": "sk", "KeyType": "RANGE"},
		},
		"BillingMode":                      "PAY_PER_REQUEST",
		"GlobalSecondaryIndexes":           []any{gsi("gsi1"), gsi("gsi2")},
		"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
		"StreamSpecification":              map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"},
		"TimeToLiveSpecification":          map[string]any{"AttributeName": "expires_at", "Enabled": true},
		"SSESpecification":                 map[string]any{"SSEEnabled": true},
		"DeletionProtectionEnabled":        false, // dev; the table package tests the retained case
	})
}

// TestQueues checks the four work queues: a DLQ each with an alarm, SSE,
// TLS-only policies, and visibility of six consumer timeouts.
func TestQueues(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	consumers := map[string]string{"PlanQueue": "planner", "SlotsQueue": "dispatcher", "ResultsQueue": "ingester", "SyncQueue": "registrysync", "CompletionsQueue": "grader"}
	qs := infratest.Resources(statefulJSON, "AWS::SQS::Queue")
	for prefix, consumer := range consumers {
		var found bool
		for id, q := range qs {
			if !regexp.MustCompile("^" + prefix + "[0-9A-F]{8}$").MatchString(id) {
				continue
			}
			found = true
			p := infratest.Props(q)
			want := float64(queues.VisibilityFactor * stacks.Timeouts[consumer].Seconds())
			if got := p["VisibilityTimeout"]; got != want {
				t.Errorf("%s VisibilityTimeout = %v, want %v (6 × %s timeout)", id, got, want, consumer)
			}
			if p["RedrivePolicy"] == nil {
				t.Errorf("%s has no RedrivePolicy (dead-letter queue)", id)
			}
		}
		if !found {
			t.Errorf("no queue %s in the stateful template", prefix)
		}
	}
	// 5 work queues + 5 DLQs + the leaderboard stream's failure queue.
	statefulTemplate.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(11))
	for _, q := range qs {
		if infratest.Props(q)["SqsManagedSseEnabled"] != true {
			t.Errorf("queue %v is not encrypted", infratest.Props(q))
		}
	}
	statefulTemplate.ResourceCountIs(jsii.String("AWS::SQS::QueuePolicy"), jsii.Number(11))
	// EventBridge rules of the stateless stack (named by prefix) may feed the completions queue.
	statefulTemplate.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Sid":       "SandboxStateChanges",
			"Effect":    "Allow",
			"Principal": map[string]any{"Service": "events.amazonaws.com"},
			"Action":    "sqs:SendMessage",
			"Condition": map[string]any{
				"StringEquals": map[string]any{"aws:SourceAccount": map[string]any{"Ref": "AWS::AccountId"}},
				"ArnLike": map[string]any{"aws:SourceArn": map[string]any{"Fn::Join": []any{"",
					assertions.Match_ArrayWith(&[]any{":rule/Gauntlet-Dev-Stateless-*"})}}},
			},
		})})},
		"Queues": []any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^CompletionsQueue[0-9A-F]{8}$"))}},
	})
	statefulTemplate.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Effect":    "Deny",
			"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
		})})},
	})
	statefulTemplate.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"RedrivePolicy": map[string]any{"maxReceiveCount": 20},
	})
	// One alarm per dead-letter queue (six here, the event-failures one in the stateless stack).
	statefulTemplate.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(6))
	statefulTemplate.AllResourcesProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName":         "ApproximateNumberOfMessagesVisible",
		"Namespace":          "AWS/SQS",
		"Threshold":          0,
		"ComparisonOperator": "GreaterThanThreshold",
	})
}

func TestArtifactsBucket(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	statefulTemplate.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(2)) // artifacts + access logs
	blockAll := map[string]any{"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true}
	statefulTemplate.AllResourcesProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
		"PublicAccessBlockConfiguration": blockAll,
		"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
			map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}},
		}},
	})
	logs := assertions.NewCapture(nil)
	statefulTemplate.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
		"LoggingConfiguration": map[string]any{"DestinationBucketName": map[string]any{"Ref": logs}, "LogFilePrefix": "artifacts/"},
		"LifecycleConfiguration": map[string]any{"Rules": assertions.Match_ArrayWith(&[]any{
			map[string]any{"Id": "expire-downloads", "Prefix": "downloads/", "ExpirationInDays": 7, "Status": "Enabled"},
			map[string]any{"Id": "expire-sealed-secrets", "Prefix": "launches/", "ExpirationInDays": 1, "Status": "Enabled"},
			map[string]any{"Id": "abort-incomplete-uploads", "AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": 1}, "Status": "Enabled"},
		})},
	})
	if !strings.HasPrefix(*logs.AsString(), "ArtifactsAccessLogs") {
		t.Errorf("artifacts bucket logs to %q, want the ArtifactsAccessLogs bucket", *logs.AsString())
	}
	statefulTemplate.AllResourcesProperties(jsii.String("AWS::S3::BucketPolicy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Effect":    "Deny",
			"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
		})})},
	})
}

// TestKeys: the secrets key and the sandbox key, both rotated.
func TestKeys(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	statefulTemplate.ResourceCountIs(jsii.String("AWS::KMS::Key"), jsii.Number(2))
	statefulTemplate.AllResourcesProperties(jsii.String("AWS::KMS::Key"), map[string]any{"EnableKeyRotation": true})
	keys := infratest.Resources(statefulJSON, "AWS::KMS::Key")
	for _, prefix := range []string{"SecretsKey", "SandboxKey"} {
		found := false
		for id := range keys {
			found = found || strings.HasPrefix(id, prefix)
		}
		if !found {
			t.Errorf("no KMS key %s* in the stateful stack (keys: %v)", prefix, keys)
		}
	}
}

func TestOutputs(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	statefulTemplate.HasOutput(jsii.String("TableName"), map[string]any{"Value": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^DataTable"))}})
	statefulTemplate.HasOutput(jsii.String("BucketName"), map[string]any{"Value": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^ArtifactsBucket"))}})
	statelessTemplate.HasOutput(jsii.String("ApiUrl"), map[string]any{})
	statelessTemplate.HasOutput(jsii.String("ConsoleUrl"), map[string]any{})
}

// TestNag applies cdk-nag's AwsSolutions pack: every finding must be fixed
// or carry a suppression with its reason next to the code.
func TestNag(t *testing.T) {
	synthesized(t)
	defer infratest.Recover(t)
	for _, stack := range []struct {
		name     string
		findings []string
	}{
		{"stateful", infratest.NagFindings(stage.Stateful.Stack)},
		{"stateless", infratest.NagFindings(stage.Stateless.Stack)},
	} {
		for _, f := range stack.findings {
			t.Errorf("%s: unsuppressed cdk-nag finding %s", stack.name, f)
		}
	}
}
