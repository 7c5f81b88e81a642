package cloud_test

import (
	"context"
	gauntletrunner "github.com/gauntlet-bench/gauntlet/pkg/runner"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud/cloudtest"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/dynamo"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/s3blob"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/sqsq"
	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/fsblob"
	"github.com/gauntlet-bench/gauntlet/pkg/leaderboard"
	"github.com/gauntlet-bench/gauntlet/pkg/localsandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/localsecret"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline/pipelinetest"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sqlite"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

const (
	e2eWS       = "ws-e2e"
	e2eUser     = "u-e2e"
	e2eAttempts = 2 * pipelinetest.ParityTasks * 2 // agents × parity tasks × attempts
)

// e2eConfig runs oracle and nop on the parity set, two attempts each.
var e2eConfig = pipelinetest.OracleNopConfig(2, 4)

// consumer is one queue and the function the SQS event source invokes for it.
type consumer struct {
	queue, function string
	handle          func(context.Context, []byte) error
}

// platform is one shape of gauntlet (cloud or SQLite) driven in process:
// queue consumers, the change stream feeding Recompute, and the watchdog.
type platform struct {
	t         *testing.T
	svc       *pipeline.Service
	recs      *records.Store
	consumers []consumer
	receive   func(ctx context.Context, queue string) ([]queue.Message, error)
	ack       func(ctx context.Context, queue string, msgs []queue.Message) error
	stream    store.Stream
	cp        string
	label     func(ctx context.Context, name string) context.Context

	invocations map[string]int
}

func (p *platform) pumpOnce(ctx context.Context) bool {
	p.t.Helper()
	progressed := false
	for _, c := range p.consumers {
		msgs, err := p.receive(ctx, c.queue)
		if err != nil {
			p.t.Fatalf("receive %s: %v", c.queue, err)
		}
		if len(msgs) == 0 {
			continue
		}
		p.invocations[c.function]++ // one Lambda invocation per batch
		fctx := p.label(ctx, c.function)
		for _, m := range msgs {
			if err := c.handle(fctx, m.Body); err != nil {
				p.t.Fatalf("%s: message %s: %v", c.function, m.Body, err)
			}
		}
		if err := p.ack(ctx, c.queue, msgs); err != nil {
			p.t.Fatal(err)
		}
		progressed = true
	}
	changes, next, err := p.stream.Read(p.label(ctx, "stream"), p.cp, 1000)
	if err != nil {
		p.t.Fatalf("read change stream: %v", err)
	}
	if len(changes) > 0 {
		p.invocations["leaderboard"]++
		if err := p.svc.Recompute(p.label(ctx, "leaderboard"), changes); err != nil {
			p.t.Fatalf("recompute: %v", err)
		}
		p.cp, progressed = next, true
	}
	return progressed
}

func (p *platform) runToEnd(ctx context.Context, runID string, timeout time.Duration) run.Run {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	lastWatch := time.Now()
	idle := time.NewTicker(50 * time.Millisecond)
	defer idle.Stop()
	for time.Now().Before(deadline) {
		if !p.pumpOnce(ctx) {
			<-idle.C
		}
		if time.Since(lastWatch) > 2*time.Second {
			p.invocations["watchdog"]++
			if err := p.svc.Watch(p.label(ctx, "watchdog")); err != nil {
				p.t.Fatalf("watch: %v", err)
			}
			lastWatch = time.Now()
		}
		r, err := p.recs.Runs.Run(ctx, runID)
		if err != nil {
			p.t.Fatal(err)
		}
		if r.Status.Terminal() {
			for p.pumpOnce(ctx) {
			}
			return r
		}
	}
	r, _ := p.recs.Runs.Run(ctx, runID)
	p.t.Fatalf("run %s still %s after %v", runID, r.Status, timeout)
	return r
}

// seed installs the managed catalog through benchsync (bundles in the blob
// store), activates billing and submits the run; it returns the run id.
func seed(t *testing.T, ctx context.Context, svc *pipeline.Service, blobs blob.Store) *benchsync.Service {
	t.Helper()
	sync, err := benchsync.New(benchsync.Config{Records: benchsync.StoreRecords(svc.Records()), Blobs: blobs, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../../examples/catalog.toml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := benchmark.ParseCatalog(data, filepath.Join(dirOf(t, "../../../examples"), "catalog.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs("../../../examples")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := sync.InstallCatalog(ctx, pipeline.PlatformWorkspace, cat, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := sync.Sync(ctx, m); err != nil {
			t.Fatalf("sync %s: %v", m.Key, err)
		}
		if b, err := svc.Records().Benchmarks.Benchmark(ctx, m.Workspace, m.Key); err != nil || b.Status != records.SyncReady {
			t.Fatalf("benchmark %s after sync: %+v, %v; want ready", m.Key, b, err)
		}
	}
	if err := svc.Records().Workspaces.PutBilling(ctx, e2eWS, records.Billing{Status: records.BillingActive, Plan: "team"}); err != nil {
		t.Fatal(err)
	}
	return sync
}

func submit(t *testing.T, ctx context.Context, svc *pipeline.Service) string {
	t.Helper()
	cfg, err := runconfig.Parse([]byte(e2eConfig))
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Submit(ctx, pipeline.SubmitRequest{Workspace: e2eWS, User: e2eUser, Config: cfg})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return res.Run.ID
}

func buildRunner(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bubblewrap is not installed (make deps installs it); the local sandbox driver needs it")
	}
	bin := filepath.Join(t.TempDir(), "sandbox-runner")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/sandbox-runner").CombinedOutput(); err != nil {
		t.Fatalf("build sandbox-runner: %v\n%s", err, out)
	}
	return bin
}

// TestCloudShapeEndToEnd runs the example benchmark (oracle and nop, the
// parity set, two attempts) through the pipeline wired with the AWS
// adapters against DynamoDB Local (+ Streams), fauxqs (SQS, S3) and the
// Secrets Manager fake, with the bubblewrap sandbox driver standing in for
// ECS, then through the SQLite default, and compares their leaderboards.
// It counts the AWS requests per attempt for docs/BENCHMARKS.md's cost
// model (-v prints them).
func TestCloudShapeEndToEnd(t *testing.T) {
	ctx := context.Background()
	runner := buildRunner(t)
	cloudBoard, usage := runCloud(t, ctx, runner)
	localBoard := runLocal(t, ctx, runner)
	opts := cmp.Options{
		cmpopts.IgnoreFields(records.Leaderboard{}, "Generation", "ComputedAt"),
		cmpopts.IgnoreFields(records.BoardRow{}, "RunID", "FinishedAt", "TimePerTask"), // run ids and wall-clock times differ
	}
	if diff := cmp.Diff(comparable(t, localBoard), comparable(t, cloudBoard), opts); diff != "" {
		t.Errorf("cloud leaderboard differs from the SQLite default's (-sqlite +cloud):\n%s", diff)
	}
	reportCost(t, usage)
}

// comparable drops the time board (wall-clock values) from a leaderboard.
func comparable(t *testing.T, l records.Leaderboard) records.Leaderboard {
	t.Helper()
	var boards []records.Board
	for _, b := range l.Boards {
		if b.Metric != leaderboard.MetricTime {
			boards = append(boards, b)
		}
	}
	if len(boards) == 0 {
		t.Fatal("leaderboard has no boards")
	}
	l.Boards = boards
	return l
}

// cloudUsage is what the cloud run counted.
type cloudUsage struct {
	counter     *cloudtest.Counter
	invocations map[string]int
	attempts    int
}

func runCloud(t *testing.T, ctx context.Context, runner string) (records.Leaderboard, cloudUsage) {
	env := cloudtest.NewEnv(t)
	vars := env.Setenv(t, nil)
	counter := cloudtest.NewCounter()
	withCounter := func(label string) func(*config.LoadOptions) error {
		return config.WithAPIOptions([]func(*middleware.Stack) error{counter.Option(label)})
	}
	needs := cloud.Needs{Plan: true, Slots: true, Completions: true, Results: true, Blobs: true, Secrets: true}
	cfg, err := cloud.Load(needs, cloudtest.Getenv(vars))
	if err != nil {
		t.Fatal(err)
	}
	p, err := cloud.Connect(ctx, cfg, discard, withCounter("api"))
	if err != nil {
		t.Fatal(err)
	}
	// The sandbox side: its outputs go to S3 and its completion reaches the
	// completions queue (EventBridge does that in the cloud).
	sandboxCfg, err := config.LoadDefaultConfig(ctx, withCounter("sandbox"))
	if err != nil {
		t.Fatal(err)
	}
	sandboxBlobs := s3blob.New(s3.NewFromConfig(sandboxCfg, func(o *s3.Options) { o.UsePathStyle = true }), env.Bucket)
	// The example tasks name no image: the sandbox runs on the host's root
	// filesystem (the explicit development mode), the cloud path under test
	// being the ports, not the task environment.
	driver, err := localsandbox.New(localsandbox.Config{DataDir: t.TempDir(), RunnerPath: runner, Isolation: gauntletrunner.IsolationHostBwrap, Blobs: sandboxBlobs,
		Completions: sqsq.New(sqs.NewFromConfig(sandboxCfg), env.Queues["completions"]), StopGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = driver.Close() })
	p.Ports.Sandboxes = sandboxSide{driver}
	svc, err := pipeline.New(p.Ports, pipeline.Options{GateDelay: 50 * time.Millisecond, RetryBackoff: 50 * time.Millisecond, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	seedCtx := cloudtest.WithLabel(ctx, "seed")
	seed(t, seedCtx, svc, p.Blobs)

	// The event-source poller's receives and batch deletes, and the stream
	// reads (free when Lambda reads a stream), are counted apart.
	esmCfg, err := config.LoadDefaultConfig(ctx, withCounter("esm"))
	if err != nil {
		t.Fatal(err)
	}
	esm := sqs.NewFromConfig(esmCfg)
	streamCfg, err := config.LoadDefaultConfig(ctx, withCounter("stream"))
	if err != nil {
		t.Fatal(err)
	}
	completions := cloud.Completions(svc.Grade, discard)
	pl := &platform{
		t: t, svc: svc, recs: svc.Records(), invocations: map[string]int{},
		stream: dynamo.NewStream(dynamodbstreams.NewFromConfig(streamCfg), env.StreamARN),
		label:  cloudtest.WithLabel,
		consumers: []consumer{
			{"plan", "planner", svc.HandlePlan}, {"slots", "dispatcher", svc.HandleSlot},
			{"completions", "grader", func(ctx context.Context, b []byte) error { return completions(ctx, queue.Message{Body: b}) }},
			{"results", "ingester", svc.HandleResult},
		},
		receive: func(ctx context.Context, name string) ([]queue.Message, error) {
			out, err := esm.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(env.Queues[name]), MaxNumberOfMessages: 10, VisibilityTimeout: 120})
			if err != nil {
				return nil, err
			}
			msgs := make([]queue.Message, len(out.Messages))
			for i, m := range out.Messages {
				msgs[i] = queue.Message{ID: aws.ToString(m.MessageId), Body: []byte(aws.ToString(m.Body)), Receipt: aws.ToString(m.ReceiptHandle)}
			}
			return msgs, nil
		},
		ack: func(ctx context.Context, name string, msgs []queue.Message) error {
			entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(msgs))
			for i, m := range msgs {
				entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(m.ID), ReceiptHandle: aws.String(m.Receipt)}
			}
			_, err := esm.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(env.Queues[name]), Entries: entries})
			return err
		},
	}
	for pl.pumpOnce(seedCtx) { // the seed's own changes
	}
	counter.Reset()
	pl.invocations = map[string]int{}
	runID := submit(t, cloudtest.WithLabel(ctx, "api"), svc)
	r := pl.runToEnd(ctx, runID, 4*time.Minute)
	if r.Status != run.Finished {
		t.Fatalf("cloud run ended %s (%s), want finished", r.Status, r.Reason)
	}
	board, err := pl.recs.Boards.Leaderboard(ctx, e2eWS, "demo-bench")
	if err != nil {
		t.Fatalf("cloud leaderboard: %v", err)
	}
	return board, cloudUsage{counter: counter, invocations: pl.invocations, attempts: e2eAttempts}
}

func runLocal(t *testing.T, ctx context.Context, runner string) records.Leaderboard {
	dir := t.TempDir()
	db, err := sqlite.Open(filepath.Join(dir, "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	queues := map[string]*sqlite.Queue{}
	for _, name := range []string{"plan", "slots", "completions", "results"} {
		if queues[name], err = db.Queue(name, sqlite.QueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	blobs, err := fsblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := localsecret.Open(filepath.Join(dir, "secrets.json"))
	if err != nil {
		t.Fatal(err)
	}
	driver, err := localsandbox.New(localsandbox.Config{DataDir: dir, RunnerPath: runner, Isolation: gauntletrunner.IsolationHostBwrap, Blobs: blobs,
		Completions: queues["completions"], StopGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = driver.Close() })
	svc, err := pipeline.New(pipeline.Ports{Table: db.Table(), Plan: queues["plan"], Slots: queues["slots"],
		Completions: queues["completions"], Results: queues["results"], Blobs: blobs, Secrets: secrets, Sandboxes: driver},
		pipeline.Options{GateDelay: 50 * time.Millisecond, RetryBackoff: 50 * time.Millisecond, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	seed(t, ctx, svc, blobs)
	pl := &platform{
		t: t, svc: svc, recs: svc.Records(), invocations: map[string]int{}, stream: db.Stream(),
		label: func(ctx context.Context, _ string) context.Context { return ctx },
		consumers: []consumer{
			{"plan", "planner", svc.HandlePlan}, {"slots", "dispatcher", svc.HandleSlot},
			{"completions", "grader", svc.HandleCompletion}, {"results", "ingester", svc.HandleResult},
		},
		receive: func(ctx context.Context, name string) ([]queue.Message, error) {
			return queues[name].Receive(ctx, queue.MaxBatch, 2*time.Minute, 0)
		},
		ack: func(ctx context.Context, name string, msgs []queue.Message) error {
			for _, m := range msgs {
				if err := queues[name].Delete(ctx, m.Receipt); err != nil {
					return err
				}
			}
			return nil
		},
	}
	runID := submit(t, ctx, svc)
	r := pl.runToEnd(ctx, runID, 4*time.Minute)
	if r.Status != run.Finished {
		t.Fatalf("SQLite run ended %s (%s), want finished", r.Status, r.Reason)
	}
	board, err := pl.recs.Boards.Leaderboard(ctx, e2eWS, "demo-bench")
	if err != nil {
		t.Fatalf("SQLite leaderboard: %v", err)
	}
	return board
}

// dirOf returns the absolute path of a directory relative to the test's.
func dirOf(t *testing.T, rel string) string {
	t.Helper()
	abs, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// sandboxSide labels what the local driver does as the sandbox's own AWS
// usage (its uploads would be the runner's presigned PUTs in the cloud),
// not the dispatcher's that launched it.
type sandboxSide struct{ sandbox.Driver }

func (d sandboxSide) Launch(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	return d.Driver.Launch(cloudtest.WithLabel(ctx, "sandbox"), spec)
}
