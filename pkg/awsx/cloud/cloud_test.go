package cloud_test

import (
	"context"
	"encoding/json"
	"errors"
	"hash/crc32"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/store"
)

var discard = slog.New(slog.DiscardHandler)

// recorder answers every AWS call with an error and remembers which
// service and operation each request was for.
type recorder struct {
	mu   sync.Mutex
	hits []string
}

func (r *recorder) server(t *testing.T, name string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		op := req.Header.Get("X-Amz-Target")
		if op == "" {
			op = req.Method + " " + req.URL.Path
		}
		r.mu.Lock()
		r.hits = append(r.hits, name+" "+op)
		r.mu.Unlock()
		body := []byte(`{"__type":"ValidationException","message":"recorded"}`)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)) // DynamoDB's checksum
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// callEveryAdapter makes one call through each wired adapter.
func callEveryAdapter(t *testing.T, p *cloud.Platform) {
	ctx := context.Background()
	_, _ = p.Ports.Table.Get(ctx, "pk", "sk")
	_ = p.Ports.Slots.Send(ctx, queue.Outgoing{Body: []byte("{}")})
	_, _ = p.Ports.Blobs.Get(ctx, "runs/r1/result.json")
	_, _ = p.Ports.Secrets.Get(ctx, secret.Ref{Workspace: "ws", Scope: secret.Workspace, Name: "OPENAI_API_KEY"})
	_ = p.Ports.Sandboxes.Stop(ctx, "arn:aws:ecs:us-east-1:111122223333:task/sandboxes/x")
}

func TestEveryClientHonoursEndpointVariables(t *testing.T) {
	env := stackEnv()
	cfg, err := cloud.Load(cloud.Dispatcher, func(n string) string { return env[n] })
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_MAX_ATTEMPTS", "1")

	t.Run("one variable per service", func(t *testing.T) {
		rec := &recorder{}
		for _, svc := range []string{"DYNAMODB", "SQS", "S3", "ECS", "SECRETS_MANAGER"} {
			t.Setenv("AWS_ENDPOINT_URL_"+svc, rec.server(t, svc))
		}
		p, err := cloud.Connect(context.Background(), cfg, discard)
		if err != nil {
			t.Fatal(err)
		}
		callEveryAdapter(t, p)
		want := []string{
			"DYNAMODB DynamoDB_20120810.GetItem",
			"SQS AmazonSQS.SendMessageBatch",
			"S3 GET /gauntlet-dev-artifacts/runs/r1/result.json", // path style against an endpoint override
			"SECRETS_MANAGER secretsmanager.GetSecretValue",
			"ECS AmazonEC2ContainerServiceV20141113.StopTask",
		}
		if diff := cmp.Diff(want, rec.hits); diff != "" {
			t.Errorf("requests by endpoint (-want +got):\n%s", diff)
		}
	})
	t.Run("one variable for all", func(t *testing.T) {
		rec := &recorder{}
		t.Setenv("AWS_ENDPOINT_URL", rec.server(t, "ALL"))
		for _, svc := range []string{"DYNAMODB", "SQS", "S3", "ECS", "SECRETS_MANAGER"} {
			os.Unsetenv("AWS_ENDPOINT_URL_" + svc)
		}
		p, err := cloud.Connect(context.Background(), cfg, discard)
		if err != nil {
			t.Fatal(err)
		}
		callEveryAdapter(t, p)
		if len(rec.hits) != 5 {
			t.Errorf("requests to AWS_ENDPOINT_URL = %q, want one per service", rec.hits)
		}
	})
}

func TestUnwiredPortsNameTheirVariable(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	p, err := cloud.Connect(context.Background(), cloud.Config{Stage: "dev", Table: "t"}, discard)
	if err != nil {
		t.Fatal(err)
	}
	if p.Ports.Plan != nil || p.Ports.Slots != nil || p.Ports.Completions != nil || p.Ports.Results != nil ||
		p.Ports.Blobs != nil || p.Ports.Secrets != nil || p.Ports.Sandboxes != nil {
		t.Errorf("ports of a table-only configuration = %+v, want only the table set", p.Ports)
	}
	build := func(f func() (any, error)) func() error {
		return func() error { _, err := f(); return err }
	}
	tests := []struct {
		stage string
		build func() error
		want  []string
	}{
		{"submitter", build(func() (any, error) { return p.Submitter() }), []string{"GAUNTLET_PLAN_QUEUE_URL"}},
		{"stopper", build(func() (any, error) { return p.Stopper() }), []string{"GAUNTLET_PLAN_QUEUE_URL"}},
		{"planner", build(func() (any, error) { return p.Planner() }), []string{"GAUNTLET_PLAN_QUEUE_URL", "GAUNTLET_SLOTS_QUEUE_URL", "GAUNTLET_CLUSTER"}},
		{"dispatcher", build(func() (any, error) { return p.Dispatcher() }), []string{"GAUNTLET_SLOTS_QUEUE_URL", "GAUNTLET_COMPLETIONS_QUEUE_URL",
			"GAUNTLET_RESULTS_QUEUE_URL", "GAUNTLET_SECRETS_PREFIX", "GAUNTLET_CLUSTER"}},
		{"grader", build(func() (any, error) { return p.Grader() }), []string{"GAUNTLET_RESULTS_QUEUE_URL", "GAUNTLET_BUCKET"}},
		{"ingester", build(func() (any, error) { return p.Ingester() }), []string{"GAUNTLET_SLOTS_QUEUE_URL"}},
		{"watchdog", build(func() (any, error) { return p.Watchdog() }), []string{"GAUNTLET_PLAN_QUEUE_URL", "GAUNTLET_SLOTS_QUEUE_URL",
			"GAUNTLET_COMPLETIONS_QUEUE_URL", "GAUNTLET_CLUSTER"}},
	}
	for _, tt := range tests {
		err := tt.build()
		if !errors.Is(err, cloud.ErrNotWired) {
			t.Errorf("%s without its ports: error = %v, want ErrNotWired", tt.stage, err)
			continue
		}
		for _, env := range tt.want {
			if !strings.Contains(err.Error(), env) {
				t.Errorf("%s without its ports: error = %v, want it to name %s", tt.stage, err, env)
			}
		}
	}
	if _, err := p.Recomputer(); err != nil {
		t.Errorf("Recomputer() on the table alone: %v", err)
	}
	if _, err := p.BenchSync(); !errors.Is(err, cloud.ErrNotWired) {
		t.Errorf("BenchSync() without a bucket: error = %v, want ErrNotWired", err)
	}
}

func TestDecodeCompletion(t *testing.T) {
	ecsEvent, err := os.ReadFile("../../../events/grader.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(ecsEvent, &ev); err != nil {
		t.Fatal(err)
	}
	ev["detail"].(map[string]any)["lastStatus"] = "RUNNING"
	runningJSON, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	running := string(runningJSON)
	tests := []struct {
		name    string
		body    string
		wantErr error
		check   func(c sandbox.Completion) bool
	}{
		{name: "ecs task state change", body: string(ecsEvent),
			check: func(c sandbox.Completion) bool {
				return c.Reason == sandbox.Exited && c.RunID != "" && c.LaunchID != ""
			}},
		{name: "completion sent by the dispatcher",
			body: `{"sandbox_id":"","launch_id":"l-1","workspace":"ws","run_id":"r-1","slot_id":"0/t/1","generation":0,"reason":"failed_to_start","exit_code":0,"message":"no capacity","started_at":"2026-11-29T12:00:00Z","stopped_at":"2026-11-29T12:00:00Z"}`,
			check: func(c sandbox.Completion) bool {
				return c.Reason == sandbox.FailedToStart && c.Message == "no capacity"
			}},
		{name: "task still running", body: running, wantErr: ecssandbox.ErrNotSandbox},
		{name: "another source", body: `{"detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","detail":{}}`, wantErr: ecssandbox.ErrNotSandbox},
		{name: "unknown completion field", body: `{"run_id":"r","slot_id":"s","launch_id":"l","extra":1}`, wantErr: pipeline.ErrPoison},
		{name: "not json", body: `stopped`, wantErr: pipeline.ErrPoison},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := cloud.DecodeCompletion([]byte(tt.body))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("DecodeCompletion() error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("DecodeCompletion() = %+v, %v", c, err)
			}
		})
	}
	graded := 0
	handle := cloud.Completions(func(context.Context, sandbox.Completion) error { graded++; return nil }, discard)
	if err := handle(context.Background(), queue.Message{Body: []byte(running)}); err != nil || graded != 0 {
		t.Errorf("Completions(running task) = %v after %d grades, want it acknowledged, not graded", err, graded)
	}
	if err := handle(context.Background(), queue.Message{Body: ecsEvent}); err != nil || graded != 1 {
		t.Errorf("Completions(stopped task) = %v after %d grades, want one grade", err, graded)
	}
}

func streamRecord(seq string, img map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{EventID: "e" + seq, EventName: "INSERT", EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{SequenceNumber: seq, NewImage: img, StreamViewType: "NEW_AND_OLD_IMAGES"}}
}

func TestStreamHandler(t *testing.T) {
	item := func(sk string) map[string]events.DynamoDBAttributeValue {
		return map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("RUN#r1"),
			"sk": events.NewStringAttribute(sk), "version": events.NewNumberAttribute("1")}
	}
	bad := map[string]events.DynamoDBAttributeValue{"pk": events.NewBooleanAttribute(true)}
	tests := []struct {
		name       string
		records    []events.DynamoDBEventRecord
		recompErr  error
		wantSeen   []string
		wantFailed []string
	}{
		{name: "batch recomputed at once", records: []events.DynamoDBEventRecord{streamRecord("100", item("A")), streamRecord("200", item("B"))},
			wantSeen: []string{"100", "200"}},
		{name: "recompute error retries the batch from its first record",
			records:   []events.DynamoDBEventRecord{streamRecord("100", item("A")), streamRecord("200", item("B"))},
			recompErr: errors.New("throttled"), wantSeen: []string{"100", "200"}, wantFailed: []string{"100"}},
		{name: "undecodable record fails from itself", records: []events.DynamoDBEventRecord{streamRecord("100", item("A")), streamRecord("200", bad), streamRecord("300", item("C"))},
			wantSeen: []string{"100"}, wantFailed: []string{"200"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []string
			h := cloud.NewStreamHandler(func(_ context.Context, cs []store.Change) error {
				for _, c := range cs {
					seen = append(seen, c.ID)
				}
				return tt.recompErr
			}, discard)
			resp, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: tt.records})
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, f.ItemIdentifier)
			}
			if diff := cmp.Diff(tt.wantSeen, seen); diff != "" {
				t.Errorf("recomputed changes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFailed, failed); diff != "" {
				t.Errorf("batch item failures (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsScheduled(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want bool
	}{
		{"scheduler default event", `{"version":"0","id":"1","detail-type":"Scheduled Event","source":"aws.scheduler","detail":"{}"}`, true},
		{"scheduled rule", `{"version":"0","id":"1","detail-type":"Scheduled Event","source":"aws.events","detail":{}}`, true},
		{"sqs batch", `{"Records":[{"messageId":"m","eventSource":"aws:sqs","body":"{}"}]}`, false},
		{"ecs event", `{"detail-type":"ECS Task State Change","source":"aws.ecs","detail":{}}`, false},
	}
	for _, tt := range tests {
		if _, got := cloud.IsScheduled([]byte(tt.raw)); got != tt.want {
			t.Errorf("IsScheduled(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
