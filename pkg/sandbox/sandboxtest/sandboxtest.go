// Package sandboxtest is the contract suite of the sandbox port.
//
// It is the contract suite of the sandbox port: Run checks
// any sandbox.Driver against the behaviour the pipeline relies on, the way
// fstest.TestFS checks a file system.
//
// Each case runs in parallel on a fresh driver (newHarness is called per
// case) with its own completions queue and blob store: launch and outputs,
// idempotent launch, environment, task files, timeout kill, stop, exit
// status and no network. A driver that cannot run workloads on this machine
// (a fake of a remote service) says so in Harness.RunsWorkloads, and the
// cases that need a workload are skipped by name, so the gap shows.
package sandboxtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
	"github.com/gauntlet-bench/gauntlet/pkg/fsblob"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/queue"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
)

// Env is what the suite gives a driver under test: where it emits
// completions and stores outputs.
type Env struct {
	Completions *Completions
	Blobs       blob.Store
}

// Harness is one driver under test.
type Harness struct {
	Driver sandbox.Driver
	// Task is a task whose verifier passes when /app/answer.txt holds
	// "gauntlet" and whose instruction is Instruction.
	Task        sandbox.TaskRef
	Instruction string
	// BadTask is a reference the driver accepts but the runner cannot read
	// (the runner exits with sandbox.ExitInfra).
	BadTask sandbox.TaskRef
	// RunsWorkloads is false for a driver whose sandboxes run nothing here.
	RunsWorkloads bool
}

// CompletionTimeout bounds the wait for one completion.
const CompletionTimeout = 60 * time.Second

// Run runs the suite; newHarness builds a fresh driver for each case.
func Run(t *testing.T, newHarness func(t *testing.T, env Env) Harness) {
	cases := []struct {
		name     string
		workload bool
		fn       func(t *testing.T, c *suiteCase)
	}{
		{"LaunchStoresOutputs", true, testLaunchStoresOutputs},
		{"LaunchIsIdempotent", false, testLaunchIsIdempotent},
		{"Env", true, testEnv},
		{"TaskFiles", true, testTaskFiles},
		{"TimeoutKillsAgent", true, testTimeoutKillsAgent},
		{"Stop", true, testStop},
		{"ExitStatus", true, testExitStatus},
		{"NoNetwork", true, testNoNetwork},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			blobs, err := fsblob.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			env := Env{Completions: NewCompletions(), Blobs: blobs}
			h := newHarness(t, env)
			if tc.workload && !h.RunsWorkloads {
				t.Skipf("%s needs a running workload; this driver's sandboxes run nothing here", tc.name)
			}
			tc.fn(t, &suiteCase{Harness: h, env: env})
		})
	}
}

type suiteCase struct {
	Harness
	env Env
}

func (c *suiteCase) spec(launch, command string) sandbox.Spec {
	return sandbox.Spec{
		LaunchID: launch, Workspace: "ws", RunID: "run-" + launch, SlotID: "0/task/1", Generation: 1,
		Task: c.Task, Harness: "command", Command: command, Network: harbor.NetworkNone,
		AgentTimeout: 60 * time.Second, VerifierTimeout: 30 * time.Second,
		Output: sandbox.Output{Prefix: "runs/run-" + launch + "/slots/0/g1/", Expires: time.Now().Add(time.Hour)},
	}
}

func (c *suiteCase) launch(t *testing.T, s sandbox.Spec) sandbox.Handle {
	t.Helper()
	h, err := c.Driver.Launch(context.Background(), s)
	if err != nil {
		t.Fatalf("Launch(%s): %v", s.LaunchID, err)
	}
	if h.ID == "" || h.LaunchID != s.LaunchID || h.RunID != s.RunID || h.SlotID != s.SlotID {
		t.Fatalf("Launch(%s) = %+v, want an id and the spec's launch, run and slot", s.LaunchID, h)
	}
	return h
}

// finish waits for the completion of h and checks it names the launch.
func (c *suiteCase) finish(t *testing.T, s sandbox.Spec, h sandbox.Handle) sandbox.Completion {
	t.Helper()
	got := c.env.Completions.Next(t, CompletionTimeout)
	if got.SandboxID != h.ID || got.LaunchID != s.LaunchID || got.RunID != s.RunID || got.SlotID != s.SlotID ||
		got.Workspace != s.Workspace || got.Generation != s.Generation {
		t.Fatalf("completion %+v does not name launch %+v", got, h)
	}
	return got
}

func (c *suiteCase) result(t *testing.T, s sandbox.Spec) harbor.TrialResult {
	t.Helper()
	r, err := harbor.DecodeTrialResult(bytes.NewReader(c.blob(t, s.Output.Prefix+harbor.TrialResultFile)))
	if err != nil {
		t.Fatalf("result.json: %v", err)
	}
	return r
}

func (c *suiteCase) blob(t *testing.T, key string) []byte {
	t.Helper()
	rc, err := c.env.Blobs.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("blob %s: %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read blob %s: %v", key, err)
	}
	return b
}

func (c *suiteCase) artifact(t *testing.T, s sandbox.Spec, rel string) string {
	t.Helper()
	return string(c.blob(t, s.Output.Prefix+"artifacts/"+rel))
}

func testLaunchStoresOutputs(t *testing.T, c *suiteCase) {
	s := c.spec("outputs", "echo gauntlet > /app/answer.txt")
	h := c.launch(t, s)
	got := c.finish(t, s, h)
	if got.Reason != sandbox.Exited || got.ExitCode != sandbox.ExitOK {
		t.Errorf("completion reason %s exit %d, want %s %d", got.Reason, got.ExitCode, sandbox.Exited, sandbox.ExitOK)
	}
	if r, ok := c.result(t, s).Reward(); !ok || r != 1 {
		t.Errorf("reward = %v, %v; want 1 (the agent wrote the answer)", r, ok)
	}
	if live, err := c.Driver.List(context.Background(), s.RunID); err != nil || len(live) != 0 {
		t.Errorf("List after the end = %v, %v; want none", live, err)
	}
}

func testLaunchIsIdempotent(t *testing.T, c *suiteCase) {
	s := c.spec("twice", "sleep 300")
	first := c.launch(t, s)
	again := c.launch(t, s)
	if again.ID != first.ID {
		t.Errorf("second Launch of %s = %s, want the first sandbox %s adopted", s.LaunchID, again.ID, first.ID)
	}
	other := c.spec("other", "sleep 300")
	if h := c.launch(t, other); h.ID == first.ID {
		t.Errorf("another launch id got the same sandbox %s", h.ID)
	}
	live, err := c.Driver.List(context.Background(), s.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(live, func(h sandbox.Handle) bool { return h.ID == first.ID }) {
		t.Errorf("List(%s) = %v, want it to hold %s", s.RunID, live, first.ID)
	}
	for _, h := range []string{first.ID} {
		if err := c.Driver.Stop(context.Background(), h); err != nil {
			t.Errorf("Stop(%s): %v", h, err)
		}
	}
}

func testEnv(t *testing.T, c *suiteCase) {
	s := c.spec("env", `printf %s "$SANDBOXTEST_VALUE" > /logs/agent/env.txt; echo gauntlet > /app/answer.txt`)
	s.Env = map[string]string{"SANDBOXTEST_VALUE": "v-42 with spaces"}
	c.finish(t, s, c.launch(t, s))
	if got := c.artifact(t, s, "agent/env.txt"); got != "v-42 with spaces" {
		t.Errorf("agent saw SANDBOXTEST_VALUE = %q, want the spec's value", got)
	}
}

func testTaskFiles(t *testing.T, c *suiteCase) {
	s := c.spec("files", `cp /logs/agent/instruction.md /logs/agent/copy.md; echo gauntlet > /app/answer.txt`)
	c.finish(t, s, c.launch(t, s))
	if got := c.artifact(t, s, "agent/copy.md"); strings.TrimSpace(got) != strings.TrimSpace(c.Instruction) {
		t.Errorf("the agent read instruction %q, want the task's %q", got, c.Instruction)
	}
}

func testTimeoutKillsAgent(t *testing.T, c *suiteCase) {
	s := c.spec("timeout", "echo gauntlet > /app/answer.txt; sleep 1000.4343")
	s.AgentTimeout = 500 * time.Millisecond
	got := c.finish(t, s, c.launch(t, s))
	if got.Reason != sandbox.Exited || got.ExitCode != sandbox.ExitOK {
		t.Errorf("completion reason %s exit %d, want the trial to end normally", got.Reason, got.ExitCode)
	}
	r := c.result(t, s)
	if r.ExceptionInfo == nil || r.ExceptionInfo.ExceptionType != harbor.ExceptionAgentTimeout {
		t.Errorf("exception = %+v, want %s", r.ExceptionInfo, harbor.ExceptionAgentTimeout)
	}
}

func testStop(t *testing.T, c *suiteCase) {
	s := c.spec("stop", "sleep 300")
	h := c.launch(t, s)
	if err := c.Driver.Stop(context.Background(), h.ID); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	got := c.finish(t, s, h)
	if got.Reason != sandbox.UserStopped {
		t.Errorf("completion reason %s, want %s", got.Reason, sandbox.UserStopped)
	}
	if live, err := c.Driver.List(context.Background(), s.RunID); err != nil || len(live) != 0 {
		t.Errorf("List after Stop = %v, %v; want none", live, err)
	}
	if err := c.Driver.Stop(context.Background(), h.ID); err != nil {
		t.Errorf("Stop of an ended sandbox: %v, want nil", err)
	}
}

func testExitStatus(t *testing.T, c *suiteCase) {
	s := c.spec("exit", "true")
	s.Task = c.BadTask
	got := c.finish(t, s, c.launch(t, s))
	if got.Reason != sandbox.Exited || got.ExitCode != sandbox.ExitInfra {
		t.Errorf("completion reason %s exit %d, want %s with the runner's %d", got.Reason, got.ExitCode, sandbox.Exited, sandbox.ExitInfra)
	}
}

func testNoNetwork(t *testing.T, c *suiteCase) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	s := c.spec("net", `if (exec 3<>/dev/tcp/127.0.0.1/`+port+`) 2>/dev/null; then echo open; else echo blocked; fi > /logs/agent/net.txt
echo gauntlet > /app/answer.txt`)
	c.finish(t, s, c.launch(t, s))
	if got := strings.TrimSpace(c.artifact(t, s, "agent/net.txt")); got != "blocked" {
		t.Errorf("a no-network sandbox reached the host's loopback: %q", got)
	}
}

// Completions is a queue.Queue that hands every sent completion to the
// suite, for drivers that emit completions to a queue.
type Completions struct {
	ch chan []byte
}

var _ queue.Queue = (*Completions)(nil)

// NewCompletions returns an empty completions queue.
func NewCompletions() *Completions { return &Completions{ch: make(chan []byte, 64)} }

// Send implements queue.Queue.
func (q *Completions) Send(_ context.Context, msgs ...queue.Outgoing) error {
	for _, m := range msgs {
		q.ch <- m.Body
	}
	return nil
}

// Receive implements queue.Queue; the suite reads with Next instead.
func (q *Completions) Receive(context.Context, int, time.Duration, time.Duration) ([]queue.Message, error) {
	return nil, nil
}

// Delete implements queue.Queue.
func (q *Completions) Delete(context.Context, string) error { return nil }

// ChangeVisibility implements queue.Queue.
func (q *Completions) ChangeVisibility(context.Context, string, time.Duration) error { return nil }

// Deliver hands a completion to the suite directly (a driver whose
// completions arrive as events, such as ECS's).
func (q *Completions) Deliver(c sandbox.Completion) {
	b, _ := json.Marshal(c) // a completion always encodes
	q.ch <- b
}

// Next returns the next completion, failing t after timeout.
func (q *Completions) Next(t *testing.T, timeout time.Duration) sandbox.Completion {
	t.Helper()
	select {
	case body := <-q.ch:
		var c sandbox.Completion
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatalf("completion %s: %v", body, err)
		}
		return c
	case <-time.After(timeout):
		t.Fatalf("no completion within %s", timeout)
	}
	return sandbox.Completion{}
}
