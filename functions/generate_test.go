package functions_test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud/cloudtest"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/dynamo"
	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// Names in the samples: what the dev stage's resources look like in a
// real account, in place of the emulators' random names.
const (
	account   = "111122223333"
	cluster   = "arn:aws:ecs:us-east-1:111122223333:cluster/gauntlet-dev-sandboxes"
	streamARN = "arn:aws:dynamodb:us-east-1:111122223333:table/gauntlet-dev-Table/stream/2026-11-29T11:58:02.117"
	bucketURL = "https://gauntlet-dev-artifacts.s3.us-east-1.amazonaws.com/"
)

// TestGenerateSampleEvents regenerates events/*.json from one run of the
// sample scenario through the in-process cloud adapters: every message body
// and stream image in them is what gauntlet really wrote. It only runs with
// -update-events; the samples are committed.
func TestGenerateSampleEvents(t *testing.T) {
	if !*updateEvents {
		t.Skip("regenerates events/; run with -update-events")
	}
	w := newWorld(t)
	out := map[string]any{}

	plan := w.receive("plan")
	if len(plan) != 1 {
		t.Fatalf("plan queue holds %d messages, want 1", len(plan))
	}
	out["planner.json"] = sqsEvent("plan", plan[0])
	must(t, w.svc.HandlePlan(w.ctx, []byte(plan[0].Body)), "plan")

	slots := w.receive("slots")
	if len(slots) != 1 {
		t.Fatalf("slots queue holds %d messages, want 1", len(slots))
	}
	out["dispatcher.json"] = sqsEvent("slots", slots[0])
	must(t, w.svc.HandleSlot(w.ctx, []byte(slots[0].Body)), "dispatch")

	spec, runTask := w.launchedSpec()
	w.uploadResult(spec)
	ecsEvent := w.stoppedEvent(spec, runTask)
	out["grader.json"] = ecsEvent
	ecsJSON, err := json.Marshal(ecsEvent)
	must(t, err, "encode ecs event")
	out["grader-sqs.json"] = sqsEvent("completions", sqsMessage{ID: "0c5e9f0a-7a43-4f59-8f3e-1b2d3c4e5f60", Body: string(ecsJSON)})
	c, err := cloud.DecodeCompletion(ecsJSON)
	must(t, err, "decode the generated ecs event")
	must(t, w.svc.Grade(w.ctx, c), "grade")

	results := w.receive("results")
	if len(results) != 1 {
		t.Fatalf("results queue holds %d messages, want 1", len(results))
	}
	out["ingester.json"] = sqsEvent("results", results[0])
	must(t, w.svc.HandleResult(w.ctx, []byte(results[0].Body)), "ingest")
	r, err := w.recs.Runs.Run(w.ctx, w.runID)
	must(t, err, "read run")
	if r.Status != run.Finished {
		t.Fatalf("sample run is %s after its one result, want finished", r.Status)
	}
	out["leaderboard.json"] = events.DynamoDBEvent{Records: w.streamRecords()}

	now := time.Date(2026, 11, 29, 12, 5, 0, 0, time.UTC)
	out["watchdog.json"] = schedulerEvent("8e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b", "gauntlet-dev-WatchdogSchedule", now)
	out["registrysync-schedule.json"] = schedulerEvent("2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901", "gauntlet-dev-RegistrySyncSchedule", now)
	body, err := benchsync.NewSyncMessage(registryWS, benchmark.KeyFor("demo-bench", "1.0")).Encode()
	must(t, err, "encode sync message")
	out["registrysync.json"] = sqsEvent("sync", sqsMessage{ID: "d41f7c2a-3b5e-4c6d-9e8f-0a1b2c3d4e5f", Body: string(body)})
	out["api.json"] = apiEvent(w.runID, w.issuer.token(t, w.issuer.claims(sampleWS)))

	for name, ev := range out {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		must(t, enc.Encode(ev), "encode %s", name)
		text := strings.ReplaceAll(buf.String(), w.env.Endpoints.S3+"/"+w.env.Bucket+"/", bucketURL)
		must(t, os.WriteFile(filepath.Join("..", "events", name), []byte(text), 0o644), "write %s", name)
	}
}

func sqsEvent(queue string, m sqsMessage) events.SQSEvent {
	sum := md5.Sum([]byte(m.Body))
	sent := time.Date(2026, 11, 29, 12, 0, 3, 0, time.UTC).UnixMilli()
	return events.SQSEvent{Records: []events.SQSMessage{{
		MessageId:     m.ID,
		ReceiptHandle: "AQEB" + strings.Repeat("x3Jk9Qm2", 12) + "==",
		Body:          m.Body,
		Md5OfBody:     hex.EncodeToString(sum[:]),
		Attributes: map[string]string{
			"ApproximateReceiveCount":          "1",
			"SentTimestamp":                    itoa(sent),
			"SenderId":                         "AROAEXAMPLE6CDXWI7LXK:gauntlet-dev-function",
			"ApproximateFirstReceiveTimestamp": itoa(sent + 412),
		},
		MessageAttributes: map[string]events.SQSMessageAttribute{},
		EventSource:       "aws:sqs",
		EventSourceARN:    "arn:aws:sqs:us-east-1:" + account + ":gauntlet-dev-" + queue,
		AWSRegion:         "us-east-1",
	}}}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func schedulerEvent(id, schedule string, at time.Time) map[string]any {
	return map[string]any{
		"version": "0", "id": id, "detail-type": "Scheduled Event", "source": "aws.scheduler",
		"account": account, "time": at.Format(time.RFC3339), "region": "us-east-1",
		"resources": []string{"arn:aws:scheduler:us-east-1:" + account + ":schedule/default/" + schedule},
		"detail":    "{}",
	}
}

// stoppedEvent is the EventBridge event ECS emits when the task the
// dispatcher's RunTask started stops after its essential container exited
// 0: the RunTask request's overrides, tags and startedBy, as ECS echoes them.
func (w *world) stoppedEvent(spec sandbox.Spec, runTask cloudtest.Request) map[string]any {
	taskID := "5f0c1d2e3a4b4c5d8e9f0a1b2c3d4e5f"
	taskARN := "arn:aws:ecs:us-east-1:" + account + ":task/gauntlet-dev-sandboxes/" + taskID
	def, _ := runTask.Body["taskDefinition"].(string)
	family := def[strings.LastIndex(def, "/")+1 : strings.LastIndex(def, ":")]
	created := time.Date(2026, 11, 29, 12, 1, 2, 113e6, time.UTC)
	at := func(d time.Duration) string { return created.Add(d).Format("2006-01-02T15:04:05.000Z") }
	container := func(name, image, suffix string) map[string]any {
		return map[string]any{
			"containerArn": "arn:aws:ecs:us-east-1:" + account + ":container/gauntlet-dev-sandboxes/" + taskID + "/" + suffix,
			"exitCode":     0, "lastStatus": "STOPPED", "name": name, "image": image, "taskArn": taskARN, "cpu": "0",
		}
	}
	detail := map[string]any{
		"attachments":      []any{},
		"availabilityZone": "us-east-1a",
		"clusterArn":       cluster,
		"containers": []any{
			container("runner-init", w.vars[cloud.EnvRunnerImage], "6a2d1c0e-6b1f-4f0e-9d4c-2a3b4c5d6e7f"),
			container("task", spec.Image, "7b3e2d1f-7c2a-4a1f-8e5d-3b4c5d6e7f80"),
		},
		"createdAt":          at(0),
		"launchType":         "FARGATE",
		"cpu":                "1024",
		"memory":             "2048",
		"desiredStatus":      "STOPPED",
		"group":              "family:" + family,
		"lastStatus":         "STOPPED",
		"overrides":          runTask.Body["overrides"],
		"tags":               runTask.Body["tags"],
		"connectivity":       "CONNECTED",
		"connectivityAt":     at(8 * time.Second),
		"pullStartedAt":      at(10 * time.Second),
		"pullStoppedAt":      at(18 * time.Second),
		"startedAt":          at(24 * time.Second),
		"startedBy":          runTask.Body["startedBy"],
		"stoppingAt":         at(3*time.Minute + 8*time.Second),
		"stoppedAt":          at(3*time.Minute + 18*time.Second),
		"executionStoppedAt": at(3*time.Minute + 7*time.Second),
		"stopCode":           "EssentialContainerExited",
		"stoppedReason":      "Essential container in task exited",
		"taskArn":            taskARN,
		"taskDefinitionArn":  "arn:aws:ecs:us-east-1:" + account + ":task-definition/" + family + ":1",
		"updatedAt":          at(3*time.Minute + 18*time.Second),
		"version":            5,
		"platformVersion":    "1.4.0",
	}
	return map[string]any{
		"version": "0", "id": "3c4a6f1e-8d2b-4e6a-9c1d-2f3e4a5b6c7d", "detail-type": "ECS Task State Change",
		"source": "aws.ecs", "account": account, "time": at(3*time.Minute + 19*time.Second), "region": "us-east-1",
		"resources": []string{taskARN}, "detail": detail,
	}
}

// streamRecords reads the table's stream and returns, as Lambda event
// records, the attempt result's INSERT and the run's MODIFY to finished.
func (w *world) streamRecords() []events.DynamoDBEventRecord {
	w.t.Helper()
	api := w.env.Endpoints.StreamsClient()
	desc, err := api.DescribeStream(w.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(w.env.StreamARN)})
	must(w.t, err, "describe stream")
	var out []events.DynamoDBEventRecord
	for _, shard := range desc.StreamDescription.Shards {
		it, err := api.GetShardIterator(w.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(w.env.StreamARN),
			ShardId: shard.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		must(w.t, err, "shard iterator")
		for iter, empty := it.ShardIterator, 0; iter != nil && empty < 3; {
			page, err := api.GetRecords(w.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			must(w.t, err, "get records")
			if len(page.Records) == 0 {
				empty++
			}
			for _, r := range page.Records {
				rec := lambdaRecord(r)
				c, err := dynamo.ChangeFromEvent(rec)
				must(w.t, err, "decode stream record")
				ev, ok, err := records.DescribeChange(c)
				must(w.t, err, "describe change")
				finished := ok && ev.Run != nil && ev.Run.Status == run.Finished && ev.OldStatus != run.Finished
				if ok && (ev.ResultInserted || finished) {
					out = append(out, rec)
				}
			}
			iter = page.NextShardIterator
		}
	}
	if len(out) != 2 {
		w.t.Fatalf("stream holds %d result-insert and run-finished records, want 2", len(out))
	}
	return out
}

func lambdaRecord(r stypes.Record) events.DynamoDBEventRecord {
	image := func(img map[string]stypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
		if len(img) == 0 {
			return nil
		}
		out := map[string]events.DynamoDBAttributeValue{}
		for k, v := range img {
			switch v := v.(type) {
			case *stypes.AttributeValueMemberS:
				out[k] = events.NewStringAttribute(v.Value)
			case *stypes.AttributeValueMemberN:
				out[k] = events.NewNumberAttribute(v.Value)
			}
		}
		return out
	}
	d := r.Dynamodb
	return events.DynamoDBEventRecord{
		AWSRegion: "us-east-1", EventID: aws.ToString(r.EventID), EventName: string(r.EventName),
		EventSource: "aws:dynamodb", EventVersion: "1.1", EventSourceArn: streamARN,
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: aws.ToTime(d.ApproximateCreationDateTime)},
			Keys:                        image(d.Keys), NewImage: image(d.NewImage), OldImage: image(d.OldImage),
			SequenceNumber: aws.ToString(d.SequenceNumber), SizeBytes: aws.ToInt64(d.SizeBytes),
			StreamViewType: string(d.StreamViewType),
		},
	}
}

// apiEvent is API Gateway's HTTP API payload 2.0 for GET /v1/runs/{id},
// after its JWT authorizer accepted the token.
func apiEvent(runID, token string) events.APIGatewayV2HTTPRequest {
	path := "/v1/runs/" + runID
	at := time.Date(2026, 11, 29, 12, 6, 40, 0, time.UTC)
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, RawQueryString: "",
		Headers: map[string]string{
			"accept": "application/json", "authorization": "Bearer " + token, "content-length": "0",
			"host": "k3x9example.execute-api.us-east-1.amazonaws.com", "user-agent": "gauntlet-cli/0.1",
			"x-amzn-trace-id": "Root=1-674a2f40-0d1c2b3a4f5e6d7c8b9a0f1e", "x-forwarded-for": "203.0.113.24",
			"x-forwarded-port": "443", "x-forwarded-proto": "https", "x-request-id": "cli-7f3a",
		},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "$default", AccountID: account, Stage: "$default", RequestID: "Cb3kQhXyoAMEVfA=",
			APIID: "k3x9example", DomainName: "k3x9example.execute-api.us-east-1.amazonaws.com", DomainPrefix: "k3x9example",
			Time: at.Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: at.UnixMilli(),
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
				Claims: map[string]string{"sub": sampleUser, "custom:workspace": sampleWS, "aud": sampleAudience, "token_use": "id",
					"iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE", "iat": "1764418000", "exp": "1764421600"},
				Scopes: nil,
			}},
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: path, Protocol: "HTTP/1.1",
				SourceIP: "203.0.113.24", UserAgent: "gauntlet-cli/0.1"},
		},
		IsBase64Encoded: false,
	}
}
