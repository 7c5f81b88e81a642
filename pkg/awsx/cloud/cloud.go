// Package cloud wires gauntlet's cloud shape: it reads a Lambda function's
// configuration from the environment variables the CDK stack sets, builds
// the AWS SDK clients and adapters once per cold start, and hands the
// function its pipeline stage, benchsync.Service or API handler. Every
// client honours AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> (the SDK
// reads them), so the same binaries run against LocalStack or emulators.
package cloud

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/dynamo"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/kmskeys"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/s3blob"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/secrets"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/sqsq"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
)

// Logger returns the JSON logger every function writes to stdout (which
// Lambda sends to CloudWatch Logs), at the level LOG_LEVEL names (info when
// unset or unreadable; Load reports an unreadable one).
func Logger(w io.Writer, getenv func(string) string) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(getenv(EnvLogLevel))); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// Platform is one function's configuration, AWS clients and adapters.
type Platform struct {
	Config Config
	AWS    aws.Config
	Logger *slog.Logger
	// Ports holds the pipeline's adapters; a port the function does not
	// wire is nil, and building a stage that takes it fails with an error
	// wrapping ErrNotWired.
	Ports pipeline.Ports
	// SyncQueue carries benchsync.SyncMessage bodies (nil when not wired).
	SyncQueue queue.Queue
	// Blobs is the S3 store (nil when not wired).
	Blobs *s3blob.Store
	// Images prepares task images at sync (nil when the function does not
	// read the images settings).
	Images *benchsync.Environments
}

// Start loads the function's configuration from the process environment
// and connects its adapters; mains call it once per cold start.
func Start(ctx context.Context, n Needs, logger *slog.Logger) (*Platform, error) {
	cfg, err := Load(n, os.Getenv)
	if err != nil {
		return nil, err
	}
	return Connect(ctx, cfg, logger)
}

// Connect builds the AWS clients (config.LoadDefaultConfig: region,
// credentials and endpoint overrides from the environment, plus opts) and
// the adapters the configuration names. It calls no AWS API.
func Connect(ctx context.Context, cfg Config, logger *slog.Logger, opts ...func(*config.LoadOptions) error) (*Platform, error) {
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	p := &Platform{Config: cfg, AWS: awsCfg, Logger: logger}
	p.Ports.Table = dynamo.New(dynamodb.NewFromConfig(awsCfg), cfg.Table)

	sqsClient := sqs.NewFromConfig(awsCfg)
	q := func(url string) queue.Queue {
		if url == "" {
			return nil
		}
		return sqsq.New(sqsClient, url)
	}
	p.Ports.Plan = q(cfg.PlanQueueURL)
	p.Ports.Slots = q(cfg.SlotsQueueURL)
	p.Ports.Completions = q(cfg.CompletionsQueueURL)
	p.Ports.Results = q(cfg.ResultsQueueURL)
	if cfg.SyncQueueURL != "" {
		p.SyncQueue = sqsq.New(sqsClient, cfg.SyncQueueURL)
	}

	if cfg.Bucket != "" {
		p.Blobs = s3blob.New(s3.NewFromConfig(awsCfg, func(o *s3.Options) {
			// Emulators (LocalStack, fauxqs) serve buckets by path, not
			// by virtual host; AWS itself is never given an endpoint.
			o.UsePathStyle = o.BaseEndpoint != nil
		}), cfg.Bucket)
		p.Ports.Blobs = p.Blobs
	}

	if cfg.SecretsPrefix != "" {
		p.Ports.Secrets = secrets.New(secretsmanager.NewFromConfig(awsCfg), cfg.SecretsPrefix, cfg.SecretsKMSKey)
	}

	if cfg.Sandbox.Cluster != "" {
		sc := cfg.Sandbox
		sc.Region = awsCfg.Region
		if p.Blobs != nil {
			sc.Sealed = p.Blobs // sealed per-launch secrets, fetched by the runner via a presigned URL
			sc.Files = p.Blobs  // task bundles and outputs, through presigned URLs
		}
		if sc.KMSKey != "" {
			sc.DataKeys = kmskeys.New(kms.NewFromConfig(awsCfg), sc.KMSKey) // one data key per launch
		}
		d, err := ecssandbox.New(ecs.NewFromConfig(awsCfg), sc)
		if err != nil {
			return nil, err
		}
		p.Ports.Sandboxes = d
	}
	if cfg.Images.BuildProject != "" {
		envs, err := environments(awsCfg, cfg, p)
		if err != nil {
			return nil, err
		}
		p.Images = envs
	}
	return p, nil
}

// Pipeline returns every stage of the pipeline on the platform's ports (for
// tests that drive the whole pipeline through one platform); it needs every
// port wired. A function builds only its own stage (stages.go).
func (p *Platform) Pipeline() (*pipeline.Service, error) {
	return pipeline.New(p.Ports, p.options())
}
