package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// runnerBinary is cmd/sandbox-runner, built once by TestMain.
var runnerBinary string

func TestMain(m *testing.M) {
	if os.Getenv(scrubChildEnv) == "1" {
		scrubChild()
	}
	// A fuzz worker runs only a fuzz target, which needs no runner binary:
	// building one per worker would stall `make fuzz`.
	if slices.ContainsFunc(os.Args, func(a string) bool { return strings.HasPrefix(a, "-test.fuzzworker") }) {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "runner-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Container isolation runs the binary's helpers as the agent's uid.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runnerBinary = filepath.Join(dir, "sandbox-runner")
	build := exec.Command("go", "build", "-o", runnerBinary, "github.com/gauntlet-bench/gauntlet/cmd/sandbox-runner")
	// Static, as make build makes it: image sandboxes run it inside the image.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build sandbox-runner:", err)
		os.Exit(1)
	}
	code := m.Run()
	benchDocker.stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireBwrap fails (never skips) when bubblewrap is missing: the sandbox
// is the point of these tests.
func requireBwrap(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatalf("bubblewrap is required for the sandbox tests: apt-get install bubblewrap (%v)", err)
	}
}

func fixtureDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("testdata/task")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func baseSpec(t testing.TB, harness string) sandbox.Spec {
	return sandbox.Spec{
		LaunchID: "run-1/slot-1/g0", RunID: "run-1", SlotID: "slot-1",
		Task:    sandbox.TaskRef{Name: "task", Dir: fixtureDir(t)},
		Harness: harness, Model: "acme/model-1", Network: harbor.NetworkNone,
		AgentTimeout: 30 * time.Second, VerifierTimeout: 30 * time.Second,
	}
}

type trialRun struct {
	result harbor.TrialResult
	out    string
}

func runTrial(t *testing.T, spec sandbox.Spec, opts Options) trialRun {
	t.Helper()
	return runTrialWith(t, spec, opts, harness.All())
}

func runTrialWith(t *testing.T, spec sandbox.Spec, opts Options, table []harness.Harness) trialRun {
	t.Helper()
	requireBwrap(t)
	dir := t.TempDir()
	opts.WorkDir, opts.OutDir = filepath.Join(dir, "work"), filepath.Join(dir, "out")
	if opts.Isolation == "" && opts.Image == nil {
		// The fixture task has no image: these tests run on the host's
		// root filesystem, the development mode.
		opts.Isolation = IsolationHostBwrap
	}
	if opts.SelfPath == "" {
		opts.SelfPath = runnerBinary
	}
	tr, err := run(context.Background(), spec, opts, table)
	if err != nil {
		t.Fatalf("Run(%s) error: %v", spec.Harness, err)
	}
	onDisk, err := harbor.ReadTrialResult(filepath.Join(opts.OutDir, "result.json"))
	if err != nil {
		t.Fatalf("read result.json: %v", err)
	}
	if onDisk.ID != tr.ID || onDisk.TrialName != tr.TrialName {
		t.Fatalf("result.json = %+v, Run returned %+v", onDisk, tr)
	}
	return trialRun{result: tr, out: opts.OutDir}
}

func (r trialRun) artifact(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.out, "artifacts", rel))
	if err != nil {
		// Say how the trial ended: a missing artifact is a symptom.
		var logs []string
		_ = filepath.WalkDir(filepath.Join(r.out, "artifacts"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".txt") {
				if b, rerr := os.ReadFile(p); rerr == nil {
					logs = append(logs, p+":\n"+string(b))
				}
			}
			return nil
		})
		t.Fatalf("artifact %s: %v\nresult: exception %+v\n%s", rel, err, r.result.ExceptionInfo, strings.Join(logs, "\n"))
	}
	return string(data)
}

func rewardOf(t *testing.T, tr harbor.TrialResult) float64 {
	t.Helper()
	r, ok := tr.Reward()
	if !ok {
		t.Fatalf("result has no reward; exception: %+v", tr.ExceptionInfo)
	}
	return r
}

func TestRunHarnessesScoreTheFixture(t *testing.T) {
	tests := []struct {
		name       string
		harness    string
		command    string
		wantReward float64
		wantUsage  *harbor.AgentResult
	}{
		{name: "oracle passes", harness: "oracle", wantReward: 1},
		{name: "nop fails", harness: "nop", wantReward: 0},
		{
			name:    "command agent reads the instruction and reports usage",
			harness: "command",
			command: `case "$GAUNTLET_INSTRUCTION" in *'word ` + "`gauntlet`" + `'*) echo gauntlet > /app/answer.txt;; esac
grep -q gauntlet "$GAUNTLET_INSTRUCTION_FILE" || exit 9
echo '{"input_tokens": 1200, "cache_tokens": 200, "output_tokens": 345, "cost_usd": 0.0125}' > /logs/agent/usage.json`,
			wantReward: 1,
			wantUsage:  agentResult(1200, 200, 345, 0.0125),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseSpec(t, tc.harness)
			spec.Command = tc.command
			r := runTrial(t, spec, Options{})
			if got := rewardOf(t, r.result); got != tc.wantReward {
				t.Errorf("reward = %v, want %v", got, tc.wantReward)
			}
			if r.result.ExceptionInfo != nil {
				t.Errorf("exception = %+v, want none", r.result.ExceptionInfo)
			}
			want := tc.wantUsage
			if want == nil {
				want = &harbor.AgentResult{}
			}
			if diff := cmp.Diff(want, r.result.AgentResult); diff != "" {
				t.Errorf("agent_result (-want +got):\n%s", diff)
			}
			wantInfo := harbor.AgentInfo{Name: tc.harness, Version: "1.0.0", ModelInfo: &harbor.ModelInfo{Name: "model-1", Provider: "acme"}}
			if diff := cmp.Diff(wantInfo, r.result.AgentInfo); diff != "" {
				t.Errorf("agent_info (-want +got):\n%s", diff)
			}
			if r.result.TaskName != "task" || r.result.TrialName != "slot-1__g0" {
				t.Errorf("task_name, trial_name = %q, %q; want task, slot-1__g0", r.result.TaskName, r.result.TrialName)
			}
			for _, ti := range []*harbor.TimingInfo{r.result.EnvironmentSetup, r.result.AgentExecution, r.result.Verifier} {
				if _, ok := ti.Duration(); !ok {
					t.Errorf("phase timing missing: %+v", ti)
				}
			}
			for _, rel := range []string{"runner.log", "agent/instruction.md", "agent/stdout.txt", "verifier/reward.txt", "verifier/test-stdout.txt"} {
				r.artifact(t, rel)
			}
		})
	}
}

func agentResult(in, cache, out int, cost float64) *harbor.AgentResult {
	return &harbor.AgentResult{NInputTokens: &in, NCacheTokens: &cache, NOutputTokens: &out, CostUSD: &cost}
}

// probeScript reports, from inside the agent sandbox, what the agent can see
// and reach. It writes key=value lines to /logs/agent/probe.txt.
const probeScript = `exec > /logs/agent/probe.txt
for p in /tests /solution /logs/verifier /app/seed.txt /agent; do
  if [ -e "$p" ]; then echo "$p=visible"; else echo "$p=hidden"; fi
done
if python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)' "$PROBE_PORT" 2>/dev/null; then
  echo net=open
else
  echo net=blocked
fi
echo "interfaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' ')"
echo "pid1=$(cat /proc/1/comm)"
echo "cwd=$(pwd)"`

func TestRunAgentSandboxHidesTestsSolutionAndNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	tests := []struct {
		name    string
		network string
		want    map[string]string
	}{
		{name: "no-network", network: harbor.NetworkNone, want: map[string]string{"net": "blocked", "interfaces": "lo "}},
		{name: "empty mode denies", network: "", want: map[string]string{"net": "blocked", "interfaces": "lo "}},
		// public has a network of its own (slirp4netns), never the host's
		// loopback, where the listener is.
		{name: "public", network: harbor.NetworkPublic, want: map[string]string{"net": "blocked"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseSpec(t, "command")
			spec.Command = probeScript
			spec.Network = tc.network
			spec.Env = map[string]string{"PROBE_PORT": port}
			r := runTrial(t, spec, Options{})
			got := parseProbe(r.artifact(t, "agent/probe.txt"))
			want := map[string]string{
				"/tests": "hidden", "/solution": "hidden", "/logs/verifier": "hidden",
				"/app/seed.txt": "visible", "/agent": "hidden", "pid1": "bwrap", "cwd": "/app",
			}
			for k, v := range tc.want {
				want[k] = v
			}
			if tc.network == harbor.NetworkPublic {
				delete(got, "interfaces") // lo and slirp4netns's tap0
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("probe from inside the agent sandbox (-want +got):\n%s", diff)
			}
		})
	}
}

func parseProbe(text string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

func TestRunOracleSeesSolutionAndAgentsDir(t *testing.T) {
	agents := t.TempDir()
	if err := os.WriteFile(filepath.Join(agents, "agent.sh"), []byte("echo gauntlet > /app/answer.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	table := append(harness.All(), harness.Harness{
		Name: "oracle-probe", Version: "1", MountsSolution: true,
		Run: probeScript + "\nbash {{.AgentsDir}}/agent.sh",
	})
	spec := baseSpec(t, "oracle-probe")
	spec.Env = map[string]string{"PROBE_PORT": "1"}
	r := runTrialWith(t, spec, Options{AgentsDir: agents}, table)
	got := parseProbe(r.artifact(t, "agent/probe.txt"))
	for k, want := range map[string]string{"/solution": "visible", "/tests": "hidden", "/agent": "visible"} {
		if got[k] != want {
			t.Errorf("probe %s = %q, want %q", k, got[k], want)
		}
	}
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("reward = %v, want 1 (the agent script in /agent writes the answer)", got)
	}
}

func TestRunAgentTimeoutStillRunsVerifier(t *testing.T) {
	const marker = "1000.4242"
	spec := baseSpec(t, "command")
	spec.Command = "echo gauntlet > /app/answer.txt; sleep " + marker
	spec.AgentTimeout = 500 * time.Millisecond
	r := runTrial(t, spec, Options{})
	if r.result.ExceptionInfo == nil || r.result.ExceptionInfo.ExceptionType != harbor.ExceptionAgentTimeout {
		t.Fatalf("exception = %+v, want %s", r.result.ExceptionInfo, harbor.ExceptionAgentTimeout)
	}
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("reward = %v, want 1: the verifier runs after a timeout and scores what the agent left", got)
	}
	if pids := processesWithArg(t, marker); len(pids) > 0 {
		t.Errorf("processes of the timed-out agent still alive: %v", pids)
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
		if strings.Contains(string(cmdline), arg) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func TestRunVerifierFailures(t *testing.T) {
	tests := []struct {
		name        string
		verifierEnv map[string]string
		timeout     time.Duration
		wantType    string
	}{
		{name: "timeout", verifierEnv: map[string]string{"SLEEP_FOR": "1000"}, timeout: 500 * time.Millisecond, wantType: harbor.ExceptionVerifierTimeout},
		{name: "no reward file", verifierEnv: map[string]string{"NO_REWARD": "1"}, timeout: 30 * time.Second, wantType: harbor.ExceptionRewardMissing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseSpec(t, "oracle")
			spec.VerifierEnv = tc.verifierEnv
			spec.VerifierTimeout = tc.timeout
			r := runTrial(t, spec, Options{})
			if r.result.VerifierResult != nil {
				t.Errorf("verifier_result = %+v, want none", r.result.VerifierResult)
			}
			if r.result.ExceptionInfo == nil || r.result.ExceptionInfo.ExceptionType != tc.wantType {
				t.Errorf("exception = %+v, want %s", r.result.ExceptionInfo, tc.wantType)
			}
		})
	}
}

func TestRunAgentFailuresAreRecorded(t *testing.T) {
	tests := []struct {
		name     string
		harness  harness.Harness
		wantType string
		wantRan  bool
	}{
		{name: "non-zero exit", harness: harness.Harness{Name: "h", Run: "exit 4"}, wantType: harbor.ExceptionAgentExit, wantRan: true},
		{name: "install fails", harness: harness.Harness{Name: "h", Install: "exit 2", Run: "true"}, wantType: harbor.ExceptionAgentSetup},
		{name: "install state reaches the agent", harness: harness.Harness{Name: "h", Install: "echo gauntlet > $HOME/answer",
			Run: "cp $HOME/answer /app/answer.txt"}, wantRan: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runTrialWith(t, baseSpec(t, "h"), Options{}, []harness.Harness{tc.harness})
			gotType := ""
			if r.result.ExceptionInfo != nil {
				gotType = r.result.ExceptionInfo.ExceptionType
			}
			if gotType != tc.wantType {
				t.Errorf("exception type = %q, want %q", gotType, tc.wantType)
			}
			if ran := r.result.AgentExecution != nil; ran != tc.wantRan {
				t.Errorf("agent ran = %v, want %v", ran, tc.wantRan)
			}
			if r.result.VerifierResult == nil {
				t.Errorf("the verifier must run and score every trial; exception %+v", r.result.ExceptionInfo)
			}
		})
	}
}

func TestRunArtifactsNeverFollowAgentSymlinks(t *testing.T) {
	spec := baseSpec(t, "command")
	spec.Command = `ln -s /etc/passwd /logs/agent/leak; mkfifo /logs/agent/fifo; echo ok > /logs/agent/note.txt
ln -s /etc/passwd /logs/agent/usage.json`
	r := runTrial(t, spec, Options{})
	for _, rel := range []string{"agent/leak", "agent/fifo", "agent/usage.json"} {
		if _, err := os.Lstat(filepath.Join(r.out, "artifacts", rel)); !os.IsNotExist(err) {
			t.Errorf("artifact %s exists (err %v); symlinks and FIFOs must not be collected", rel, err)
		}
	}
	if got := r.artifact(t, "agent/note.txt"); got != "ok\n" {
		t.Errorf("agent/note.txt = %q, want ok", got)
	}
	if diff := cmp.Diff(&harbor.AgentResult{}, r.result.AgentResult); diff != "" {
		t.Errorf("usage.json symlink must not be read (-want +got):\n%s", diff)
	}
}

func TestRunAppliesMemoryLimit(t *testing.T) {
	probe := filepath.Join(cgroupRoot, "memory", cgroupParent)
	if err := os.MkdirAll(probe, 0o755); err != nil {
		t.Skipf("cgroup v1 memory controller not writable here (%v): limits are recorded as not applied", err)
	}
	spec := baseSpec(t, "command")
	spec.MemoryMB = 64
	spec.Command = `python3 -c 'b = bytearray(400 << 20); print(len(b))'`
	r := runTrial(t, spec, Options{})
	if r.result.ExceptionInfo == nil || r.result.ExceptionInfo.ExceptionType != harbor.ExceptionAgentOOM ||
		!strings.HasPrefix(r.result.ExceptionInfo.ExceptionMessage, "oom:") {
		t.Errorf("exception = %+v, want %s (the allocation is killed by the memory limit)", r.result.ExceptionInfo, harbor.ExceptionAgentOOM)
	}
	if log := r.artifact(t, "runner.log"); !strings.Contains(log, "memory limit 64 MB applied") {
		t.Errorf("runner.log does not record the memory limit:\n%s", log)
	}
}

func TestMainSecretsReachOnlyTheirPhase(t *testing.T) {
	requireBwrap(t)
	dir := t.TempDir()
	spec := baseSpec(t, "command")
	// The agent reports a digest of its token: the value itself would be
	// redacted from the artifacts.
	spec.Command = `{ echo "agent_token=$(printf %s "${AGENT_TOKEN:-missing}" | sha256sum | cut -c1-16)"; echo "verifier_token=${VERIFIER_TOKEN:-missing}"
  echo "aws=${AWS_SECRET_ACCESS_KEY:-missing}"; echo "carrier=${GAUNTLET_SECRET_AGENT_TOKEN:-missing}"
  echo "hosted_key=${GAUNTLET_GATEWAY_KEY_HOSTED:-missing}"; echo "gateway_config=${GAUNTLET_MODEL_GATEWAY_CONFIG:+present}"; } > /logs/agent/seen.txt
echo gauntlet > /app/answer.txt`
	specJSON, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(runnerBinary, "--isolation", IsolationHostBwrap, "--out", filepath.Join(dir, "out"), "--work", filepath.Join(dir, "work"))
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		SpecEnv + "=" + string(specJSON),
		"AWS_SECRET_ACCESS_KEY=platform-credential-value",
		"GAUNTLET_SECRET_AGENT_TOKEN=agent-secret-value",
		"GAUNTLET_VERIFIER_SECRET_VERIFIER_TOKEN=verifier-secret-value",
		// The cloud's operator gateway config and hosted key (ECS injects
		// the key from Secrets Manager): the runner reads both, no phase
		// sees either.
		sandbox.GatewayConfigEnv + "=[hosted]\nbase_url = \"http://vllm.internal:8000/v1\"\napi_key_env = \"GAUNTLET_GATEWAY_KEY_HOSTED\"\n",
		"GAUNTLET_GATEWAY_KEY_HOSTED=hosted-key-value",
	}
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sandbox-runner: %v\n%s", err, output)
	}
	r := trialRun{out: filepath.Join(dir, "out")}
	want := map[string]string{"agent_token": sha256Prefix("agent-secret-value"), "verifier_token": "missing", "aws": "missing", "carrier": "missing",
		"hosted_key": "missing", "gateway_config": ""}
	if diff := cmp.Diff(want, parseProbe(r.artifact(t, "agent/seen.txt"))); diff != "" {
		t.Errorf("agent environment (-want +got):\n%s", diff)
	}
	verifierNames := strings.Fields(r.artifact(t, "verifier/env-names.txt"))
	for name, want := range map[string]bool{"VERIFIER_TOKEN": true, "AGENT_TOKEN": false, "AWS_SECRET_ACCESS_KEY": false, "GAUNTLET_VERIFIER_SECRET_VERIFIER_TOKEN": false,
		"GAUNTLET_GATEWAY_KEY_HOSTED": false, sandbox.GatewayConfigEnv: false} {
		if got := contains(verifierNames, name); got != want {
			t.Errorf("verifier has %s = %v, want %v", name, got, want)
		}
	}
	for _, leaked := range []string{"platform-credential-value", "agent-secret-value", "verifier-secret-value", "hosted-key-value"} {
		for _, file := range []string{"result.json", "artifacts/runner.log"} {
			data, _ := os.ReadFile(filepath.Join(r.out, file))
			if strings.Contains(string(data), leaked) {
				t.Errorf("%s contains the secret value %q", file, leaked)
			}
		}
		if strings.Contains(string(output), leaked) {
			t.Errorf("runner output contains the secret value %q", leaked)
		}
	}
}

func sha256Prefix(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// hostedByEnv is an operator config whose hosted key comes from the
// runner's environment, as on Fargate.
const hostedByEnv = "[hosted]\nbase_url = \"http://vllm.internal:8000/v1\"\napi_key_env = \"GAUNTLET_GATEWAY_KEY_HOSTED\"\n"

func TestMainExitCodes(t *testing.T) {
	requireBwrap(t)
	good, err := json.Marshal(baseSpec(t, "nop"))
	if err != nil {
		t.Fatal(err)
	}
	unknown, err := json.Marshal(baseSpec(t, "no-such-harness"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		spec string
		env  []string
		want int
	}{
		{name: "trial ran", spec: string(good), want: sandbox.ExitOK},
		{name: "no spec", want: sandbox.ExitInfra},
		{name: "malformed spec", spec: `{"harness": 3}`, want: sandbox.ExitInfra},
		{name: "unknown spec field", spec: `{"harness": "nop", "surprise": 1}`, want: sandbox.ExitInfra},
		{name: "unknown harness", spec: string(unknown), want: sandbox.ExitInfra},
		{name: "bubblewrap missing", spec: string(good), args: []string{"--bwrap", "/nonexistent/bwrap"}, want: sandbox.ExitInfra},
		{name: "bad isolation", spec: string(good), args: []string{"--isolation", "docker"}, want: sandbox.ExitInfra},
		{name: "image isolation without an image", spec: string(good), args: []string{"--isolation", IsolationBwrap}, want: sandbox.ExitInfra},
		{name: "gateway config from the environment", spec: string(good), want: sandbox.ExitOK,
			env: []string{sandbox.GatewayConfigEnv + "=" + hostedByEnv, "GAUNTLET_GATEWAY_KEY_HOSTED=sk-hosted"}},
		{name: "gateway config whose hosted key is not in the environment", spec: string(good), want: sandbox.ExitInfra,
			env: []string{sandbox.GatewayConfigEnv + "=" + hostedByEnv}},
		{name: "malformed gateway config in the environment", spec: string(good), want: sandbox.ExitInfra,
			env: []string{sandbox.GatewayConfigEnv + "=[providers.x]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"--isolation", IsolationHostBwrap, "--out", filepath.Join(dir, "out"), "--work", filepath.Join(dir, "work")}, tc.args...)
			env := slices.Clone(tc.env)
			if tc.spec != "" {
				env = append(env, SpecEnv+"="+tc.spec)
			}
			if got := Main(args, env, nil); got != tc.want {
				t.Errorf("Main(%q) = %d, want %d", tc.args, got, tc.want)
			}
		})
	}
}

func TestRunProcessIsolation(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Isolation: IsolationProcess, WorkDir: filepath.Join(dir, "work"), OutDir: filepath.Join(dir, "out")}
	spec := baseSpec(t, "oracle")
	tr, err := Run(context.Background(), spec, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := rewardOf(t, tr); got != 1 {
		t.Errorf("reward = %v, want 1", got)
	}
	log, err := os.ReadFile(filepath.Join(opts.OutDir, "artifacts", "runner.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "sandbox isolation is OFF") {
		t.Errorf("runner.log lacks the no-isolation warning:\n%s", log)
	}
}

func TestRunBwrapMissingSaysHowToInstall(t *testing.T) {
	dir := t.TempDir()
	_, err := Run(context.Background(), baseSpec(t, "nop"), Options{
		BwrapPath: filepath.Join(dir, "bwrap"), WorkDir: filepath.Join(dir, "w"), OutDir: filepath.Join(dir, "o"),
	})
	if err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("Run without bubblewrap: error %v, want one that says apt-get install bubblewrap", err)
	}
}

func TestRunRejectsAnEmptyCommand(t *testing.T) {
	requireBwrap(t)
	dir := t.TempDir()
	_, err := Run(context.Background(), baseSpec(t, "command"), Options{Isolation: IsolationHostBwrap, WorkDir: filepath.Join(dir, "w"), OutDir: filepath.Join(dir, "o")})
	if err == nil || !strings.Contains(err.Error(), "command") {
		t.Errorf("Run(command harness without a command) error = %v, want one naming the command", err)
	}
}

func TestMainRedactsSecretsFromEverythingCollected(t *testing.T) {
	requireBwrap(t)
	dir := t.TempDir()
	spec := baseSpec(t, "command")
	spec.Command = `echo "token: $AGENT_TOKEN"; echo "again $AGENT_TOKEN" >&2
printf '{"messages":[{"role":"tool","content":"AGENT_TOKEN=%s"}]}' "$AGENT_TOKEN" > /logs/agent/trajectory.json
mkdir -p /logs/agent/sessions && { head -c 200000 /dev/zero | tr '\0' 'x'; echo "$AGENT_TOKEN"; } > /logs/agent/sessions/big.log
echo gauntlet > /app/answer.txt`
	specJSON, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(runnerBinary, "--isolation", IsolationHostBwrap, "--out", out, "--work", filepath.Join(dir, "work"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), SpecEnv + "=" + string(specJSON),
		"GAUNTLET_SECRET_AGENT_TOKEN=tok-agent-0123456789", "GAUNTLET_VERIFIER_SECRET_SHORT=1234"}
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sandbox-runner: %v\n%s", err, output)
	}
	r := trialRun{out: out}
	if got := rewardOf(t, mustReadResult(t, out)); got != 1 {
		t.Errorf("reward = %v, want 1", got)
	}
	for rel, want := range map[string]string{
		"agent/stdout.txt":      "token: [redacted:AGENT_TOKEN]\n",
		"agent/stderr.txt":      "again [redacted:AGENT_TOKEN]\n",
		"agent/trajectory.json": `{"messages":[{"role":"tool","content":"AGENT_TOKEN=[redacted:AGENT_TOKEN]"}]}`,
	} {
		if got := r.artifact(t, rel); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	if big := r.artifact(t, "agent/sessions/big.log"); !strings.HasSuffix(big, "x[redacted:AGENT_TOKEN]\n") || len(big) != 200000+len("[redacted:AGENT_TOKEN]\n") {
		t.Errorf("agent/sessions/big.log: %d bytes ending %q, want 200000 x then the redacted token", len(big), big[max(0, len(big)-40):])
	}
	err = filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if strings.Contains(string(data), "tok-agent-0123456789") {
			t.Errorf("%s holds the agent's secret", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustReadResult(t *testing.T, out string) harbor.TrialResult {
	t.Helper()
	tr, err := harbor.ReadTrialResult(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestMissingStaticBinaryIsTheRunnersError: a harness that runs a platform
// static binary (terminus-2) the sandbox lacks fails the trial before the
// agent starts, naming the file (an infra error), instead of the agent's
// shell exiting 127 and the attempt being scored as the agent's failure.
func TestMissingStaticBinaryIsTheRunnersError(t *testing.T) {
	requireBwrap(t)
	dir := t.TempDir()
	opts := Options{Isolation: IsolationHostBwrap, StaticBinDir: filepath.Join(dir, "bin"), SelfPath: runnerBinary,
		WorkDir: filepath.Join(dir, "w"), OutDir: filepath.Join(dir, "o")}
	if err := os.Mkdir(opts.StaticBinDir, 0o755); err != nil {
		t.Fatal(err)
	}
	h, _ := harness.Lookup("terminus-2")
	spec := baseSpec(t, "terminus-2")
	// A model the gateway can route: without the check the agent phase
	// would run, and exit 127.
	spec.Model, spec.Secrets = "openai/gpt-5.2", map[string]secret.Value{h.KeyEnv: "sk-test-0123456789"}
	_, err := run(context.Background(), spec, opts, harness.All())
	if err == nil || !strings.Contains(err.Error(), "/opt/gauntlet/bin/terminus-2") || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("terminus-2 without its binary: err = %v, want the runner's error naming /opt/gauntlet/bin/terminus-2", err)
	}
	if _, err := os.Stat(filepath.Join(opts.WorkDir, "logs", "agent", "stdout.txt")); err == nil {
		t.Error("the agent phase ran")
	}

	bin := filepath.Join(opts.StaticBinDir, "terminus-2")
	check := func() error {
		return (&trial{harness: h, opts: opts}).rigging().checkStaticBinary()
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := check(); err == nil || !strings.Contains(err.Error(), "not an executable file") {
		t.Errorf("a non-executable terminus-2: err = %v, want not an executable file", err)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := check(); err != nil {
		t.Errorf("terminus-2 in --static-bin-dir: %v, want no error", err)
	}
	nop, _ := harness.Lookup("nop")
	if err := (&trial{harness: nop}).rigging().checkStaticBinary(); err != nil {
		t.Errorf("a harness with no static binary: %v", err)
	}
}
