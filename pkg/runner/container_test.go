package runner

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/gauntlet-bench/gauntlet/pkg/awsx/kmskeys"
	"github.com/gauntlet-bench/gauntlet/pkg/awsx/kmskeys/kmstest"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sealed"
)

// The container tests run the real sandbox-runner binary, as root, with
// --isolation container inside a bubblewrap mount and PID namespace whose
// root is a tmpfs: the runner gets its own /app, /logs, /tests, /solution,
// /home and /root exactly as in a Fargate task, and sees only its own
// processes; it is their PID 1, as the runner is in an ECS task. Task files come as a bundle through a presigned-style URL,
// secrets sealed under a KMS data key (the fake KMS, with the task role's
// credentials from a container credentials endpoint), results go up by PUT.

// Markers in everything that must never reach a phase: URL signatures, the
// wrapped data key, the credentials endpoint and the credentials.
const (
	resultSigMarker   = "resultsig-5b1e0c"
	artifactSigMarker = "artifactsig-77a2e1"
	bundleSigMarker   = "bundlesig-0f3d9a"
	sealedSigMarker   = "sealedsig-c4a8b2"
	credsPathMarker   = "creds-path-2e6f11"
	authTokenMarker   = "auth-token-9d0c47"
	roleSecretMarker  = "role-secret-3a7b55"
	roleTokenMarker   = "role-token-81c2d0"
	agentSecretValue  = "agent-secret-value-a1b2c3d4"
	verifierSecretVal = "verifier-secret-value-e5f6a7b8"
)

// containerEnv is one sandbox's outside world: task bundle, sealed secrets
// and upload endpoints, KMS and the task role's credentials endpoint.
type containerEnv struct {
	t       *testing.T
	files   *httptest.Server
	kms     *kmstest.Server
	creds   *httptest.Server
	mu      sync.Mutex
	blobs   map[string][]byte // GET paths → bodies
	uploads map[string][]byte // PUT paths → bodies
	// wrap are more arguments of the stand-in container (binds); flags
	// more arguments of the runner.
	wrap, flags []string
}

func newContainerEnv(t *testing.T) *containerEnv {
	t.Helper()
	requireBwrap(t)
	if os.Geteuid() != 0 {
		t.Fatalf("container isolation tests need root (they run as root on the project's machines)")
	}
	e := &containerEnv{t: t, blobs: map[string][]byte{}, uploads: map[string][]byte{}}
	e.files = httptest.NewServer(http.HandlerFunc(e.serveFiles))
	t.Cleanup(e.files.Close)
	e.kms = kmstest.New(t)
	e.kms.Allowed = func(accessKey, op string) bool {
		return (accessKey == "DISPATCHER" && op == "GenerateDataKey") || (accessKey == "TASKROLE" && op == "Decrypt")
	}
	e.creds = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/"+credsPathMarker || r.Header.Get("Authorization") != authTokenMarker {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{
			"AccessKeyId": "TASKROLE", "SecretAccessKey": roleSecretMarker, "Token": roleTokenMarker,
			"Expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		})
	}))
	t.Cleanup(e.creds.Close)
	return e
}

func (e *containerEnv) serveFiles(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		body, ok := e.blobs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	case http.MethodPut:
		body, _ := io.ReadAll(r.Body)
		e.uploads[r.URL.Path] = body
	}
}

// containerRun is what one container-isolated trial left.
type containerRun struct {
	result    harbor.TrialResult
	out       string // host dir of the runner's out dir
	app       string // host dir bound at /app
	output    string // the runner's own stdout and stderr
	uploads   map[string][]byte
	sensitive []string // values no phase and no artifact may hold
}

func (r containerRun) artifact(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.out, "artifacts", rel))
	if err != nil {
		t.Fatalf("artifact %s: %v", rel, err)
	}
	return string(data)
}

// run runs one trial of the task at taskDir with the harness and command
// under container isolation.
func (e *containerEnv) run(taskDir, harness, command string) containerRun {
	t := e.t
	t.Helper()
	dir := t.TempDir()
	app, out := filepath.Join(dir, "app"), filepath.Join(dir, "out")
	for _, d := range []string{app, out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	launch := "run-1/slot-1/g0"
	spec := sandbox.Spec{
		LaunchID: launch, RunID: "run-1", SlotID: "slot-1", Harness: harness, Command: command, Model: "acme/model-1",
		Task:         sandbox.TaskRef{Name: filepath.Base(taskDir), BundleURL: e.files.URL + "/bundle?X-Amz-Signature=" + bundleSigMarker},
		AgentTimeout: 30 * time.Second, VerifierTimeout: 30 * time.Second, Network: harbor.NetworkNone,
		Output: sandbox.Output{Prefix: "runs/run-1/slots/slot-1/g0/",
			ResultURL:    e.files.URL + "/upload/result.json?X-Amz-Signature=" + resultSigMarker,
			ArtifactsURL: e.files.URL + "/upload/artifacts.tar.gz?X-Amz-Signature=" + artifactSigMarker},
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	wrapped := e.seal(launch)
	e.mu.Lock()
	e.blobs["/bundle"] = packTask(t, taskDir)
	e.uploads = map[string][]byte{}
	e.mu.Unlock()

	args := append(wrapperArgs(runnerBinary), "--bind", app, AppMount, "--bind", out, "/gauntlet-out")
	args = append(append(args, e.wrap...),
		"--", runnerBinary, "--isolation", IsolationContainer, "--work", "/gauntlet-work", "--out", "/gauntlet-out")
	args = append(args, e.flags...)
	cmd := exec.Command("bwrap", args...)
	cmd.Env = []string{
		"PATH=" + sandboxPath,
		SpecEnv + "=" + string(specJSON),
		sealed.URLEnv + "=" + e.files.URL + "/sealed?X-Amz-Signature=" + sealedSigMarker,
		sealed.DataKeyEnv + "=" + wrapped,
		"AWS_CONTAINER_CREDENTIALS_FULL_URI=" + e.creds.URL + "/" + credsPathMarker,
		"AWS_CONTAINER_AUTHORIZATION_TOKEN=" + authTokenMarker,
		"AWS_ENDPOINT_URL_KMS=" + e.kms.URL,
		"AWS_REGION=us-east-1",
	}
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sandbox-runner --isolation container: %v\n%s", err, output)
	}
	tr, err := harbor.ReadTrialResult(filepath.Join(out, harbor.TrialResultFile))
	if err != nil {
		t.Fatalf("read result.json: %v\n%s", err, output)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return containerRun{
		result: tr, out: out, app: app, output: string(output), uploads: e.uploads,
		sensitive: []string{resultSigMarker, artifactSigMarker, bundleSigMarker, sealedSigMarker, credsPathMarker,
			authTokenMarker, roleSecretMarker, roleTokenMarker, verifierSecretVal, wrapped, string(specJSON)},
	}
}

// seal stores the launch's sealed secrets, as the dispatcher does, and
// returns the wrapped data key.
func (e *containerEnv) seal(launch string) string {
	t := e.t
	dispatcher := kmskeys.New(kms.New(kms.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(e.kms.URL),
		Credentials: credentials.NewStaticCredentialsProvider("DISPATCHER", "secret", ""),
	}), kmstest.KeyARN)
	key, wrapped, err := dispatcher.NewDataKey(context.Background(), launch)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := sealed.Seal(sealed.Secrets{
		Agent:    map[string]string{"AGENT_TOKEN": agentSecretValue},
		Verifier: map[string]string{"VERIFIER_TOKEN": verifierSecretVal},
	}, key, launch)
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.blobs["/sealed"] = ct
	e.mu.Unlock()
	return base64.StdEncoding.EncodeToString(wrapped)
}

// wrapperArgs build the container: a tmpfs root with the system
// directories read-only, its own /proc (new PID namespace), /dev and /tmp,
// and the runner binary. It keeps the network (the runner reaches the test
// servers; the Fargate task has egress too) and root's capabilities.
// containerDirs are what the stand-in container holds of the host: a
// container image's whole system, /etc included (the runner's own
// host-rootfs mode binds only a few /etc files; a container has its own).
var containerDirs = []string{"/usr", "/etc", "/bin", "/lib", "/lib64", "/sbin"}

func wrapperArgs(runner string) []string {
	args := []string{"--tmpfs", "/"}
	for _, d := range containerDirs {
		info, err := os.Lstat(d)
		if err != nil {
			continue
		}
		if info.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(d)
			args = append(args, "--symlink", target, d)
			continue
		}
		args = append(args, "--ro-bind", d, d)
	}
	return append(args, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--ro-bind", filepath.Dir(runner), filepath.Dir(runner),
		"--unshare-pid", "--as-pid-1", "--unshare-ipc", "--die-with-parent", "--chdir", "/")
}

// packTask makes a task bundle (.tar.gz) of a task directory.
func packTask(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(hdr); err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// hookTask is the fixture task whose verifier, like many real ones, runs
// code the agent left in /app (/app/hook.sh) before it scores, and prints
// its own secret.
func hookTask(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "task")
	if _, err := copyTree(fixtureDir(t), dir, copyOptions{keepSymlinks: true}); err != nil {
		t.Fatal(err)
	}
	test := filepath.Join(dir, "tests", "test.sh")
	data, err := os.ReadFile(test)
	if err != nil {
		t.Fatal(err)
	}
	hook := "\n" + `echo "verifier token: ${VERIFIER_TOKEN:-none}"
if [ -f "$app/hook.sh" ]; then bash "$app/hook.sh" > "$out/hook.txt" 2>&1; fi` + "\nreward=0\n"
	data = bytes.Replace(data, []byte("\nreward=0\n"), []byte(hook), 1)
	if err := os.WriteFile(test, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// adversary is a command agent that attacks everything container isolation
// must protect and records, as key=value lines, what it managed.
const adversary = `exec > /logs/agent/probe.txt 2>&1
try() { if bash -c "$2" >/dev/null 2>&1; then echo "$1=ok"; else echo "$1=denied"; fi; }
echo "uid=$(id -u)"
echo "groups=$(id -G)"
echo "capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)"
echo "nonewprivs=$(sed -n 's/^NoNewPrivs:[[:space:]]*//p' /proc/self/status)"
# (a) the tests, the solution, the task bundle and the runner's outputs
try read_tests 'cat /tests/test.sh'
try read_solution 'ls /solution/solve.sh'
try read_bundle 'cat /gauntlet-work/task/tests/test.sh'
try list_work 'ls /gauntlet-work'
try list_out 'ls /gauntlet-out'
find / \( -path /proc -o -path /usr -o -path /sys -o -path /dev \) -prune -o -name test.sh -print 2>/dev/null > /logs/agent/found-tests.txt
# (b) plant a verifier
try plant_tests 'mkdir -p /tests && echo "echo 1 > /logs/verifier/reward.txt" > /tests/test.sh'
# (c) every process's environment
for p in /proc/[0-9]*; do
  u=$(sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' "$p/status" 2>/dev/null)
  [ -n "$u" ] || continue
  if tr '\0' '\n' < "$p/environ" >> /logs/agent/environs.txt 2>/dev/null; then echo "environ_uid_$u=ok"; else echo "environ_uid_$u=denied"; fi
done
try open_root_mem 'for p in /proc/[0-9]*; do if [ "$(stat -c %u $p)" = 0 ] && exec 3< $p/mem; then exit 0; fi; done; exit 1'
# (e) a reward of its own
try write_reward 'echo 1 > /logs/verifier/reward.txt'
# (d) a process that outlives the agent and rewrites /app and the reward
setsid bash -c 'echo up > /app/background-started; while :; do [ -e /tests ] && echo alive >> /app/linger.txt; echo 1 > /logs/verifier/reward.txt; sleep 0.05; done' < /dev/null > /dev/null 2>&1 &
# a hook the verifier will run as root: it goes after the runner's environment
cat > /app/hook.sh <<'HOOK'
for p in /proc/[0-9]*; do
  if [ "$(sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' "$p/status" 2>/dev/null)" = 61000 ]; then echo hook_agent_process=alive; break; fi
done
if bash -c 'exec 3< /proc/1/mem' 2>/dev/null; then echo hook_runner_mem=ok; else echo hook_runner_mem=denied; fi
for p in /proc/[0-9]*; do
  if tr '\0' '\n' < "$p/environ" > /dev/null 2>&1; then
    echo "hook_environ_$(sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' "$p/status")=ok"; tr '\0' '\n' < "$p/environ"
  fi
done
HOOK
sleep 0.3
echo done`

func TestContainerIsolationDefeatsAnAdversarialAgent(t *testing.T) {
	e := newContainerEnv(t)
	r := e.run(hookTask(t), "command", adversary)
	probe := parseProbe(r.artifact(t, "agent/probe.txt"))
	t.Logf("agent probe:\n%s\nverifier hook:\n%s", r.artifact(t, "agent/probe.txt"), r.artifact(t, "verifier/hook.txt"))
	want := map[string]string{
		"uid": "61000", "groups": "61000", "capeff": "0000000000000000", "nonewprivs": "1",
		"read_tests": "denied", "read_solution": "denied", "read_bundle": "denied", "list_work": "denied", "list_out": "denied",
		"plant_tests": "denied", "environ_uid_0": "denied", "environ_uid_61000": "ok", "open_root_mem": "denied",
		"write_reward": "denied",
	}
	for k, v := range want {
		if probe[k] != v {
			t.Errorf("agent probe %s = %q, want %q", k, probe[k], v)
		}
	}
	if found := strings.TrimSpace(r.artifact(t, "agent/found-tests.txt")); found != "" {
		t.Errorf("the agent found test scripts: %q", found)
	}
	environs := r.artifact(t, "agent/environs.txt")
	for _, s := range r.sensitive {
		if strings.Contains(environs, s) {
			t.Errorf("an environment the agent read holds %.40q", s)
		}
	}
	if _, err := os.Stat(filepath.Join(r.app, "background-started")); err != nil {
		t.Fatalf("the agent's background process never started (%v): the test proves nothing", err)
	}
	// What the agent left running lives on into the verifier, as in
	// Harbor's shared container (it may read /tests then, not write the
	// reward: write_reward stays denied and the reward 0), and goes with
	// the trial.
	if hook := r.artifact(t, "verifier/hook.txt"); !strings.Contains(hook, "hook_agent_process=alive") {
		t.Errorf("no process of the agent was alive while the verifier ran: %q", hook)
	}
	if pids := processesOf(DefaultAgentUID); len(pids) > 0 {
		t.Errorf("processes of the agent uid alive after the trial: %v", pids)
	}
	// The verifier scored the agent's (empty) work, nothing else.
	if got := rewardOf(t, r.result); got != 0 {
		t.Errorf("reward = %v, want 0", got)
	}
	if r.result.ExceptionInfo != nil {
		t.Errorf("exception = %+v, want none", r.result.ExceptionInfo)
	}
	// The agent's code the verifier ran as root could not read the
	// runner's memory (non-dumpable, no CAP_SYS_PTRACE) nor anything
	// sensitive in its environment (scrubbed; some kernels let a root
	// process read a non-dumpable root process's environ).
	hook := r.artifact(t, "verifier/hook.txt")
	if !strings.Contains(hook, "hook_runner_mem=denied") {
		t.Errorf("the verifier-run hook opened the runner's memory: %q", hook)
	}
	for _, s := range r.sensitive {
		if s != verifierSecretVal && strings.Contains(hook, s) {
			t.Errorf("the verifier-run hook read %.40q", s)
		}
	}
	if !strings.Contains(hook, "hook_environ_0=ok") {
		t.Errorf("the hook read no root environment at all (its own): %q", hook)
	}
	assertNoTrace(t, r)
}

func TestContainerIsolationScoresAnHonestAgent(t *testing.T) {
	e := newContainerEnv(t)
	// It solves the task, reports usage and, carelessly, prints its secret
	// to stdout and into its trajectory.
	honest := `echo gauntlet > /app/answer.txt
echo "my token is $AGENT_TOKEN"
printf '{"steps":[{"tool":"env","output":"AGENT_TOKEN=%s"}]}' "$AGENT_TOKEN" > /logs/agent/trajectory.json
echo '{"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.5}' > /logs/agent/usage.json
test "$(stat -c %u /app/seed.txt)" = "$(id -u)"`
	r := e.run(hookTask(t), "command", honest)
	if got := rewardOf(t, r.result); got != 1 {
		t.Errorf("reward = %v, want 1", got)
	}
	if r.result.ExceptionInfo != nil {
		t.Errorf("exception = %+v, want none", r.result.ExceptionInfo)
	}
	if r.result.AgentResult == nil || r.result.AgentResult.NOutputTokens == nil || *r.result.AgentResult.NOutputTokens != 5 {
		t.Errorf("agent_result = %+v, want the reported usage", r.result.AgentResult)
	}
	if got := r.artifact(t, "agent/stdout.txt"); got != "my token is [redacted:AGENT_TOKEN]\n" {
		t.Errorf("agent/stdout.txt = %q, want the token redacted", got)
	}
	if got := r.artifact(t, "agent/trajectory.json"); !strings.Contains(got, `"AGENT_TOKEN=[redacted:AGENT_TOKEN]"`) {
		t.Errorf("agent/trajectory.json = %q, want the token redacted", got)
	}
	if got := r.artifact(t, "verifier/test-stdout.txt"); !strings.Contains(got, "verifier token: [redacted:VERIFIER_TOKEN]") {
		t.Errorf("verifier/test-stdout.txt = %q, want the verifier's token (it got it) redacted", got)
	}
	// The runner unwrapped the data key with the task role's credentials
	// (from the container credentials endpoint), under the launch's context.
	decrypts := 0
	for _, req := range e.kms.Requests() {
		if req.Operation != "Decrypt" {
			continue
		}
		decrypts++
		ctx, _ := req.Body["EncryptionContext"].(map[string]any)
		if req.AccessKey != "TASKROLE" || ctx["gauntlet:launch"] != "run-1/slot-1/g0" || len(ctx) != 1 {
			t.Errorf("Decrypt by %q with context %v, want the task role with gauntlet:launch = the launch id", req.AccessKey, ctx)
		}
	}
	if decrypts != 1 {
		t.Errorf("kms:Decrypt calls = %d, want 1", decrypts)
	}
	extra := r.result.Extra[ResultExtraKey]
	if !strings.Contains(string(extra), `"isolation":"container"`) {
		t.Errorf("result extra = %s, want isolation container", extra)
	}
	assertNoTrace(t, r)
}

// assertNoTrace checks that no secret value and none of the runner's
// sensitive inputs are in result.json, the artifacts (on disk and uploaded)
// or the runner's own output.
func assertNoTrace(t *testing.T, r containerRun) {
	t.Helper()
	texts := map[string]string{"runner output": r.output}
	_ = filepath.WalkDir(r.out, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(path)
			texts[path] = string(data)
		}
		return nil
	})
	result, ok := r.uploads["/upload/result.json"]
	if !ok {
		t.Fatalf("result.json was not uploaded (uploads: %d)", len(r.uploads))
	}
	texts["uploaded result.json"] = string(result)
	gz, err := gzip.NewReader(bytes.NewReader(r.uploads["/upload/artifacts.tar.gz"]))
	if err != nil {
		t.Fatalf("uploaded artifacts: %v", err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		data, _ := io.ReadAll(tr)
		texts["uploaded "+hdr.Name] = string(data)
	}
	for _, s := range append(r.sensitive, agentSecretValue) {
		for name, text := range texts {
			if strings.Contains(text, s) {
				t.Errorf("%s holds %.40q", name, s)
			}
		}
	}
}

func TestContainerIsolationOraclePassesDemoBench(t *testing.T) {
	e := newContainerEnv(t)
	tasks, err := filepath.Glob("../../examples/demo-bench/*/task.toml")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no demo-bench tasks (%v)", err)
	}
	for _, toml := range tasks {
		dir, _ := filepath.Abs(filepath.Dir(toml))
		t.Run(filepath.Base(dir), func(t *testing.T) {
			e.t = t
			r := e.run(dir, "oracle", "")
			if got := rewardOf(t, r.result); got != 1 {
				t.Errorf("oracle reward = %v, want 1; verifier said:\n%s", got, r.artifact(t, "verifier/test-stdout.txt"))
			}
		})
	}
}

// TestContainerIsolationServesTheStaticBinaries: the runner's
// --static-bin-dir (in ECS the shared volume runner-init filled, read-only)
// is where the agent finds /opt/gauntlet/bin, and the agent cannot swap it.
func TestContainerIsolationServesTheStaticBinaries(t *testing.T) {
	e := newContainerEnv(t)
	bin := t.TempDir()
	if err := os.Chmod(bin, 0o755); err != nil { // as install leaves it
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "hello"), []byte("#!/bin/sh\necho static ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The ECS volume's root is traversable by every uid (the agent's runs
	// the runner binary in it); bubblewrap would make it 0700.
	e.wrap = []string{"--perms", "0755", "--dir", "/gauntlet", "--ro-bind", bin, "/gauntlet/bin"}
	e.flags = []string{"--static-bin-dir", "/gauntlet/bin"}
	agent := `/opt/gauntlet/bin/hello > /logs/agent/hello.txt
if ln -sfn /tmp /opt/gauntlet/bin 2>/dev/null || touch /opt/gauntlet/bin/x 2>/dev/null; then echo swapped >> /logs/agent/hello.txt; fi
echo gauntlet > /app/answer.txt`
	r := e.run(hookTask(t), "command", agent)
	if got := r.artifact(t, "agent/hello.txt"); got != "static ok\n" {
		t.Errorf("agent/hello.txt = %q, want the static binary's output and no swap; agent stderr:\n%s", got, r.artifact(t, "agent/stderr.txt"))
	}
	if got := rewardOf(t, r.result); got != 1 || r.result.ExceptionInfo != nil {
		t.Errorf("reward %v, exception %+v; want 1 and none", got, r.result.ExceptionInfo)
	}
}

// TestContainerIsolationLimitsTheAgentsProcesses: no cgroup can be made in
// a Fargate task, so the pids limit is the agent uid's RLIMIT_NPROC: a fork
// loop hits EAGAIN at the limit, the agent fails (its failure, not the
// platform's), and the runner's log says the limit was applied.
func TestContainerIsolationLimitsTheAgentsProcesses(t *testing.T) {
	e := newContainerEnv(t)
	e.flags = []string{"--pids-limit", "32"}
	forkLoop := `ulimit -u > /logs/agent/nproc.txt
perl -e 'for (1..200) { my $p = fork(); if (!defined $p) { print "fork $_: $!\n"; exit 3 } if ($p == 0) { sleep 60; exit 0 } } print "forked 200\n"' > /logs/agent/forks.txt 2>&1`
	r := e.run(hookTask(t), "command", forkLoop)
	if got := r.artifact(t, "agent/nproc.txt"); got != "32\n" {
		t.Errorf("the agent's ulimit -u = %q, want 32", got)
	}
	forks := r.artifact(t, "agent/forks.txt")
	if !strings.Contains(forks, "Resource temporarily unavailable") {
		t.Errorf("fork loop said %q, want it stopped by EAGAIN", forks)
	}
	if ex := r.result.ExceptionInfo; ex == nil || ex.ExceptionType != harbor.ExceptionAgentExit || !strings.Contains(ex.ExceptionMessage, "code 3") {
		t.Errorf("exception = %+v, want the agent's exit code 3", ex)
	}
	if log := r.artifact(t, "runner.log"); !strings.Contains(log, "pids limit 32 applied (RLIMIT_NPROC of the agent uid)") {
		t.Errorf("runner.log does not note the pids limit:\n%s", log)
	}
}

// TestContainerIsolationRecordsTheContainersOOMKills: with no cgroup of
// its own, the runner counts the container's own OOM kills (cgroup v2
// memory.events at the container's root) across the agent phase. The
// stand-in container's memory.events is a file the agent may write, so the
// agent plays the kernel: an OOM kill during its phase is the agent's
// AgentOutOfMemoryError, as under bubblewrap, not a plain exit 137.
func TestContainerIsolationRecordsTheContainersOOMKills(t *testing.T) {
	e := newContainerEnv(t)
	cg := t.TempDir()
	if err := os.Chmod(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(cg, "memory.events")
	if err := os.WriteFile(events, []byte("low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(events, 0o666); err != nil {
		t.Fatal(err)
	}
	// bubblewrap would make /sys and /sys/fs 0700, out of the agent's reach.
	e.wrap = []string{"--perms", "0755", "--dir", "/sys", "--perms", "0755", "--dir", "/sys/fs", "--bind", cg, "/sys/fs/cgroup"}
	r := e.run(hookTask(t), "command", `printf 'low 0\nhigh 0\nmax 9\noom 3\noom_kill 3\n' > /sys/fs/cgroup/memory.events; exit 137`)
	ex := r.result.ExceptionInfo
	if ex == nil || ex.ExceptionType != harbor.ExceptionAgentOOM || !strings.Contains(ex.ExceptionMessage, "killed 1 of its processes") ||
		!strings.Contains(ex.ExceptionMessage, "the container's memory") {
		t.Errorf("exception = %+v, want AgentOutOfMemoryError for the 1 kill during the agent phase", ex)
	}
}

func TestExecPhaseHelper(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantBnd func(uint64) bool
	}{
		{name: "agent", args: []string{"exec-phase", "--"}, wantBnd: func(b uint64) bool { return b&(1<<19) != 0 }},
		{name: "root phase drops ptrace and admin", args: []string{"exec-phase", "--drop-caps", "--"},
			wantBnd: func(b uint64) bool { return b&(1<<16|1<<17|1<<19|1<<21) == 0 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(runnerBinary, append(tc.args, "bash", "-c", "grep -E '^(NoNewPrivs|CapBnd)' /proc/self/status")...)
			cmd.Env = []string{"PATH=" + sandboxPath}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("exec-phase: %v: %s", err, out)
			}
			got := map[string]string{}
			for _, line := range strings.Split(string(out), "\n") {
				if k, v, ok := strings.Cut(line, ":"); ok {
					got[k] = strings.TrimSpace(v)
				}
			}
			if got["NoNewPrivs"] != "1" {
				t.Errorf("NoNewPrivs = %q, want 1", got["NoNewPrivs"])
			}
			var bnd uint64
			if _, err := fmt.Sscanf(got["CapBnd"], "%x", &bnd); err != nil || !tc.wantBnd(bnd) {
				t.Errorf("CapBnd = %q (%v): unexpected bounding set", got["CapBnd"], err)
			}
		})
	}
}
