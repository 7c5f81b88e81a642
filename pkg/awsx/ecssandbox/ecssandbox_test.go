package ecssandbox_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/cloud/cloudtest"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/ecssandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/kmskeys"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/kmskeys/kmstest"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/s3blob"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sealed"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// ecsServer speaks ECS's JSON 1.1 protocol to the real SDK client and
// records every request by operation.
type ecsServer struct {
	mu       sync.Mutex
	requests map[string][]map[string]any
	tasks    map[string]string // clientToken → task ARN
	families map[string]int    // family → latest revision
	// defs are the registered definitions by ARN; started the order each
	// task's containers started in (by task ARN), by dependsOn.
	defs    map[string]map[string]any
	started map[string][]string
}

func (s *ecsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := strings.TrimPrefix(target, "AmazonEC2ContainerServiceV20141113.")
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[op] = append(s.requests[op], req)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	switch op {
	case "RegisterTaskDefinition":
		family := req["family"].(string)
		if err := cloudtest.CheckTaskDefinition(req); err != nil {
			w.WriteHeader(400)
			_ = json.NewEncoder(w).Encode(map[string]string{"__type": "ClientException", "message": err.Error()})
			return
		}
		s.families[family]++
		if s.defs == nil {
			s.defs = map[string]map[string]any{}
		}
		s.defs[defARN(family, s.families[family])] = req
		_, _ = io.WriteString(w, `{"taskDefinition":{"status":"ACTIVE","taskDefinitionArn":"`+defARN(family, s.families[family])+`"}}`)
	case "DescribeTaskDefinition":
		family := req["taskDefinition"].(string)
		rev, ok := s.families[family]
		if !ok {
			// What ECS answers for a family it does not know.
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"__type":"ClientException","message":"Unable to describe task definition."}`)
			return
		}
		_, _ = io.WriteString(w, `{"taskDefinition":{"status":"ACTIVE","family":"`+family+`","taskDefinitionArn":"`+defARN(family, rev)+`"}}`)
	case "RunTask":
		token := req["clientToken"].(string)
		arn, ok := s.tasks[token]
		if !ok {
			arn = "arn:aws:ecs:us-east-1:111122223333:task/sandboxes/" + token[:8]
			s.tasks[token] = arn
			if def, ok := s.defs[req["taskDefinition"].(string)]; ok {
				order, err := cloudtest.StartOrder(def)
				if err != nil {
					w.WriteHeader(400)
					_ = json.NewEncoder(w).Encode(map[string]string{"__type": "ClientException", "message": err.Error()})
					return
				}
				if s.started == nil {
					s.started = map[string][]string{}
				}
				s.started[arn] = order
			}
		}
		_, _ = io.WriteString(w, `{"tasks":[{"taskArn":"`+arn+`","createdAt":1767225600,"lastStatus":"PROVISIONING"}],"failures":[]}`)
	case "StopTask":
		_, _ = io.WriteString(w, `{"task":{"taskArn":"`+req["task"].(string)+`"}}`)
	case "ListTasks":
		_, _ = io.WriteString(w, `{"taskArns":["arn:aws:ecs:us-east-1:111122223333:task/sandboxes/a","arn:aws:ecs:us-east-1:111122223333:task/sandboxes/b"]}`)
	case "DescribeTasks":
		_, _ = io.WriteString(w, `{"tasks":[
			{"taskArn":"arn:aws:ecs:us-east-1:111122223333:task/sandboxes/a","lastStatus":"RUNNING","createdAt":1767225600,
			 "tags":[{"key":"gauntlet:launch","value":"L1"},{"key":"gauntlet:slot","value":"0/hello/1"}]},
			{"taskArn":"arn:aws:ecs:us-east-1:111122223333:task/sandboxes/b","lastStatus":"STOPPED","createdAt":1767225600}]}`)
	default:
		http.Error(w, `{"__type":"UnknownOperationException"}`, 400)
	}
}

func defARN(family string, rev int) string {
	return "arn:aws:ecs:us-east-1:111122223333:task-definition/" + family + ":" + strconv.Itoa(rev)
}

// newSealedStore is an S3 blob store on gofakes3, where sealed secrets go.
func newSealedStore(t *testing.T) *s3blob.Store {
	t.Helper()
	fake := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(fake.Close)
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(fake.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("artifacts")}); err != nil {
		t.Fatal(err)
	}
	return s3blob.New(client, "artifacts")
}

// kmsClient is a real KMS SDK client of the fake KMS, signing as accessKey.
func kmsClient(srv *kmstest.Server, accessKey string) *kms.Client {
	return kms.New(kms.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, "secret", ""),
	})
}

func newDriver(t *testing.T) (*ecssandbox.Driver, *ecsServer, *kmstest.Server) {
	t.Helper()
	srv := &ecsServer{requests: map[string][]map[string]any{}, tasks: map[string]string{}, families: map[string]int{}}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	keys := kmstest.New(t)
	return driverOn(t, hs.URL, keys, nil), srv, keys
}

// driverOn is a driver (one dispatcher) speaking to the fake ECS at url,
// its configuration changed by edit.
func driverOn(t *testing.T, url string, keys *kmstest.Server, edit func(*ecssandbox.Config)) *ecssandbox.Driver {
	t.Helper()
	client := ecs.New(ecs.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	files := newSealedStore(t)
	cfg := ecssandbox.Config{
		Cluster: "arn:aws:ecs:us-east-1:111122223333:cluster/sandboxes", Subnets: []string{"subnet-a", "subnet-b"},
		SecurityGroups: []string{"sg-egress"}, TaskRoleARN: "arn:aws:iam::111122223333:role/sandbox-task",
		ExecutionRoleARN: "arn:aws:iam::111122223333:role/sandbox-exec", LogGroup: "/gauntlet/sandboxes",
		Region: "us-east-1", RunnerImage: "111122223333.dkr.ecr.us-east-1.amazonaws.com/runner:1",
		KMSKey: kmstest.KeyARN, DataKeys: kmskeys.New(kmsClient(keys, "DISPATCHER"), kmstest.KeyARN),
		Sealed: files, Files: files,
	}
	if edit != nil {
		edit(&cfg)
	}
	d, err := ecssandbox.New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// testImage is a pinned task image, as a sync records it.
const testImage = "ghcr.io/example/task@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func testSpec(launch string) sandbox.Spec {
	return sandbox.Spec{
		LaunchID: launch, Workspace: "ws1", RunID: "run1", SlotID: "0/hello/1", Generation: 0,
		Task:    sandbox.TaskRef{Name: "hello", BundleKey: "tasks/hello.tar.gz", Dir: "/srv/tasks/hello"},
		Harness: "codex", Model: "openai/gpt-5.2", Image: testImage, CPUs: 1, MemoryMB: 2048,
		AgentTimeout: 10 * time.Minute, VerifierTimeout: 5 * time.Minute,
		Output:  sandbox.Output{Prefix: "runs/run1/slots/x/g0/", Expires: time.Now().Add(time.Hour)},
		Secrets: map[string]secret.Value{"OPENAI_API_KEY": "sk-live-do-not-leak"},
	}
}

func TestLaunchRegistersOnceAndRunsFargateTask(t *testing.T) {
	d, srv, keys := newDriver(t)
	ctx := context.Background()
	h1, err := d.Launch(ctx, testSpec("launch-1"))
	if err != nil {
		t.Fatal(err)
	}
	h2, err := d.Launch(ctx, testSpec("launch-2"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := d.Launch(ctx, testSpec("launch-1"))
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != h1.ID || h1.ID == h2.ID {
		t.Fatalf("handles %q %q %q: a repeated launch id must adopt its task, a new one start another", h1.ID, h2.ID, again.ID)
	}
	if n := len(srv.requests["RegisterTaskDefinition"]); n != 1 {
		t.Fatalf("RegisterTaskDefinition called %d times, want once per distinct environment", n)
	}
	def := srv.requests["RegisterTaskDefinition"][0]
	for key, want := range map[string]any{
		"cpu": "1024", "memory": "2048", "networkMode": "awsvpc",
		"requiresCompatibilities": []any{"FARGATE"},
		"taskRoleArn":             "arn:aws:iam::111122223333:role/sandbox-task",
		"executionRoleArn":        "arn:aws:iam::111122223333:role/sandbox-exec",
	} {
		if diff := cmp.Diff(want, def[key]); diff != "" {
			t.Errorf("task definition %s (-want +got):\n%s", key, diff)
		}
	}
	containers := def["containerDefinitions"].([]any)
	task := containers[1].(map[string]any)
	if task["image"] != testImage || task["name"] != "task" {
		t.Errorf("task container = %v", task)
	}
	if diff := cmp.Diff([]any{"/gauntlet/sandbox-runner"}, task["entryPoint"]); diff != "" {
		t.Errorf("task entry point (-want +got):\n%s", diff)
	}
	// The runner runs as root and isolates the agent under its own uid.
	wantCommand := []any{"--isolation", "container", "--work", "/gauntlet-work", "--out", "/gauntlet-out", "--static-bin-dir", "/gauntlet/bin"}
	if diff := cmp.Diff(wantCommand, task["command"]); diff != "" {
		t.Errorf("task command (-want +got):\n%s", diff)
	}
	if task["user"] != "0" {
		t.Errorf("task container user = %v, want 0 (root)", task["user"])
	}

	run := srv.requests["RunTask"][0]
	if run["launchType"] != "FARGATE" || run["clientToken"] != "launch-1" || run["startedBy"] != "run1" {
		t.Errorf("RunTask = %v", run)
	}
	wantNet := map[string]any{"awsvpcConfiguration": map[string]any{
		"subnets": []any{"subnet-a", "subnet-b"}, "securityGroups": []any{"sg-egress"}, "assignPublicIp": "DISABLED",
	}}
	if diff := cmp.Diff(wantNet, run["networkConfiguration"]); diff != "" {
		t.Errorf("network configuration (-want +got):\n%s", diff)
	}
	tags := map[string]string{}
	for _, tag := range run["tags"].([]any) {
		m := tag.(map[string]any)
		tags[m["key"].(string)] = m["value"].(string)
	}
	wantTags := map[string]string{"gauntlet:launch": "launch-1", "gauntlet:run": "run1", "gauntlet:slot": "0/hello/1", "gauntlet:workspace": "ws1"}
	if diff := cmp.Diff(wantTags, tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	override := run["overrides"].(map[string]any)["containerOverrides"].([]any)[0].(map[string]any)
	env := map[string]string{}
	for _, kv := range override["environment"].([]any) {
		m := kv.(map[string]any)
		env[m["name"].(string)] = m["value"].(string)
	}
	var spec sandbox.Spec
	if err := json.Unmarshal([]byte(env[sandbox.SpecEnv]), &spec); err != nil {
		t.Fatal(err)
	}
	// The task's stored files reach it through presigned URLs only: a GET of
	// its bundle, PUTs of its outputs; a host directory means nothing to it.
	presigned := func(u, key string) bool {
		return strings.Contains(u, "/artifacts/"+key) && strings.Contains(u, "X-Amz-Signature=")
	}
	if spec.Task.Dir != "" || spec.Task.BundleFile != "" || !presigned(spec.Task.BundleURL, "tasks/hello.tar.gz") {
		t.Errorf("spec task = %+v, want only a presigned bundle URL", spec.Task)
	}
	if !presigned(spec.Output.ResultURL, "runs/run1/slots/x/g0/result.json") || !presigned(spec.Output.ArtifactsURL, "runs/run1/slots/x/g0/artifacts.tar.gz") {
		t.Errorf("spec output = %+v, want presigned upload URLs under the prefix", spec.Output)
	}
	// The secret travels sealed: the runner fetches it by presigned URL and
	// opens it with the data key KMS unwraps for this launch only, with the
	// task role's credentials.
	if _, ok := env["GAUNTLET_SECRETS_KEY"]; ok {
		t.Error("a plaintext sealing key is in the overrides")
	}
	wrapped, err := base64.StdEncoding.DecodeString(env[sealed.DataKeyEnv])
	if err != nil || len(wrapped) == 0 {
		t.Fatalf("%s = %q, want a base64 CiphertextBlob", sealed.DataKeyEnv, env[sealed.DataKeyEnv])
	}
	taskRole := kmskeys.New(kmsClient(keys, "TASKROLE"), "")
	dataKey, err := taskRole.OpenDataKey(ctx, wrapped, "launch-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := taskRole.OpenDataKey(ctx, wrapped, "launch-2"); err == nil {
		t.Error("the data key of launch-1 opened under launch-2's encryption context")
	}
	resp, err := http.Get(env[sealed.URLEnv])
	if err != nil {
		t.Fatal(err)
	}
	ct, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	opened, err := sealed.Open(ct, dataKey, "launch-1")
	if err != nil {
		t.Fatalf("open sealed secrets from %s: %v", env[sealed.URLEnv], err)
	}
	if opened.Agent["OPENAI_API_KEY"] != "sk-live-do-not-leak" {
		t.Errorf("sealed agent secrets = %v", opened.Agent)
	}
	generated := 0
	for _, r := range keys.Requests() {
		if r.Operation != "GenerateDataKey" {
			continue
		}
		generated++
		if r.AccessKey != "DISPATCHER" || r.Body["KeyId"] != kmstest.KeyARN {
			t.Errorf("GenerateDataKey by %s on %v, want the dispatcher on the sandbox key", r.AccessKey, r.Body["KeyId"])
		}
		launch := r.Body["EncryptionContext"].(map[string]any)["gauntlet:launch"]
		if launch != "launch-1" && launch != "launch-2" {
			t.Errorf("GenerateDataKey encryption context = %v, want gauntlet:launch = the launch id", r.Body["EncryptionContext"])
		}
	}
	if generated != 3 {
		t.Errorf("GenerateDataKey calls = %d, want one per Launch call (3)", generated)
	}
	if spec.SlotID != "0/hello/1" || spec.AgentTimeout != 10*time.Minute || spec.Harness != "codex" {
		t.Errorf("spec override = %+v", spec)
	}
	raw, _ := json.Marshal(srv.requests)
	if strings.Contains(string(raw), "sk-live-do-not-leak") {
		t.Fatal("a secret value reached the ECS API")
	}
	for _, form := range []string{base64.StdEncoding.EncodeToString(dataKey), base64.RawURLEncoding.EncodeToString(dataKey),
		hex.EncodeToString(dataKey), string(dataKey)} {
		if strings.Contains(string(raw), form) {
			t.Fatal("the plaintext data key reached the ECS API")
		}
	}
	if bytes.Contains(raw, dataKey) {
		t.Fatal("the plaintext data key bytes reached the ECS API")
	}
}

func TestLaunchWithSecretsNeedsADataKeySource(t *testing.T) {
	d, err := ecssandbox.New(nil, ecssandbox.Config{
		Cluster: "c", Subnets: []string{"s"}, ExecutionRoleARN: "e", RunnerImage: "r", Sealed: newSealedStore(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Launch(context.Background(), testSpec("launch-1"))
	if err == nil || !strings.Contains(err.Error(), "GAUNTLET_SANDBOX_KMS_KEY") {
		t.Errorf("Launch with secrets and no data-key source: err %v, want one naming GAUNTLET_SANDBOX_KMS_KEY", err)
	}
}

func TestStopAndList(t *testing.T) {
	d, srv, _ := newDriver(t)
	ctx := context.Background()
	if err := d.Stop(ctx, "arn:aws:ecs:us-east-1:111122223333:task/sandboxes/a"); err != nil {
		t.Fatal(err)
	}
	if got := srv.requests["StopTask"][0]["cluster"]; got != "arn:aws:ecs:us-east-1:111122223333:cluster/sandboxes" {
		t.Errorf("StopTask cluster = %v", got)
	}
	hs, err := d.List(ctx, "run1")
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox.Handle{{ID: "arn:aws:ecs:us-east-1:111122223333:task/sandboxes/a", LaunchID: "L1", RunID: "run1", SlotID: "0/hello/1", StartedAt: time.Unix(1767225600, 0)}}
	if diff := cmp.Diff(want, hs, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if got := srv.requests["ListTasks"][0]["startedBy"]; got != "run1" {
		t.Errorf("ListTasks startedBy = %v", got)
	}
}

func TestCompletionFromEvent(t *testing.T) {
	raw, err := os.ReadFile("../../../events/grader.json")
	if err != nil {
		t.Fatal(err)
	}
	var base events.CloudWatchEvent
	if err := json.Unmarshal(raw, &base); err != nil {
		t.Fatal(err)
	}
	withDetail := func(edit func(map[string]any)) events.CloudWatchEvent {
		var d map[string]any
		if err := json.Unmarshal(base.Detail, &d); err != nil {
			t.Fatal(err)
		}
		edit(d)
		ev := base
		ev.Detail, _ = json.Marshal(d)
		return ev
	}
	tests := []struct {
		name       string
		ev         events.CloudWatchEvent
		wantReason sandbox.StopReason
		wantExit   int
		wantErr    bool
	}{
		{name: "sample exited cleanly", ev: base, wantReason: sandbox.Exited},
		{name: "runner infra exit", ev: withDetail(func(d map[string]any) {
			d["containers"].([]any)[1].(map[string]any)["exitCode"] = 70
		}), wantReason: sandbox.Exited, wantExit: 70},
		{name: "failed to start", ev: withDetail(func(d map[string]any) {
			d["stopCode"] = "TaskFailedToStart"
			d["containers"].([]any)[1].(map[string]any)["exitCode"] = nil
		}), wantReason: sandbox.FailedToStart},
		{name: "user initiated", ev: withDetail(func(d map[string]any) { d["stopCode"] = "UserInitiated" }), wantReason: sandbox.UserStopped},
		{name: "spot interruption", ev: withDetail(func(d map[string]any) { d["stopCode"] = "SpotInterruption" }), wantReason: sandbox.Lost},
		{name: "still running", ev: withDetail(func(d map[string]any) { d["lastStatus"] = "RUNNING" }), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ecssandbox.CompletionFromEvent(tt.ev)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("CompletionFromEvent = %+v, want an error", c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Reason != tt.wantReason || c.ExitCode != tt.wantExit {
				t.Errorf("reason, exit = %s, %d; want %s, %d", c.Reason, c.ExitCode, tt.wantReason, tt.wantExit)
			}
			if c.RunID == "" || c.SlotID == "" || c.LaunchID == "" || c.SandboxID == "" {
				t.Errorf("completion lost its slot identity: %+v", c)
			}
		})
	}
}
