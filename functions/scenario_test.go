package functions_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/golang-jwt/jwt/v5"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud/cloudtest"
	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/pipeline"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/runconfig"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

var updateEvents = flag.Bool("update-events", false, "regenerate events/*.json from a run against the emulators")

// The sample scenario: one oracle attempt at one demo-bench task, submitted
// with an idempotency key so that its run, slot and launch ids are the same
// in every fresh environment (the events/ samples name them).
const (
	sampleWS       = "ws-demo"
	sampleUser     = "user-7f3a"
	sampleKey      = "sample-run-1"
	registryWS     = "ws-registry"
	registrySpec   = "demo-bench@1.0"
	sampleAudience = "5q1example0client0id0abcd"
	sampleConfig   = `
[experiment]
benchmark = "demo-bench"

[tasks]
task_names = ["csv-summary"]

[execution]
attempts_per_task = 1
max_concurrent_attempts = 1

[[agents]]
harness = "oracle"
`
)

// world is a seeded cloud environment: emulator resources, the process
// environment pointing the SDK at them, and in-process adapters.
type world struct {
	t      *testing.T
	ctx    context.Context
	env    *cloudtest.Env
	vars   map[string]string
	p      *cloud.Platform
	svc    *pipeline.Service
	recs   *records.Store
	runID  string
	issuer *issuer
}

var everything = cloud.Needs{Plan: true, Slots: true, Completions: true, Results: true, Sync: true,
	Blobs: true, Secrets: true, Sandboxes: true, JWT: true, MaxSandboxes: true, Registry: true, Images: true}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), env: cloudtest.NewEnv(t), issuer: newIssuer(t)}
	registry, err := filepath.Abs("../examples/registry.json")
	if err != nil {
		t.Fatal(err)
	}
	w.vars = w.env.Setenv(t, map[string]string{
		cloud.EnvRegistry: registry, cloud.EnvJWTIssuer: w.issuer.url, cloud.EnvJWTAudience: sampleAudience,
	})
	cfg, err := cloud.Load(everything, cloudtest.Getenv(w.vars))
	if err != nil {
		t.Fatal(err)
	}
	if w.p, err = cloud.Connect(w.ctx, cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if w.svc, err = w.p.Pipeline(); err != nil {
		t.Fatal(err)
	}
	w.recs = w.svc.Records()
	w.seed()
	return w
}

func (w *world) seed() {
	t := w.t
	data, err := os.ReadFile("../examples/catalog.toml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := benchmark.ParseCatalog(data, filepath.Join(dirOf(t, "../examples"), "catalog.toml"))
	if err != nil {
		t.Fatal(err)
	}
	// The managed catalog is installed as in the cloud: benchsync bundles
	// every task into the bucket, so slot specs carry presigned bundle URLs.
	sync, err := w.p.BenchSync()
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := sync.InstallCatalog(w.ctx, pipeline.PlatformWorkspace, cat, examples)
	if err != nil {
		t.Fatalf("install the managed catalog: %v", err)
	}
	for _, m := range msgs {
		// The demo tasks build in the CodeBuild fake: a sync parks on its
		// builds and its resume finishes it.
		err := sync.Sync(w.ctx, m)
		for i := 0; i < 3; i++ {
			var building *benchsync.ImagesBuilding
			if !errors.As(err, &building) {
				break
			}
			err = sync.Sync(w.ctx, building.Resume)
		}
		if err != nil {
			t.Fatalf("sync %s: %v", m.Key, err)
		}
		if b, err := w.recs.Benchmarks.Benchmark(w.ctx, m.Workspace, m.Key); err != nil || b.Status != records.SyncReady {
			t.Fatalf("benchmark %s after sync: %+v, %v; want ready", m.Key, b, err)
		}
	}
	if err := w.recs.Workspaces.PutBilling(w.ctx, sampleWS, records.Billing{Status: records.BillingActive, Plan: "team"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := runconfig.Parse([]byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.svc.Submit(w.ctx, pipeline.SubmitRequest{Workspace: sampleWS, User: sampleUser, Config: cfg, IdempotencyKey: sampleKey})
	if err != nil {
		t.Fatalf("submit the sample run: %v", err)
	}
	w.runID = res.Run.ID
	if _, err := sync.Add(w.ctx, registryWS, registrySpec); err != nil {
		t.Fatalf("add %s to %s: %v", registrySpec, registryWS, err)
	}
}

// receive takes every message of a queue (and deletes it), returning the
// bodies.
func (w *world) receive(queue string) []sqsMessage {
	w.t.Helper()
	client := w.env.Endpoints.SQSClient()
	var out []sqsMessage
	for {
		got, err := client.ReceiveMessage(w.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(w.env.Queues[queue]),
			MaxNumberOfMessages: 10, WaitTimeSeconds: 0, MessageSystemAttributeNames: nil})
		if err != nil {
			w.t.Fatal(err)
		}
		if len(got.Messages) == 0 {
			return out
		}
		for _, m := range got.Messages {
			out = append(out, sqsMessage{ID: aws.ToString(m.MessageId), Body: aws.ToString(m.Body)})
			if _, err := client.DeleteMessage(w.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(w.env.Queues[queue]), ReceiptHandle: m.ReceiptHandle}); err != nil {
				w.t.Fatal(err)
			}
		}
	}
}

// receiveWithin waits (polling, with a deadline) until the queue has
// messages, and takes them; a delayed message becomes visible in time.
func (w *world) receiveWithin(queue string, within time.Duration) []sqsMessage {
	w.t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if got := w.receive(queue); len(got) > 0 || time.Now().After(deadline) {
			return got
		}
		<-tick.C
	}
}

type sqsMessage struct{ ID, Body string }

// uploadResult plays the sandbox-runner's last step: it PUTs a passing
// result.json to the presigned URL in the slot spec the dispatcher sent
// to ECS.
func (w *world) uploadResult(spec sandbox.Spec) {
	w.t.Helper()
	started := time.Date(2026, 11, 29, 12, 1, 26, 0, time.UTC)
	finished := started.Add(2*time.Minute + 41*time.Second)
	in, out := 0, 0
	tr := harbor.TrialResult{
		ID: "5b0f8a52-6f41-4d0e-9a7c-3f1d2e4b5c6d", TaskName: spec.Task.Name, TrialName: spec.SlotID, Config: json.RawMessage("{}"),
		AgentInfo:      harbor.AgentInfo{Name: spec.Harness, Version: "1"},
		AgentResult:    &harbor.AgentResult{NInputTokens: &in, NOutputTokens: &out},
		VerifierResult: &harbor.VerifierResult{Rewards: map[string]float64{"reward": 1}},
		StartedAt:      &started, FinishedAt: &finished,
	}
	body, err := json.Marshal(tr)
	if err != nil {
		w.t.Fatal(err)
	}
	if spec.Output.ResultURL == "" {
		w.t.Fatalf("slot spec has no presigned result URL: %+v", spec.Output)
	}
	req, err := http.NewRequest(http.MethodPut, spec.Output.ResultURL, bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		w.t.Fatalf("PUT result.json to the presigned URL: status %d", resp.StatusCode)
	}
}

// launchedSpec returns the slot spec of the last RunTask the ECS fake saw.
func (w *world) launchedSpec() (sandbox.Spec, cloudtest.Request) {
	w.t.Helper()
	runs := w.env.ECS.Requests("RunTask")
	if len(runs) == 0 {
		w.t.Fatal("no RunTask request reached ECS")
	}
	last := runs[len(runs)-1]
	var spec sandbox.Spec
	overrides, _ := json.Marshal(last.Body["overrides"])
	var o struct {
		ContainerOverrides []struct {
			Environment []struct{ Name, Value string } `json:"environment"`
		} `json:"containerOverrides"`
	}
	if err := json.Unmarshal(overrides, &o); err != nil {
		w.t.Fatal(err)
	}
	for _, c := range o.ContainerOverrides {
		for _, e := range c.Environment {
			if e.Name == "GAUNTLET_SLOT_SPEC" {
				if err := json.Unmarshal([]byte(e.Value), &spec); err != nil {
					w.t.Fatal(err)
				}
				return spec, last
			}
		}
	}
	w.t.Fatalf("RunTask without a %s override: %v", "GAUNTLET_SLOT_SPEC", last.Body)
	return spec, last
}

// issuer is an httptest OpenID provider: discovery document and JWKS.
type issuer struct {
	url string
	key *rsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.url, "jwks_uri": is.url + "/.well-known/jwks.json"})
	})
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "kid": "test-key", "use": "sig", "alg": "RS256",
			"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.url = srv.URL
	return is
}

func (is *issuer) claims(ws string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"iss": is.url, "aud": sampleAudience, "sub": sampleUser, "custom:workspace": ws,
		"token_use": "id", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

func (is *issuer) token(t *testing.T, c jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = "test-key"
	s, err := tok.SignedString(is.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readEvent loads events/<name>.
func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "events", name))
	if err != nil {
		t.Fatalf("read events/%s: %v (regenerate with go test ./functions -run TestGenerateSampleEvents -update-events)", name, err)
	}
	return b
}

// sqsBody returns the body of an SQS sample's only record.
func sqsBody(t *testing.T, event []byte) string {
	t.Helper()
	var ev events.SQSEvent
	if err := json.Unmarshal(event, &ev); err != nil || len(ev.Records) != 1 {
		t.Fatalf("not a one-record SQS event (%v): %s", err, event)
	}
	return ev.Records[0].Body
}

func decodeSyncMessage(t *testing.T, body string) benchsync.SyncMessage {
	t.Helper()
	m, err := benchsync.DecodeSyncMessage([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func must(t *testing.T, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
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
