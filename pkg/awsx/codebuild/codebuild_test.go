package codebuild_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/codebuild"
	"github.com/aws/aws-sdk-go-v2/service/ecr"

	cb "github.com/gauntlet-bench/gauntlet/pkg/awsx/codebuild"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
)

const (
	repoURI = "111122223333.dkr.ecr.us-east-1.amazonaws.com/gauntlet-dev-task-images"
	digest  = "sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12"
	key     = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// fakeAWS speaks CodeBuild's and ECR's JSON 1.1 protocols (told apart by
// X-Amz-Target) to the real SDK clients. A started build completes on its
// second poll with the configured status, pushing the image when it
// succeeds.
type fakeAWS struct {
	mu      sync.Mutex
	calls   map[string][]map[string]any
	status  string // final status of builds
	polls   map[string]int
	tags    map[string]string // tag → digest
	builds  map[string]string // idempotency token → build id
	message string
}

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndex(target, ".")+1:]
	var req map[string]any
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op] = append(f.calls[op], req)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	write := func(v any) { _ = json.NewEncoder(w).Encode(v) }
	switch op {
	case "DescribeImages":
		tag := req["imageIds"].([]any)[0].(map[string]any)["imageTag"].(string)
		d, ok := f.tags[tag]
		if !ok {
			w.WriteHeader(400)
			write(map[string]any{"__type": "ImageNotFoundException", "message": "The image with imageId {imageTag:'" + tag + "'} does not exist"})
			return
		}
		write(map[string]any{"imageDetails": []any{map[string]any{"imageDigest": d, "imageTags": []string{tag}}}})
	case "StartBuild":
		token := req["idempotencyToken"].(string)
		id, ok := f.builds[token]
		if !ok {
			id = "gauntlet-dev-images:" + token[:8]
			f.builds[token] = id
		}
		write(map[string]any{"build": map[string]any{"id": id, "buildStatus": "IN_PROGRESS"}})
	case "BatchGetBuilds":
		id := req["ids"].([]any)[0].(string)
		f.polls[id]++
		if f.polls[id] < 2 {
			write(map[string]any{"builds": []any{map[string]any{"id": id, "buildStatus": "IN_PROGRESS", "buildComplete": false}}})
			return
		}
		if f.status == "SUCCEEDED" {
			start := f.calls["StartBuild"][len(f.calls["StartBuild"])-1]
			tag := start["environmentVariablesOverride"].([]any)[0].(map[string]any)["value"].(string)
			f.tags[tag] = digest
		}
		write(map[string]any{"builds": []any{map[string]any{"id": id, "buildStatus": f.status, "buildComplete": true, "timeoutInMinutes": 30,
			"phases": []any{map[string]any{"phaseType": "BUILD", "phaseStatus": f.status,
				"contexts": []any{map[string]any{"message": f.message}}}},
			"logs": map[string]any{"deepLink": "https://console.aws.amazon.com/cloudwatch/build-log"}}}})
	case "StopBuild":
		write(map[string]any{"build": map[string]any{"id": req["id"]}})
	default:
		w.WriteHeader(400)
		write(map[string]any{"__type": "InvalidInputException", "message": "unsupported " + op})
	}
}

type memContexts struct {
	mu   sync.Mutex
	objs map[string][]byte
}

func (m *memContexts) Put(_ context.Context, key string, r io.Reader) error {
	b, err := io.ReadAll(r)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objs[key] = b
	return err
}

func newBuilder(t *testing.T, status string, opts ...func(*cb.Config)) (*cb.Builder, *fakeAWS, *memContexts) {
	t.Helper()
	f := &fakeAWS{calls: map[string][]map[string]any{}, status: status, polls: map[string]int{}, tags: map[string]string{}, builds: map[string]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	creds := credentials.NewStaticCredentialsProvider("test", "test", "")
	cbc := codebuild.New(codebuild.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: creds})
	ecrc := ecr.New(ecr.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: creds})
	store := &memContexts{objs: map[string][]byte{}}
	cfg := cb.Config{
		Project: "gauntlet-dev-images", Repository: "gauntlet-dev-task-images", RepositoryURI: repoURI,
		Bucket: "gauntlet-dev-artifacts", Contexts: store, Poll: time.Millisecond, Wait: time.Minute,
	}
	for _, o := range opts {
		o(&cfg)
	}
	b, err := cb.New(cbc, ecrc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b, f, store
}

func request(t *testing.T) benchsync.BuildRequest {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM python:3.13-slim-bookworm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "setup.sh"), []byte("echo hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return benchsync.BuildRequest{Key: key, Task: "fix-git", ContextDir: dir,
		Dockerfile: []byte("FROM python@" + digest + "\n"), Log: &bytes.Buffer{}}
}

// TestBuildPushesOnceByBuildKey: the first sync builds the pinned context
// and records the pushed digest; a redelivered sync finds the build key's
// tag and builds nothing.
func TestBuildPushesOnceByBuildKey(t *testing.T) {
	b, f, store := newBuilder(t, "SUCCEEDED")
	ctx := context.Background()
	ref, err := b.Build(ctx, request(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := repoURI + "@" + digest; ref != want {
		t.Fatalf("Build = %s, want %s", ref, want)
	}
	start := f.calls["StartBuild"][0]
	if start["sourceLocationOverride"] != "gauntlet-dev-artifacts/"+cb.ContextKey(key) || start["sourceTypeOverride"] != "S3" || start["idempotencyToken"] != key {
		t.Errorf("StartBuild = %v", start)
	}
	files := unzip(t, store.objs[cb.ContextKey(key)])
	if files["Dockerfile"] != "FROM python@"+digest+"\n" || files["setup.sh"] != "echo hi\n" {
		t.Errorf("uploaded context = %v, want the pinned Dockerfile and the context's files", files)
	}
	again, err := b.Build(ctx, request(t))
	if err != nil || again != ref {
		t.Fatalf("redelivered Build = %s, %v; want %s", again, err, ref)
	}
	if n := len(f.calls["StartBuild"]); n != 1 {
		t.Fatalf("StartBuild called %d times, want once per build key", n)
	}
}

// TestBuildFailureNamesTaskAndCause: a failed build is an error naming the
// task, the build and the failing phase, and leaves no image recorded.
func TestBuildFailureNamesTaskAndCause(t *testing.T) {
	b, f, _ := newBuilder(t, "FAILED")
	f.message = "Error while executing command: docker build. Reason: exit status 100"
	req := request(t)
	_, err := b.Build(context.Background(), req)
	if err == nil {
		t.Fatal("Build of a failing Dockerfile succeeded")
	}
	for _, want := range []string{"fix-git", "ended FAILED", "BUILD FAILED", "exit status 100", "build-log"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !strings.Contains(req.Log.(*bytes.Buffer).String(), "exit status 100") {
		t.Errorf("build log %q lacks the failure", req.Log.(*bytes.Buffer).String())
	}
}

func TestBuildRejectsABadKey(t *testing.T) {
	b, f, _ := newBuilder(t, "SUCCEEDED")
	req := request(t)
	req.Key = "../x"
	if _, err := b.Build(context.Background(), req); err == nil || !strings.Contains(err.Error(), "build key") {
		t.Fatalf("err = %v, want the build key named", err)
	}
	if len(f.calls) != 0 {
		t.Fatalf("AWS called for a bad key: %v", f.calls)
	}
}

func unzip(t *testing.T, zipped []byte) map[string]string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, zf := range zr.File {
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		files[zf.Name] = string(b)
	}
	return files
}

// TestBuildPullsBasesThroughTheMirror: the Dockerfile CodeBuild builds
// names each base by the mirror BaseRef gives (the ECR pull-through
// prefix), keeping the digest the build key was derived from; a base that
// is not pinned is refused before anything is uploaded or started.
func TestBuildPullsBasesThroughTheMirror(t *testing.T) {
	mirror := "111122223333.dkr.ecr.us-east-1.amazonaws.com/gauntlet-dev-dockerhub"
	b, _, store := newBuilder(t, "SUCCEEDED", func(c *cb.Config) {
		c.BaseRef = func(pinned string) string {
			return mirror + "/" + strings.TrimPrefix(pinned, "docker.io/")
		}
	})
	req := request(t)
	req.Dockerfile = []byte("FROM docker.io/library/python@" + digest + " AS base\nRUN true\nFROM base\nWORKDIR /app\n")
	if _, err := b.Build(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	want := "FROM " + mirror + "/library/python@" + digest + " AS base\nRUN true\nFROM base\nWORKDIR /app\n"
	if got := unzip(t, store.objs[cb.ContextKey(key)])["Dockerfile"]; got != want {
		t.Errorf("built Dockerfile =\n%s\nwant\n%s", got, want)
	}

	b2, f2, store2 := newBuilder(t, "SUCCEEDED")
	req.Dockerfile = []byte("FROM python:3.13-slim\n")
	if _, err := b2.Build(context.Background(), req); err == nil || !strings.Contains(err.Error(), "line 1: FROM python:3.13-slim is not pinned") {
		t.Fatalf("Build of an unpinned base: err = %v, want the line named", err)
	}
	if len(f2.calls["StartBuild"]) != 0 || len(store2.objs) != 0 {
		t.Errorf("an unpinned base started a build (%v) or stored a context (%d)", f2.calls["StartBuild"], len(store2.objs))
	}
}

// TestBuildRunsOnAcrossDeliveries: with no wait the builder starts the
// build and answers BuildRunning with its id; a later delivery handing the
// id back finds it still running, then finished, and gets the pushed
// image — one StartBuild in all, with the task's build timeout as
// CodeBuild's own.
func TestBuildRunsOnAcrossDeliveries(t *testing.T) {
	b, f, _ := newBuilder(t, "SUCCEEDED", func(c *cb.Config) { c.Wait = 0 })
	ctx := context.Background()
	req := request(t)
	req.Timeout = 90 * time.Second
	_, err := b.Build(ctx, req)
	var running *benchsync.BuildRunning
	if !errors.As(err, &running) || running.Handle == "" {
		t.Fatalf("first Build: err = %v, want BuildRunning with the build id", err)
	}
	if got := f.calls["StartBuild"][0]["timeoutInMinutesOverride"]; got != float64(5) {
		t.Errorf("StartBuild timeoutInMinutesOverride = %v, want 5 (90 s rounded up to CodeBuild's minimum)", got)
	}
	req.Running = running.Handle
	_, err = b.Build(ctx, req) // first poll: still in progress
	var again *benchsync.BuildRunning
	if !errors.As(err, &again) || again.Handle != running.Handle {
		t.Fatalf("Build of the running build: err = %v, want BuildRunning %s", err, running.Handle)
	}
	ref, err := b.Build(ctx, req)
	if err != nil || ref != repoURI+"@"+digest {
		t.Fatalf("Build of the finished build = %q, %v; want %s@%s", ref, err, repoURI, digest)
	}
	if n := len(f.calls["StartBuild"]); n != 1 {
		t.Errorf("StartBuild called %d times across deliveries, want 1", n)
	}
}

// TestBuildTimeoutIsCodeBuilds: a build CodeBuild stopped at its timeout
// is an error wrapping benchsync.ErrBuildTimedOut that names the limit.
func TestBuildTimeoutIsCodeBuilds(t *testing.T) {
	b, _, _ := newBuilder(t, "TIMED_OUT")
	_, err := b.Build(context.Background(), request(t))
	if !errors.Is(err, benchsync.ErrBuildTimedOut) || !strings.Contains(err.Error(), "exceeded its 30 min limit") {
		t.Fatalf("err = %v, want ErrBuildTimedOut naming 30 min", err)
	}
}

func TestTimeoutMinutes(t *testing.T) {
	for d, want := range map[time.Duration]int32{0: 0, time.Second: 5, 5 * time.Minute: 5, 5*time.Minute + time.Second: 6, 90 * time.Minute: 90, 100 * time.Hour: 2160} {
		if got := cb.TimeoutMinutes(d); got != want {
			t.Errorf("TimeoutMinutes(%s) = %d, want %d", d, got, want)
		}
	}
}

// TestStopBuildsStopsEachBuild: the builds a removed benchmark's parked
// sync names are stopped through CodeBuild's StopBuild, one call each.
func TestStopBuildsStopsEachBuild(t *testing.T) {
	b, f, _ := newBuilder(t, "SUCCEEDED", func(c *cb.Config) { c.Wait = 0 })
	ctx := context.Background()
	_, err := b.Build(ctx, request(t))
	var running *benchsync.BuildRunning
	if !errors.As(err, &running) {
		t.Fatalf("Build: %v, want BuildRunning", err)
	}
	if err := b.StopBuilds(ctx, []string{running.Handle, "gauntlet-dev-images:other"}); err != nil {
		t.Fatalf("StopBuilds: %v", err)
	}
	var stopped []string
	for _, c := range f.calls["StopBuild"] {
		stopped = append(stopped, c["id"].(string))
	}
	if want := []string{running.Handle, "gauntlet-dev-images:other"}; strings.Join(stopped, ",") != strings.Join(want, ",") {
		t.Errorf("StopBuild ids = %v, want %v", stopped, want)
	}
}
