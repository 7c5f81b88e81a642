package cloudtest

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/awstest"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/dynamo"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/sqsq"
)

// QueueNames are the queues of the cloud shape.
var QueueNames = []string{"plan", "slots", "completions", "results", "sync"}

// MaxReceives is the redrive maxReceiveCount of every test queue.
const MaxReceives = 3

// Env is one fresh set of resources on the emulators (a table with its
// stream, the queues with dead-letter queues, a bucket) and the ECS and
// Secrets Manager fakes, as the CDK stack would provide them.
type Env struct {
	Endpoints awstest.Endpoints
	Table     string
	StreamARN string
	Queues    map[string]string // name → URL
	DLQs      map[string]string // name → dead-letter queue URL
	Bucket    string
	ECS       *ECS
	Secrets   *SecretsManager
	Images    *Images
}

// NewEnv creates the resources (the emulators start on first use).
func NewEnv(t testing.TB) *Env {
	t.Helper()
	ctx := context.Background()
	e := &Env{Endpoints: awstest.Start(t), Queues: map[string]string{}, DLQs: map[string]string{},
		ECS: NewECS(t), Secrets: NewSecretsManager(t), Images: NewImages(t)}
	e.Table = awstest.Name("gauntlet")
	var err error
	if e.StreamARN, err = dynamo.CreateTable(ctx, e.Endpoints.DynamoDBClient(), e.Table); err != nil {
		t.Fatal(err)
	}
	for _, name := range QueueNames {
		if e.Queues[name], e.DLQs[name], err = sqsq.CreateQueue(ctx, e.Endpoints.SQSClient(), awstest.Name("gauntlet-"+name), MaxReceives); err != nil {
			t.Fatal(err)
		}
	}
	e.Bucket = awstest.Name("gauntlet-artifacts")
	if _, err := e.Endpoints.S3Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(e.Bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", e.Bucket, err)
	}
	return e
}

// Vars returns a function's environment: every variable the CDK stack
// sets, plus the AWS SDK's region, static credentials and endpoint
// overrides pointing each service at its emulator or fake.
func (e *Env) Vars() map[string]string {
	vars := map[string]string{
		cloud.EnvStage:                "test",
		cloud.EnvTable:                e.Table,
		cloud.EnvPlanQueueURL:         e.Queues["plan"],
		cloud.EnvSlotsQueueURL:        e.Queues["slots"],
		cloud.EnvCompletionsQueueURL:  e.Queues["completions"],
		cloud.EnvResultsQueueURL:      e.Queues["results"],
		cloud.EnvSyncQueueURL:         e.Queues["sync"],
		cloud.EnvBucket:               e.Bucket,
		cloud.EnvSecretsPrefix:        "gauntlet/test/",
		cloud.EnvSecretsKMSKey:        "arn:aws:kms:us-east-1:111122223333:key/2f1c9a4e-0000-4000-8000-000000000001",
		cloud.EnvCluster:              "arn:aws:ecs:us-east-1:111122223333:cluster/gauntlet-test",
		cloud.EnvSubnets:              "subnet-0a1b2c3d,subnet-4e5f6a7b",
		cloud.EnvSecurityGroups:       "sg-0123456789abcdef0",
		cloud.EnvSandboxTaskRoleARN:   "arn:aws:iam::111122223333:role/gauntlet-test-sandbox-task",
		cloud.EnvSandboxExecutionRole: "arn:aws:iam::111122223333:role/gauntlet-test-sandbox-exec",
		cloud.EnvSandboxLogGroup:      "/gauntlet/test/sandboxes",
		cloud.EnvRunnerImage:          "111122223333.dkr.ecr.us-east-1.amazonaws.com/gauntlet-runner:test",
		cloud.EnvSandboxDefaultImage:  "public.ecr.aws/docker/library/python@sha256:5f0e8a4c3b2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f",
		cloud.EnvSandboxKMSKey:        "arn:aws:kms:us-east-1:111122223333:key/2f1c9a4e-0000-4000-8000-000000000002",
		cloud.EnvMaxSandboxes:         "50",
		cloud.EnvLogLevel:             "debug",

		"AWS_REGION":                        awstest.Region,
		"AWS_ACCESS_KEY_ID":                 "test",
		"AWS_SECRET_ACCESS_KEY":             "test",
		"AWS_EC2_METADATA_DISABLED":         "true",
		"AWS_ENDPOINT_URL_DYNAMODB":         e.Endpoints.DynamoDB,
		"AWS_ENDPOINT_URL_DYNAMODB_STREAMS": e.Endpoints.DynamoDB,
		"AWS_ENDPOINT_URL_SQS":              e.Endpoints.SQS,
		"AWS_ENDPOINT_URL_S3":               e.Endpoints.S3,
		"AWS_ENDPOINT_URL_ECS":              e.ECS.URL,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER":  e.Secrets.URL,
	}
	maps.Copy(vars, e.Images.Vars())
	return vars
}

// Setenv sets Vars (and extra) in the test process, for adapters built in
// process by cloud.Connect; the test must not be parallel.
func (e *Env) Setenv(t *testing.T, extra map[string]string) map[string]string {
	t.Helper()
	vars := e.Vars()
	maps.Copy(vars, extra)
	for k, v := range vars {
		t.Setenv(k, v)
	}
	return vars
}

// Getenv returns a lookup of vars, for cloud.Load.
func Getenv(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// String names the environment's resources.
func (e *Env) String() string {
	return fmt.Sprintf("table %s, bucket %s, queues %v", e.Table, e.Bucket, e.Queues)
}
