package localsandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

var runnerBinary string

func TestMain(m *testing.M) {
	if dataDir := os.Getenv(crashHelperEnv); dataDir != "" {
		os.Exit(runCrashHelper(dataDir))
	}
	dir, err := os.MkdirTemp("", "localsandbox-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runnerBinary = filepath.Join(dir, "sandbox-runner")
	build := exec.Command("go", "build", "-o", runnerBinary, "github.com/gauntlet-bench/gauntlet/cmd/sandbox-runner")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as make build makes it
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build sandbox-runner:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type fixture struct {
	driver      *Driver
	blobs       *memBlobs
	completions *chanQueue
	dataDir     string
	images      *cachedImages
}

// testImageRef is the pinned reference the fixture's image cache holds.
const testImageRef = "127.0.0.1:5000/test/minbase@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// cachedImages is an image cache holding one real unpacked rootfs (the test
// rootfs) under testImageRef; any other reference is a cache miss. It
// counts holds and releases.
type cachedImages struct {
	dir string

	mu              sync.Mutex
	holds, released int
}

func (c *cachedImages) CachedRootfs(_ context.Context, ref string) (Rootfs, error) {
	if ref != testImageRef {
		return Rootfs{}, fmt.Errorf("image %s is not in the cache (prepared at sync)", ref)
	}
	c.mu.Lock()
	c.holds++
	c.mu.Unlock()
	return Rootfs{Dir: c.dir, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, WorkingDir: "/app",
		Release: func() { c.mu.Lock(); c.released++; c.mu.Unlock() }}, nil
}

func (c *cachedImages) counts() (holds, released int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holds, c.released
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	return newFixtureOn(t, t.TempDir())
}

// newFixtureOn is newFixture on the data dir dataDir.
func newFixtureOn(t *testing.T, dataDir string) fixture {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatalf("bubblewrap is required for the sandbox tests: apt-get install bubblewrap (%v)", err)
	}
	f := fixture{blobs: &memBlobs{objects: map[string][]byte{}}, completions: &chanQueue{ch: make(chan []byte, 16)}, dataDir: dataDir,
		images: &cachedImages{dir: testrootfs.Dir(t)}}
	d, err := New(Config{DataDir: f.dataDir, RunnerPath: runnerBinary, Blobs: f.blobs, Completions: f.completions, StopGrace: 500 * time.Millisecond,
		Images: f.images})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	f.driver = d
	return f
}

func taskDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(taskDirPath)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// taskDirPath is the runner's fixture task, from this package's dir.
const taskDirPath = "../runner/testdata/task"

func spec(t *testing.T, launch, harness, command string) sandbox.Spec {
	return specIn(taskDir(t), launch, harness, command)
}

func specIn(taskDir, launch, harness, command string) sandbox.Spec {
	return sandbox.Spec{
		LaunchID: launch, Workspace: "ws", RunID: "run-1", SlotID: "slot-" + launch, Generation: 2,
		Task: sandbox.TaskRef{Name: "task", Dir: taskDir}, Harness: harness, Command: command, Image: testImageRef,
		Network: harbor.NetworkNone, AgentTimeout: 60 * time.Second, VerifierTimeout: 30 * time.Second,
		Output: sandbox.Output{Prefix: "runs/run-1/slots/" + launch + "/g2/"},
	}
}

func (f fixture) nextCompletion(t *testing.T) sandbox.Completion {
	t.Helper()
	select {
	case body := <-f.completions.ch:
		var c sandbox.Completion
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatalf("completion %s: %v", body, err)
		}
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("no completion within 30s")
	}
	return sandbox.Completion{}
}

func TestLaunchRunsTheSlotAndStoresItsOutputs(t *testing.T) {
	f := newFixture(t)
	s := spec(t, "a", "oracle", "")
	h, err := f.driver.Launch(context.Background(), s)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	c := f.nextCompletion(t)
	want := sandbox.Completion{SandboxID: h.ID, LaunchID: "a", Workspace: "ws", RunID: "run-1", SlotID: "slot-a",
		Generation: 2, Reason: sandbox.Exited, ExitCode: sandbox.ExitOK}
	if diff := cmp.Diff(want, c, ignoreTimes); diff != "" {
		t.Errorf("completion (-want +got):\n%s", diff)
	}
	tr, err := harbor.DecodeTrialResult(bytes.NewReader(f.blobs.get(t, "runs/run-1/slots/a/g2/result.json")))
	if err != nil {
		t.Fatalf("result.json: %v", err)
	}
	if r, ok := tr.Reward(); !ok || r != 1 {
		t.Errorf("oracle reward = %v, %v; want 1", r, ok)
	}
	keys := f.blobs.keys()
	for _, k := range []string{"artifacts/runner.log", "artifacts/runner-output.log", "artifacts/agent/instruction.md", "artifacts/verifier/reward.txt"} {
		if !slices.Contains(keys, "runs/run-1/slots/a/g2/"+k) {
			t.Errorf("blob %s missing; have %v", k, keys)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(f.dataDir, "sandboxes")); len(entries) != 0 {
		t.Errorf("sandbox dirs left behind: %v", entries)
	}
	// The sandbox stays listed (held) until its completion is sent, and
	// its image is released as it is forgotten: both follow the
	// completion the test received by a moment.
	waitFor(t, func() bool {
		live, _ := f.driver.List(context.Background(), "run-1")
		return len(live) == 0
	})
	waitFor(t, func() bool { _, released := f.images.counts(); return released == 1 })
	if holds, released := f.images.counts(); holds != 1 || released != 1 {
		t.Errorf("image cache holds = %d, releases = %d; want 1 and 1", holds, released)
	}
	if log := string(f.blobs.get(t, "runs/run-1/slots/a/g2/artifacts/runner.log")); !strings.Contains(log, "image="+testImageRef) {
		t.Errorf("runner.log does not name the image:\n%s", log)
	}
}

func TestLaunchWithoutACachedImageFailsToStart(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ launch, image, want string }{
		{launch: "no-image", image: "", want: "no fallback to the host's root filesystem"},
		{launch: "miss", image: "127.0.0.1:5000/other@sha256:ffff", want: "not in the cache"},
	} {
		s := spec(t, tc.launch, "nop", "")
		s.Image = tc.image
		if _, err := f.driver.Launch(context.Background(), s); err != nil {
			t.Fatalf("Launch = %v, want the handle and a FailedToStart completion", err)
		}
		c := f.nextCompletion(t)
		if c.Reason != sandbox.FailedToStart || !strings.Contains(c.Message, tc.want) {
			t.Errorf("%s: completion = %+v, want %s saying %q", tc.launch, c, sandbox.FailedToStart, tc.want)
		}
	}
}

func TestNewBwrapNeedsAnImageStore(t *testing.T) {
	_, err := New(Config{DataDir: t.TempDir(), RunnerPath: runnerBinary, Blobs: &memBlobs{}, Completions: &chanQueue{}})
	if err == nil || !strings.Contains(err.Error(), "Images is nil") {
		t.Errorf("New(bwrap, no Images) = %v, want an error naming Images", err)
	}
}

var ignoreTimes = cmpIgnoreFields()

func cmpIgnoreFields() cmp.Option {
	return cmp.FilterPath(func(p cmp.Path) bool {
		name := p.Last().String()
		return name == ".StartedAt" || name == ".StoppedAt" || name == ".Message"
	}, cmp.Ignore())
}

func TestStopKillsTheWholeSandbox(t *testing.T) {
	f := newFixture(t)
	const marker = "1000.5151"
	s := spec(t, "b", "command", "sleep "+marker+" & sleep "+marker)
	h, err := f.driver.Launch(context.Background(), s)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	waitFor(t, func() bool { return len(processesWithArg(t, "sleep "+marker)) >= 2 })
	if live, _ := f.driver.List(context.Background(), "run-1"); len(live) != 1 || live[0].ID != h.ID {
		t.Errorf("List while running = %v, want [%s]", live, h.ID)
	}
	if err := f.driver.Stop(context.Background(), h.ID); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	c := f.nextCompletion(t)
	if c.Reason != sandbox.UserStopped || c.SandboxID != h.ID {
		t.Errorf("completion = %+v, want %s of %s", c, sandbox.UserStopped, h.ID)
	}
	if pids := processesWithArg(t, marker); len(pids) > 0 {
		t.Errorf("processes of the stopped sandbox still alive: %v", pids)
	}
	if pids := processesWithArg(t, filepath.Join(f.dataDir, "sandboxes")); len(pids) > 0 {
		t.Errorf("runner or bwrap processes still alive: %v", pids)
	}
	if err := f.driver.Stop(context.Background(), h.ID); err != nil {
		t.Errorf("second Stop = %v, want nil", err)
	}
	if err := f.driver.Stop(context.Background(), "local-unknown"); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Stop(unknown) = %v, want ErrNotFound", err)
	}
}

func TestLaunchIsIdempotentPerLaunchID(t *testing.T) {
	f := newFixture(t)
	s := spec(t, "c", "command", "echo started >> /logs/agent/starts; sleep 0.3")
	first, err := f.driver.Launch(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.driver.Launch(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Errorf("second Launch = %+v, want the first handle %+v", second, first)
	}
	f.nextCompletion(t)
	third, err := f.driver.Launch(context.Background(), s)
	if err != nil || third != first {
		t.Errorf("Launch after completion = %+v, %v; want the first handle", third, err)
	}
	select {
	case body := <-f.completions.ch:
		t.Errorf("a second completion arrived: %s", body)
	case <-time.After(500 * time.Millisecond):
	}
	if got := string(f.blobs.get(t, "runs/run-1/slots/c/g2/artifacts/agent/starts")); got != "started\n" {
		t.Errorf("agent starts = %q, want exactly one", got)
	}
}

func TestSecretsReachTheRunnerOnlyThroughItsEnvironment(t *testing.T) {
	f := newFixture(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "platform-credential")
	s := spec(t, "d", "command", `echo "token=${API_TOKEN:-missing} aws=${AWS_SECRET_ACCESS_KEY:-missing}" > /logs/agent/seen.txt`)
	s.Secrets = map[string]secret.Value{"API_TOKEN": "tok-123"}
	if _, err := f.driver.Launch(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	f.nextCompletion(t)
	if got := string(f.blobs.get(t, "runs/run-1/slots/d/g2/artifacts/agent/seen.txt")); got != "token=tok-123 aws=missing\n" {
		t.Errorf("agent saw %q, want its secret and no platform credential", got)
	}
	for _, k := range f.blobs.keys() {
		if k != "runs/run-1/slots/d/g2/artifacts/agent/seen.txt" && bytes.Contains(f.blobs.get(t, k), []byte("tok-123")) {
			t.Errorf("blob %s contains the secret value", k)
		}
	}
}

func TestLaunchFailureStillCompletes(t *testing.T) {
	f := newFixture(t)
	// The runner binary disappears after New checked it.
	broken := filepath.Join(t.TempDir(), "runner")
	if err := os.WriteFile(broken, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.driver.cfg.RunnerPath = broken
	h, err := f.driver.Launch(context.Background(), spec(t, "e", "nop", ""))
	if err != nil {
		t.Fatalf("Launch = %v, want the handle and a FailedToStart completion", err)
	}
	c := f.nextCompletion(t)
	if c.Reason != sandbox.FailedToStart || c.SandboxID != h.ID || c.Message == "" {
		t.Errorf("completion = %+v, want %s with a message", c, sandbox.FailedToStart)
	}
}

func TestNewWithoutBubblewrapIsUnavailable(t *testing.T) {
	_, err := New(Config{DataDir: t.TempDir(), RunnerPath: runnerBinary, BwrapPath: "/nonexistent/bwrap",
		Blobs: &memBlobs{}, Completions: &chanQueue{}})
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("New = %v, want ErrUnavailable", err)
	}
	for _, hint := range []string{"apt-get install bubblewrap", "--sandbox=process"} {
		if !strings.Contains(err.Error(), hint) {
			t.Errorf("error %q does not say %q", err, hint)
		}
	}
	if _, err := New(Config{DataDir: t.TempDir(), RunnerPath: runnerBinary, BwrapPath: "/nonexistent/bwrap",
		Isolation: "process", Blobs: &memBlobs{}, Completions: &chanQueue{}}); err != nil {
		t.Errorf("New(process isolation) without bubblewrap = %v, want nil", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		<-tick.C
	}
}

// processesWithArg lists the pids whose command line contains arg.
func processesWithArg(t *testing.T, arg string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || e.Name() == fmt.Sprint(os.Getpid()) {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), arg) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// memBlobs is an in-memory blob.Store for these tests.
type memBlobs struct {
	mu      sync.Mutex
	objects map[string][]byte
}

func (m *memBlobs) Put(_ context.Context, key string, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects[key] = data
	return nil
}

func (m *memBlobs) Get(_ context.Context, key string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.objects[key]
	if !ok {
		return nil, blob.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (m *memBlobs) List(_ context.Context, prefix string) ([]blob.Info, error) {
	var out []blob.Info
	for _, k := range m.keys() {
		if strings.HasPrefix(k, prefix) {
			out = append(out, blob.Info{Key: k, Size: int64(len(m.objects[k]))})
		}
	}
	return out, nil
}

func (m *memBlobs) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, key)
	return nil
}

func (m *memBlobs) keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]string, 0, len(m.objects))
	for k := range m.objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (m *memBlobs) get(t *testing.T, key string) []byte {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.objects[key]
	if !ok {
		t.Fatalf("blob %s missing", key)
	}
	return data
}

// chanQueue is a queue.Queue that hands sent bodies to a channel; the tests
// only read what the driver sends.
type chanQueue struct{ ch chan []byte }

func (q *chanQueue) Send(_ context.Context, msgs ...queue.Outgoing) error {
	for _, m := range msgs {
		q.ch <- m.Body
	}
	return nil
}

func (q *chanQueue) Receive(context.Context, int, time.Duration, time.Duration) ([]queue.Message, error) {
	return nil, errors.New("chanQueue: receive through the channel")
}

func (q *chanQueue) Delete(context.Context, string) error { return nil }

func (q *chanQueue) ChangeVisibility(context.Context, string, time.Duration) error { return nil }
